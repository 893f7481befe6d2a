package sqlite

import (
	"context"
	"database/sql"
	"os"
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
// a burst gave it (SQLite reuses it from its beginning): a
// journal_size_limit would give the space back, but its truncation of
// hundreds of MiB, in the writer's COMMIT, was itself a stall of 200–300
// ms. So the checkpointer gives it back when no one is writing: once the
// WAL has had no new frame for quietTicks checkpoints and its file is
// larger than truncateOver, it runs a TRUNCATE checkpoint, which copies
// what is left, starts the WAL over and truncates its file to nothing.
// It does not wait: its connection has no busy timeout, so should a
// writer or a reader still in the WAL be there, it answers busy at once
// and the next quiet second tries again. A write that arrives during the
// truncation waits for it, once, on a store that was quiet.

// checkpointEvery is how often the checkpointer copies the WAL's new
// frames into the database.
const checkpointEvery = 100 * time.Millisecond

// autoCheckpointPages is the write connection's wal_autocheckpoint:
// 250,000 pages (about 1 GiB of WAL) instead of SQLite's 1,000, a
// safety net above the bursts measured (146,000 pages).
const autoCheckpointPages = 250000

// truncateOver is the size of the WAL's file above which a quiet store
// truncates it (64 MiB: 16,000 pages, several times the WAL of a steady
// load).
const truncateOver = 64 << 20

// quietTicks is how many checkpoints in a row must find no new frame in
// the WAL before it is truncated: a second at checkpointEvery.
const quietTicks = 10

// checkpointer runs PASSIVE checkpoints on its own connection.
type checkpointer struct {
	db *sql.DB
	// wal is the WAL file's path; "" truncates nothing.
	wal      string
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	// full counts the checkpoints that found frames in the WAL and copied
	// all of them.
	full atomic.Int64
	// truncated counts the WAL files truncated on a quiet store; over
	// is the size above which it truncates them (truncateOver; tests
	// lower it).
	truncated, over atomic.Int64
}

// startCheckpointer checkpoints db's WAL, whose file is wal, every
// every. db's connection must have no busy timeout (see above).
func startCheckpointer(db *sql.DB, wal string, every time.Duration) *checkpointer {
	c := &checkpointer{db: db, wal: wal, stop: make(chan struct{}), done: make(chan struct{})}
	c.over.Store(truncateOver)
	go c.loop(every)
	return c
}

func (c *checkpointer) loop(every time.Duration) {
	defer close(c.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	last, quiet := -1, 0
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
		if log == last && done == log {
			quiet++
		} else {
			quiet = 0
		}
		last = log
		if quiet >= quietTicks {
			quiet = 0
			c.truncateLarge()
		}
	}
}

// truncateLarge truncates the WAL's file when it is larger than
// truncateOver, unless a writer or a reader is in the way.
func (c *checkpointer) truncateLarge() {
	if c.wal == "" {
		return
	}
	if st, err := os.Stat(c.wal); err != nil || st.Size() <= c.over.Load() {
		return
	}
	var busy, log, done int
	if err := c.db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &done); err == nil && busy == 0 {
		c.truncated.Add(1)
	}
}

// close stops the checkpointer and closes its connection; a second call
// (DB.Close twice) does nothing more.
func (c *checkpointer) close() error {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
	return c.db.Close()
}
