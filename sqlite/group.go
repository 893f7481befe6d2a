package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/amsdev/ams/internal/batch"
	"github.com/amsdev/ams/sqlstore"
)

// Group commit. SQLite has one writer: every write transaction waits for
// the write connection, and each pays a BEGIN, a COMMIT and the WAL frames
// of the pages it touched, though most touch the same few pages (the
// tables' last leaves and their indexes). The committer gathers the
// transactions that arrive while one commits and runs them together: one
// BEGIN IMMEDIATE, each caller's function inside its own SAVEPOINT (so
// that an error undoes that caller's writes only), one COMMIT. Every
// caller is answered after that COMMIT, with its own function's error, or
// with the commit's error: nothing is acknowledged before it is durable,
// and a process killed before the COMMIT loses only unacknowledged work.
//
// A lone transaction is not delayed: the committer starts as soon as one
// arrives, and gathers only what queued up meanwhile.

// maxGroup bounds the transactions committed together, so that one
// caller's wait stays short when many arrive.
const maxGroup = 128

// txReq is one caller's transaction waiting for the committer.
type txReq struct {
	ctx context.Context
	fn  func(sqlstore.Conn) error
}

// txDone is what the committer answers a caller.
type txDone struct {
	err   error
	panic any // a panic of the caller's function, raised again in the caller
}

// committer runs the write transactions of one database in groups.
type committer struct {
	write *sql.DB
	stmts *writeStmts
	group batch.Batcher[txReq, txDone]

	// Counters: transactions committed, and the COMMITs that did it.
	txs, commits atomic.Int64
}

func newCommitter(write *sql.DB, stmts *writeStmts) *committer {
	c := &committer{write: write, stmts: stmts}
	c.group = batch.Batcher[txReq, txDone]{Max: maxGroup, Run: c.commit}
	return c
}

// GroupCommits returns how many write transactions have committed and in
// how many COMMITs (fewer when group commit gathered them).
func (db *DB) GroupCommits() (txs, commits int64) {
	return db.group.txs.Load(), db.group.commits.Load()
}

// run runs fn in a transaction of a group, and returns when the group has
// committed (or fn failed).
func (c *committer) run(ctx context.Context, fn func(sqlstore.Conn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := c.group.Do(txReq{ctx: ctx, fn: fn})
	if d.panic != nil {
		panic(d.panic)
	}
	return d.err
}

// commit runs a group in one transaction and answers its callers.
func (c *committer) commit(group []txReq) []txDone {
	ctx := context.Background()
	results := make([]txDone, len(group))
	fail := func(err error) {
		for i := range results {
			if results[i].err == nil && results[i].panic == nil {
				results[i].err = err
			}
		}
	}
	if len(group) == 1 { // alone: no savepoint needed
		r := group[0]
		results[0] = c.single(r)
		return results
	}
	tx, err := c.write.BeginTx(ctx, nil)
	if err != nil {
		fail(fmt.Errorf("begin: %w", err))
		return results
	}
	defer c.stmts.prepareNoted(ctx)
	committed := false
	defer func() {
		if !committed {
			tx.Rollback()
		}
	}()
	ran := 0 // functions whose writes are part of the transaction
	// The savepoints run as the statements do, prepared once on the write
	// connection (a string run through tx would be prepared, run and
	// finalized each time: two of them per caller).
	txc := conn{db: tx, stmts: c.stmts, tx: tx}
	for i, r := range group {
		if err := r.ctx.Err(); err != nil {
			results[i].err = err
			continue
		}
		if _, err := txc.Exec(ctx, "SAVEPOINT grp"); err != nil {
			fail(fmt.Errorf("savepoint: %w", err))
			return results
		}
		results[i] = call(r.fn, groupConn{txc})
		if results[i].err != nil || results[i].panic != nil {
			// Undo this caller's writes only. If SQLite cannot (the error
			// ended the whole transaction), the group fails.
			if _, err := txc.Exec(ctx, "ROLLBACK TO grp"); err != nil {
				fail(fmt.Errorf("roll back a failed transaction of a group: %w", err))
				return results
			}
		} else {
			ran++
		}
		if _, err := txc.Exec(ctx, "RELEASE grp"); err != nil {
			fail(fmt.Errorf("release savepoint: %w", err))
			return results
		}
	}
	if ran == 0 {
		return results
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("commit: %w", err))
		return results
	}
	committed = true
	c.txs.Add(int64(ran))
	c.commits.Add(1)
	return results
}

// single runs one caller's function in a transaction of its own.
func (c *committer) single(r txReq) txDone {
	tx, err := c.write.BeginTx(r.ctx, nil)
	if err != nil {
		return txDone{err: fmt.Errorf("begin: %w", err)}
	}
	defer c.stmts.prepareNoted(context.WithoutCancel(r.ctx))
	defer tx.Rollback()
	d := call(r.fn, conn{db: tx, stmts: c.stmts, tx: tx})
	if d.err != nil || d.panic != nil {
		return d
	}
	if err := tx.Commit(); err != nil {
		return txDone{err: fmt.Errorf("commit: %w", err)}
	}
	c.txs.Add(1)
	c.commits.Add(1)
	return txDone{}
}

// groupConn runs a caller's statements in a group's transaction without
// its context's cancellation: SQLite answers a cancelled statement with
// sqlite3_interrupt, which rolls back the whole transaction, the other
// callers' work included. A caller whose context ends while its function
// runs in a group has its statements run to their end.
type groupConn struct{ c conn }

func (g groupConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return g.c.Exec(context.WithoutCancel(ctx), query, args...)
}

func (g groupConn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return g.c.Query(context.WithoutCancel(ctx), query, args...)
}

func (g groupConn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return g.c.QueryRow(context.WithoutCancel(ctx), query, args...)
}

func (g groupConn) Batch(ctx context.Context, stmts []sqlstore.Stmt) ([]int64, int, error) {
	return g.c.Batch(context.WithoutCancel(ctx), stmts)
}

// call runs fn, catching a panic so that the committer survives it and
// the caller raises it.
func call(fn func(sqlstore.Conn) error, c sqlstore.Conn) (d txDone) {
	defer func() {
		if p := recover(); p != nil {
			d = txDone{panic: p, err: errPanicked}
		}
	}()
	return txDone{err: fn(c)}
}

var errPanicked = errors.New("sqlite: the transaction's function panicked")
