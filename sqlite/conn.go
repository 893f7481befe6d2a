package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/amsdev/ams/sqlstore"
)

// dialect is SQLite's: one writer at a time, so no row locks.
var dialect = sqlstore.Dialect{
	Name:     "sqlite",
	RowLocks: false,
	Schema:   schema,
	IsUnique: func(err error) bool { return strings.Contains(err.Error(), "UNIQUE constraint failed") },
}

// execer is what *sql.DB, *sql.Tx and *sql.Stmt-backed readers share.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// conn adapts a database/sql pool or transaction to sqlstore.Conn.
type conn struct{ db execer }

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := c.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return c.db.QueryRowContext(ctx, query, args...)
}

// Batch runs the statements one after the other: SQLite is in-process,
// there is no round trip to save.
func (c conn) Batch(ctx context.Context, stmts []sqlstore.Stmt) ([]int64, int, error) {
	n := make([]int64, len(stmts))
	for i, s := range stmts {
		k, err := c.Exec(ctx, s.SQL, s.Args...)
		if err != nil {
			return nil, i, err
		}
		n[i] = k
	}
	return n, 0, nil
}

// sqlRows gives *sql.Rows the Close without a result that pgx has.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// reader runs read queries on a pool through prepared statements kept for
// the life of the pool: parsing a statement costs more than running one of
// these indexed lookups. database/sql prepares each on a connection the
// first time that connection runs it.
type reader struct {
	db    *sql.DB
	stmts sync.Map // query text -> *sql.Stmt
}

func (r *reader) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := r.stmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := r.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := r.stmts.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

func (r *reader) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return 0, fmt.Errorf("sqlite: write on the read-only pool: %.40s", query)
}

func (r *reader) Batch(ctx context.Context, stmts []sqlstore.Stmt) ([]int64, int, error) {
	return nil, 0, fmt.Errorf("sqlite: write on the read-only pool")
}

func (r *reader) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	s, err := r.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (r *reader) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	s, err := r.stmt(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return s.QueryRowContext(ctx, args...)
}

func (r *reader) close() error {
	r.stmts.Range(func(_, s any) bool { s.(*sql.Stmt).Close(); return true })
	return r.db.Close()
}

// errRow is a Row whose query failed to run.
type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }

// engine gives sqlstore the read pool, the write connection, and write
// transactions on it (BEGIN IMMEDIATE, from the DSN's _txlock).
type engine struct {
	read  *reader
	write *sql.DB
}

func (e *engine) Reader() sqlstore.Conn { return e.read }
func (e *engine) Writer() sqlstore.Conn { return conn{e.write} }

func (e *engine) InTx(ctx context.Context, fn func(sqlstore.Conn) error) error {
	tx, err := e.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := fn(conn{tx}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
