package postgres

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/amsdev/ams/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestLazyTx: the first statement of a transaction carries its BEGIN;
// every kind of first statement (Exec, Query, QueryRow, Batch) runs in
// the transaction, an error of fn rolls everything back, a failed
// statement makes COMMIT an error, a transaction without statements
// sends nothing, and no connection goes back to the pool inside a
// transaction.
func TestLazyTx(t *testing.T) {
	url := os.Getenv("AMS_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("AMS_TEST_DATABASE_URL is not set: PostgreSQL tests skipped")
	}
	ctx := context.Background()
	// A temporary table lives in one session: the pool has one
	// connection, which makes it.
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS lazy (k TEXT PRIMARY KEY)`)
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	e := &engine{pool: pool}
	count := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM lazy`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	firsts := map[string]func(c sqlstore.Conn) error{
		"exec": func(c sqlstore.Conn) error { _, err := c.Exec(ctx, `INSERT INTO lazy VALUES ('exec')`); return err },
		"query": func(c sqlstore.Conn) error {
			rows, err := c.Query(ctx, `INSERT INTO lazy VALUES ('query') RETURNING k`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
			}
			return rows.Err()
		},
		"queryrow": func(c sqlstore.Conn) error {
			var k string
			return c.QueryRow(ctx, `INSERT INTO lazy VALUES ('queryrow') RETURNING k`).Scan(&k)
		},
		"batch": func(c sqlstore.Conn) error {
			_, _, err := c.Batch(ctx, []sqlstore.Stmt{{SQL: `INSERT INTO lazy VALUES ('batch')`}})
			return err
		},
	}
	errUndo := errors.New("undo")
	for name, first := range firsts {
		// In a transaction: rolled back with fn's error.
		before := count()
		err := e.InTx(ctx, func(c sqlstore.Conn) error {
			if err := first(c); err != nil {
				return err
			}
			return errUndo
		})
		if !errors.Is(err, errUndo) || count() != before {
			t.Fatalf("%s first, then an error: %v, %d rows (want %d)", name, err, count(), before)
		}
		// Committed otherwise.
		if err := e.InTx(ctx, first); err != nil || count() != before+1 {
			t.Fatalf("%s first: %v, %d rows", name, err, count())
		}
	}
	// A failed statement whose error fn ignores: COMMIT answers ROLLBACK,
	// an error, and nothing is stored.
	before := count()
	err = e.InTx(ctx, func(c sqlstore.Conn) error {
		c.Exec(ctx, `INSERT INTO lazy VALUES ('kept?')`)
		c.Exec(ctx, `INSERT INTO lazy VALUES ('exec')`) // duplicate key
		return nil
	})
	if !errors.Is(err, pgx.ErrTxCommitRollback) || count() != before {
		t.Fatalf("commit after a failed statement: %v, %d rows", err, count())
	}
	// Nothing to do: no statement at all.
	if err := e.InTx(ctx, func(sqlstore.Conn) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// The pool's one connection is usable, outside any transaction.
	pc, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Release()
	if st := pc.Conn().PgConn().TxStatus(); st != 'I' {
		t.Fatalf("connection after the transactions: status %q, want idle", st)
	}
	if _, err := pc.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
}

// TestTransactionsTakeClaimLockFirst: every transaction, whatever its
// first statement, and every implicit transaction of several statements
// holds the claims' advisory lock shared when its first statement runs,
// before that statement takes any row lock: the lock is first in every
// transaction's lock order, so a transaction never waits for it while
// holding a row that a claim (holding it exclusive) or a transaction
// ahead of it waits for (the three-way deadlock with a waiting claim).
// A single statement outside a transaction takes none, nor does a
// transaction begun with a context of sqlstore.WithoutClaimsLock.
func TestTransactionsTakeClaimLockFirst(t *testing.T) {
	url := os.Getenv("AMS_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("AMS_TEST_DATABASE_URL is not set: PostgreSQL tests skipped")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	e := &engine{pool: pool}
	const held = `SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND mode = 'ShareLock' AND granted`
	scan := func(ctx context.Context, c sqlstore.Conn) (int, error) {
		var n int
		err := c.QueryRow(ctx, held).Scan(&n)
		return n, err
	}
	firsts := map[string]func(ctx context.Context, c sqlstore.Conn) (int, error){
		"exec": func(ctx context.Context, c sqlstore.Conn) (int, error) {
			if _, err := c.Exec(ctx, `SELECT 1`); err != nil {
				return 0, err
			}
			return scan(ctx, c)
		},
		"query": func(ctx context.Context, c sqlstore.Conn) (int, error) {
			rows, err := c.Query(ctx, held)
			if err != nil {
				return 0, err
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				if err := rows.Scan(&n); err != nil {
					return 0, err
				}
			}
			return n, rows.Err()
		},
		"queryrow": scan,
		"batch": func(ctx context.Context, c sqlstore.Conn) (int, error) {
			if _, _, err := c.Batch(ctx, []sqlstore.Stmt{{SQL: `SELECT 1`}}); err != nil {
				return 0, err
			}
			return scan(ctx, c)
		},
	}
	for name, first := range firsts {
		var n int
		if err := e.InTx(ctx, func(c sqlstore.Conn) (err error) { n, err = first(ctx, c); return err }); err != nil {
			t.Fatal(name, err)
		}
		if n != 1 {
			t.Errorf("a transaction beginning with %s holds %d shared advisory locks, want the claims' lock", name, n)
		}
		// Begun with a context of WithoutClaimsLock (a record of
		// successes), it takes none.
		unlocked := sqlstore.WithoutClaimsLock(ctx)
		if err := e.InTx(unlocked, func(c sqlstore.Conn) (err error) { n, err = first(unlocked, c); return err }); err != nil {
			t.Fatal(name, err)
		}
		if n != 0 {
			t.Errorf("a transaction without the claims' lock beginning with %s holds %d shared advisory locks, want none", name, n)
		}
	}
	// An implicit transaction: a batch of two statements on the pool,
	// the second of which reads the locks its transaction holds.
	var n int
	probe := sqlstore.Stmt{SQL: `DO $$ BEGIN IF (` + held + `) <> 1 THEN RAISE EXCEPTION 'no claims lock'; END IF; END $$`}
	if _, _, err := e.Writer().Batch(ctx, []sqlstore.Stmt{{SQL: `SELECT 1`}, probe}); err != nil {
		t.Errorf("a batch of statements on the pool: %v", err)
	}
	if err := e.Reader().QueryRow(ctx, held).Scan(&n); err != nil || n != 0 {
		t.Errorf("a single statement outside a transaction holds %d shared advisory locks (%v), want none", n, err)
	}
}
