package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/amsdev/ams/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// lazyTx is a transaction whose BEGIN travels with its first statement,
// in one pipelined round trip, instead of costing a round trip of its own
// as pgx's Begin does: a turn (BEGIN, its batch of inserts, COMMIT) takes
// two round trips instead of three, and so does every short transaction.
// A transaction that runs no statement sends nothing, not even COMMIT.
type lazyTx struct {
	c         *pgx.Conn
	begun     bool
	committed bool // by BatchCommit
}

var (
	_ sqlstore.Conn           = (*lazyTx)(nil)
	_ sqlstore.BatchCommitter = (*lazyTx)(nil)
	_ sqlstore.QueryCommitter = (*lazyTx)(nil)
)

// begin is what starts every transaction: BEGIN, then the claims'
// advisory lock shared (the lock migration 0032's job triggers take).
// Every transaction takes it before any row lock, so none waits for it
// holding a row: a claim (which takes it exclusive, and waits for the
// transactions holding it) then never waits, through a transaction
// queued behind it for the lock, on a row that transaction holds
// (a three-way deadlock, PostgreSQL's 40P01, which TestOrderedDelivery
// met in CI when the lock came only with a transaction's first queued
// job). It costs no round trip: it travels with BEGIN. A transaction
// begun with a context of sqlstore.WithoutClaimsLock (a record of
// successes, which queues no job and never asks for the lock) begins
// with BEGIN alone: claims need not wait for it.
var begin = []string{"BEGIN", claimShared}

// beginFor is what starts a transaction begun with ctx: begin, or BEGIN
// alone for a context of sqlstore.WithoutClaimsLock.
func beginFor(ctx context.Context) []string {
	if !sqlstore.NeedsClaimsLock(ctx) {
		return begin[:1]
	}
	return begin
}

// first sends begin and query in one batch and returns the batch, whose
// begin results have been read, positioned at query's result.
func (t *lazyTx) first(ctx context.Context, query string, args ...any) (pgx.BatchResults, error) {
	return t.send(ctx, func(b *pgx.Batch) { b.Queue(query, args...) })
}

// send sends the statements queue queues in one batch, after begin if the
// transaction has not begun, and returns the batch, whose begin results
// have been read, positioned at the first of queue's.
func (t *lazyTx) send(ctx context.Context, queue func(*pgx.Batch)) (pgx.BatchResults, error) {
	var start []string
	if !t.begun {
		start = beginFor(ctx)
	}
	b := &pgx.Batch{}
	for _, s := range start {
		b.Queue(s)
	}
	queue(b)
	br := t.c.SendBatch(ctx, b)
	t.begun = true
	for range start {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	return br, nil
}

func (t *lazyTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if t.begun {
		tag, err := t.c.Exec(ctx, query, args...)
		return tag.RowsAffected(), err
	}
	br, err := t.first(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag.RowsAffected(), err
}

func (t *lazyTx) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if t.begun {
		return t.c.Query(ctx, query, args...)
	}
	br, err := t.first(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (t *lazyTx) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	if t.begun {
		return t.c.QueryRow(ctx, query, args...)
	}
	br, err := t.first(ctx, query, args...)
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

// Batch sends the statements in one round trip, with begin first if the
// transaction has not begun.
func (t *lazyTx) Batch(ctx context.Context, stmts []sqlstore.Stmt) ([]int64, int, error) {
	skip := 0
	if !t.begun {
		start := beginFor(ctx)
		skip = len(start)
		head := make([]sqlstore.Stmt, 0, len(start)+len(stmts))
		for _, s := range start {
			head = append(head, sqlstore.Stmt{Op: "begin", SQL: s})
		}
		stmts = append(head, stmts...)
		t.begun = true
	}
	n, failed, err := conn{q: t.c}.Batch(ctx, stmts)
	if err != nil {
		return nil, max(failed-skip, 0), err
	}
	return n[skip:], 0, nil
}

// BatchCommit sends stmts and COMMIT in one round trip (with begin first
// if the transaction has not begun: a whole transaction in one). A
// statement that fails aborts the transaction, and PostgreSQL skips the
// rest of the pipeline, COMMIT included: the transaction is left to
// rollback, as after a failed Batch.
func (t *lazyTx) BatchCommit(ctx context.Context, stmts []sqlstore.Stmt) ([]int64, int, error) {
	all := append(stmts[:len(stmts):len(stmts)], sqlstore.Stmt{Op: "commit", SQL: "COMMIT"})
	n, failed, err := t.Batch(ctx, all)
	if err != nil {
		return nil, failed, err
	}
	t.committed = true
	return n[:len(stmts)], 0, nil
}

// QueryCommit sends query and COMMIT in one round trip (with begin first
// if the transaction has not begun) and hands query's rows to scan
// before it reads the COMMIT's answer. A query that fails aborts the
// transaction and PostgreSQL skips the COMMIT, as after BatchCommit.
func (t *lazyTx) QueryCommit(ctx context.Context, query string, args []any, scan func(sqlstore.Rows) error) error {
	br, err := t.send(ctx, func(b *pgx.Batch) {
		b.Queue(query, args...)
		b.Queue("COMMIT")
	})
	if err != nil {
		return err
	}
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return err
	}
	scanErr := scan(rows)
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	tag, err := br.Exec()
	if err := committed(tag, err); err != nil {
		return err
	}
	t.committed = true
	return scanErr
}

// committed is the answer to a COMMIT: its error, or
// pgx.ErrTxCommitRollback where PostgreSQL answered ROLLBACK (the
// transaction had failed).
func committed(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// commit ends the transaction: COMMIT if it began. PostgreSQL answers
// COMMIT of a transaction that failed with ROLLBACK, which is an error.
func (t *lazyTx) commit(ctx context.Context) error {
	if !t.begun || t.committed {
		return nil
	}
	return committed(t.c.Exec(ctx, "COMMIT"))
}

// rollback ends a transaction that began and did not commit.
func (t *lazyTx) rollback(ctx context.Context) {
	if t.begun && !t.committed && t.c.PgConn().TxStatus() != 'I' {
		t.c.Exec(ctx, "ROLLBACK")
	}
}

// batchRows closes its batch with the rows.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}

// batchRow closes its batch once scanned.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil && cerr != nil && !errors.Is(cerr, pgx.ErrNoRows) {
		err = cerr
	}
	return err
}

// errRow is a Row whose query could not be sent.
type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }

// inLazyTx runs fn in a lazyTx on a connection of the pool.
func (e *engine) inLazyTx(ctx context.Context, fn func(sqlstore.Conn) error) error {
	pc, err := e.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	// A connection left inside a transaction (an error, a cancelled
	// context) is not reused: the pool destroys it on Release.
	defer pc.Release()
	t := &lazyTx{c: pc.Conn()}
	defer t.rollback(context.WithoutCancel(ctx))
	if err := fn(t); err != nil {
		return err
	}
	if err := t.commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
