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
// automatic checkpoint stays as a safety net at a much higher threshold
// (autoCheckpointPages), should this one stop.
//
// The WAL starts over from its beginning when a write transaction begins
// with every frame copied and no reader still in the WAL; under a steady
// load that happens every second or so and the WAL stays a few thousand
// pages. A burst of writes (the purge of a day's history at a start:
// about 30,000 pages a second on the growth benchmark's 1M-row store)
// leaves no such moment while it lasts: the WAL grew to 146,000 pages in
// 6 s and started over once the burst had passed. With the automatic
// checkpoint at 10,000 pages the writer checkpointed about once a second
// during such a burst, a COMMIT of 100–160 ms each (the database file's
// sync, with the disk busy), which every POST and delivery queued behind
// (docs/benchmarks.md, issue 33): the checkpointer had copied the frames
// already. So the automatic checkpoint's threshold is far above a burst:
// the burst's WAL grows, the checkpointer copies it as it comes, and the
// WAL starts over once the burst has passed. The WAL's file keeps the size
// a burst gave it (SQLite reuses it from its beginning) until the store
// is closed, which checkpoints and deletes it: a journal_size_limit would
// give the space back, but its truncation of hundreds of MiB, in the
// writer's COMMIT, was itself a stall of 200–300 ms.

// checkpointEvery is how often the checkpointer copies the WAL's new
// frames into the database.
const checkpointEvery = 100 * time.Millisecond

// autoCheckpointPages is the write connection's wal_autocheckpoint:
// 250,000 pages (about 1 GiB of WAL) instead of SQLite's 1,000, a
// safety net above the bursts measured (146,000 pages).
const autoCheckpointPages = 250000

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
