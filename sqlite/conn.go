package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/amsdev/ams/sqlstore"
	"modernc.org/sqlite"
)

// dialect is SQLite's: one writer at a time, so no row locks.
var dialect = sqlstore.Dialect{
	Name:        "sqlite",
	EventField:  func(name string) string { return `json_extract(data, '$.` + name + `')` },
	EventNulled: func(name string) string { return `json_set(data, '$.` + name + `', json('null'))` },
	MetadataHolds: func(meta, filter string) string {
		return `NOT EXISTS (SELECT 1 FROM json_each(` + filter + `) f WHERE f.value IS NOT (SELECT m.value FROM json_each(` + meta + `) m WHERE m.key = f.key))`
	},
	RowLocks: false,
	Schema:   schema,
	IsUnique: func(err error) bool { return strings.Contains(err.Error(), "UNIQUE constraint failed") },
	Unavailable: func(err error) bool {
		switch sqliteCode(err) {
		case codeFull, codeIOErr, codeCantOpen, codeNoMem:
			return true
		}
		return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EIO)
	},
	Timeout: func(err error) bool {
		c := sqliteCode(err)
		return c == codeBusy || c == codeInterrupt
	},
}

// SQLite's primary result codes that the dialect tells apart.
const (
	codeBusy      = 5  // SQLITE_BUSY: the busy timeout ran out
	codeNoMem     = 7  // SQLITE_NOMEM
	codeInterrupt = 9  // SQLITE_INTERRUPT: a context ended the statement
	codeIOErr     = 10 // SQLITE_IOERR (and its extended codes)
	codeFull      = 13 // SQLITE_FULL: the disk (or max_page_count) is full
	codeCantOpen  = 14 // SQLITE_CANTOPEN
)

// sqliteCode returns the primary result code of err, 0 if it is none of
// the driver's.
func sqliteCode(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code() & 0xff
	}
	return 0
}

// execer is what *sql.DB, *sql.Tx and *sql.Stmt-backed readers share.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// conn adapts a database/sql pool or transaction to sqlstore.Conn. With
// stmts (the write connection's), its statements run prepared once:
// parsing costs SQLite more than running most of these statements.
type conn struct {
	db    execer
	stmts *writeStmts // nil: prepare each time
	tx    *sql.Tx     // set when db is a transaction of the write connection
}

// on returns what runs query: its cached statement (in tx if set), or
// c.db.
func (c conn) on(ctx context.Context, query string) execer {
	if c.stmts == nil {
		return c.db
	}
	s := c.stmts.get(ctx, query, c.tx != nil)
	if s == nil {
		return c.db
	}
	if c.tx != nil {
		// Reuses the statement prepared on the write connection, which is
		// the transaction's (database/sql keeps it per connection).
		s = c.tx.StmtContext(ctx, s)
	}
	return stmtExecer{s}
}

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.on(ctx, query).ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := c.on(ctx, query).QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return c.on(ctx, query).QueryRowContext(ctx, query, args...)
}

// stmtExecer runs a prepared statement as an execer (the query text is
// its own).
type stmtExecer struct{ s *sql.Stmt }

func (e stmtExecer) ExecContext(ctx context.Context, _ string, args ...any) (sql.Result, error) {
	return e.s.ExecContext(ctx, args...)
}

func (e stmtExecer) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return e.s.QueryContext(ctx, args...)
}

func (e stmtExecer) QueryRowContext(ctx context.Context, _ string, args ...any) *sql.Row {
	return e.s.QueryRowContext(ctx, args...)
}

// maxWriteStmts bounds the write connection's cached statements; the few
// statements built with a variable shape (a webhook's subscriptions) stay
// well under it, and beyond it statements are prepared each time.
const maxWriteStmts = 512

// writeStmts caches the write connection's prepared statements.
type writeStmts struct {
	db    *sql.DB
	mu    sync.Mutex
	m     map[string]*sql.Stmt
	noted map[string]bool // seen in a transaction, to prepare after it
}

// get returns query's statement, or nil when it has none (yet): a
// statement is prepared on the write connection, which a transaction
// holds (it is the pool's only one), so one first seen in a transaction
// is noted and prepared after it (prepareNoted); outside a transaction it
// is prepared at once. Nil also when the cache is full or the statement
// does not prepare (running it then reports the error).
func (w *writeStmts) get(ctx context.Context, query string, inTx bool) *sql.Stmt {
	w.mu.Lock()
	s, ok := w.m[query]
	full := len(w.m)+len(w.noted) >= maxWriteStmts
	if !ok && !full && inTx {
		if w.noted == nil {
			w.noted = map[string]bool{}
		}
		w.noted[query] = true
	}
	w.mu.Unlock()
	if ok || full || inTx {
		return s
	}
	return w.prepare(ctx, query)
}

func (w *writeStmts) prepare(ctx context.Context, query string) *sql.Stmt {
	s, err := w.db.PrepareContext(ctx, positional(query))
	if err != nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := w.m[query]; ok || w.m == nil {
		s.Close()
		return prev
	}
	w.m[query] = s
	return s
}

// prepareNoted prepares the statements that transactions ran unprepared;
// called when the write connection is free again.
func (w *writeStmts) prepareNoted(ctx context.Context) {
	w.mu.Lock()
	noted := w.noted
	w.noted = nil
	w.mu.Unlock()
	for q := range noted {
		w.prepare(ctx, q)
	}
}

func (w *writeStmts) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.m {
		s.Close()
	}
	w.m = nil
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
	stmts sync.Map   // query text -> *sql.Stmt
	rows  *rowReader // runs QueryRow
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
	return r.rows.QueryRow(ctx, query, args...)
}

func (r *reader) close() error {
	r.rows.close()
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
	stmts *writeStmts
	group *committer
}

func (e *engine) Reader() sqlstore.Conn { return e.read }
func (e *engine) Writer() sqlstore.Conn { return conn{db: e.write, stmts: e.stmts} }

// WriteMark returns the write transactions committed so far
// (sqlstore.WriteWaiter).
func (e *engine) WriteMark() int64 { return e.group.txs.Load() }

// WritesWaiting reports whether write transactions wait for the one
// writer, or other transactions than one committed since mark
// (sqlstore.WriteWaiter).
func (e *engine) WritesWaiting(mark int64) bool {
	return e.group.group.Queued() > 0 || e.group.txs.Load()-mark > 1
}

// InTx runs fn in a write transaction, committed together with the
// transactions that wait meanwhile (see committer).
func (e *engine) InTx(ctx context.Context, fn func(sqlstore.Conn) error) error {
	return e.group.run(ctx, fn)
}

// positional returns query with its parameters $1, $2, … $n written as
// plain ?, when they appear in that order, once each, as in a multi-row
// INSERT; else query as it is. Bound by position, the same arguments go
// to the same parameters. SQLite keeps numbered parameters in a list that
// the driver searches from its start for each one it binds, so binding n
// of them costs n²: the 208 parameters of a record's 16 deliveries spent
// a twentieth of the writer's time in a drain so, where plain ones are
// bound at once.
func positional(query string) string {
	var b strings.Builder
	next := 1
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			end := strings.IndexByte(query[i+1:], c) // a doubled quote ends one literal and starts the next
			if end < 0 {
				return query
			}
			b.WriteString(query[i : i+end+2])
			i += end + 1
			continue
		case c == '-' && strings.HasPrefix(query[i:], "--"), c == '/' && strings.HasPrefix(query[i:], "/*"), c == '?', c == ':', c == '@':
			return query // comments, and parameters of other forms, are left alone
		case c == '$':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			if n, err := strconv.Atoi(query[i+1 : j]); err != nil || n != next {
				return query
			}
			next++
			b.WriteByte('?')
			i = j - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
