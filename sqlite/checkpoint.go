package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// WAL checkpoints off the writer's path. SQLite's automatic checkpoint
// runs inside the COMMIT that takes the WAL over its threshold, on the one
// write connection that every write waits for: about a tenth of a POST's
// CPU under load. Instead a connection of its own runs a PASSIVE
// checkpoint every checkpointEvery (PASSIVE never waits for, nor blocks,
// readers or the writer), on another core, while the writer goes on. The
// automatic checkpoint stays as a safety net at a higher threshold
// (autoCheckpointPages), should this one fall behind.

// checkpointEvery is how often the checkpointer copies the WAL's new
// frames into the database.
const checkpointEvery = 100 * time.Millisecond

// autoCheckpointPages is the write connection's wal_autocheckpoint: 10,000
// pages (about 40 MiB of WAL) instead of SQLite's 1,000.
const autoCheckpointPages = 10000

// checkpointer runs PASSIVE checkpoints on its own connection.
type checkpointer struct {
	db       *sql.DB
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	// full counts the checkpoints that found frames in the WAL and copied
	// all of them.
	full atomic.Int64
}

func startCheckpointer(db *sql.DB, every time.Duration) *checkpointer {
	c := &checkpointer{db: db, stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop(every)
	return c
}

func (c *checkpointer) loop(every time.Duration) {
	defer close(c.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		// busy is 1 only for a blocking mode; log is the WAL's frames,
		// done those copied (all of them once readers have moved on).
		var busy, log, done int
		if err := c.db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
			continue // the next tick tries again; the automatic checkpoint is the safety net
		}
		if log > 0 && done == log {
			c.full.Add(1)
		}
	}
}

// close stops the checkpointer and closes its connection; a second call
// (DB.Close twice) does nothing more.
func (c *checkpointer) close() error {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
	return c.db.Close()
}
