// Package sqlite is the embedded storage engine of ams: a SQLite database
// file under the data directory, opened with the pure-Go modernc.org/sqlite
// driver. It implements ams.Store.
//
// Writes go through one connection (SQLite allows one writer at a time;
// queueing them in the pool avoids SQLITE_BUSY churn), reads through a pool
// of read-only connections that WAL mode lets run beside the writer. Other
// processes (the CLI while a server runs) share the file safely: every
// connection waits on the busy timeout instead of failing.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/seal"
	"github.com/amsdev/ams/internal/sqlrow"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// DB is an open SQLite store.
type DB struct {
	path   string
	write  *sql.DB // one connection: all writes
	read   *sql.DB // read-only pool
	rq     reader  // the read pool with prepared statements cached
	sealer *seal.Sealer
	jobs   chan struct{} // signalled when a commit queued webhook jobs
}

// Option configures Open.
type Option func(*openOptions)

type openOptions struct{ secretKey []byte }

// WithSecretKey sets the key that seals webhook secrets. Without it, Open
// uses the key in secret.key beside the database file, creating it.
func WithSecretKey(key []byte) Option { return func(o *openOptions) { o.secretKey = key } }

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

// QueryRowContext runs a query expected to return at most one row.
func (r *reader) QueryRowContext(ctx context.Context, query string, args ...any) rowScanner {
	s, err := r.stmt(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return s.QueryRowContext(ctx, args...)
}

// QueryContext runs a query.
func (r *reader) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := r.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

func (r *reader) close() error {
	r.stmts.Range(func(_, s any) bool { s.(*sql.Stmt).Close(); return true })
	return r.db.Close()
}

// rowQuerier runs a one-row query: the reader, or a transaction through
// txQuerier.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) rowScanner
}

type txQuerier struct{ *sql.Tx }

func (t txQuerier) QueryRowContext(ctx context.Context, query string, args ...any) rowScanner {
	return t.Tx.QueryRowContext(ctx, query, args...)
}

// rowScanner is what *sql.Row offers; errRow is one that failed to run.
type rowScanner interface{ Scan(dest ...any) error }

type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }

var _ ams.Store = (*DB)(nil)

// Open opens (creating if needed) the database file at path and applies any
// pending migrations.
func Open(ctx context.Context, path string, opts ...Option) (*DB, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: resolve path: %w", err)
	}
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.secretKey == nil {
		if o.secretKey, err = seal.LoadOrCreateKeyFile(filepath.Join(filepath.Dir(abs), "secret.key")); err != nil {
			return nil, err
		}
	}
	sealer, err := seal.New(o.secretKey)
	if err != nil {
		return nil, err
	}
	pragmas := []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"}
	dsn := func(extra ...string) string {
		q := url.Values{}
		for _, p := range append(pragmas, extra...) {
			q.Add("_pragma", p)
		}
		return "file:" + abs + "?" + q.Encode()
	}
	db := &DB{path: abs, sealer: sealer, jobs: make(chan struct{}, 1)}
	if db.write, err = sql.Open("sqlite", dsn()+"&_txlock=immediate"); err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.write.SetMaxOpenConns(1)
	db.write.SetMaxIdleConns(1)
	db.write.SetConnMaxLifetime(0)
	if err := db.migrate(ctx); err != nil {
		db.write.Close()
		return nil, err
	}
	if db.read, err = sql.Open("sqlite", dsn("query_only(1)")); err != nil {
		db.write.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	n := max(4, 2*runtime.GOMAXPROCS(0))
	db.read.SetMaxOpenConns(n)
	db.read.SetMaxIdleConns(n)
	db.read.SetConnMaxLifetime(0)
	db.rq.db = db.read
	return db, nil
}

// Path returns the database file's absolute path.
func (db *DB) Path() string { return db.path }

// Close closes both pools.
func (db *DB) Close() error {
	return errors.Join(db.rq.close(), db.write.Close())
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.read.PingContext(ctx) }

// migrate applies the embedded migrations in order of their number, each in
// its own transaction, recording the applied versions.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: create schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	type mig struct {
		version int
		name    string
	}
	var migs []mig
	for _, n := range names {
		base := filepath.Base(n)
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("sqlite: migration %s: name must start with its number", base)
		}
		migs = append(migs, mig{v, base})
	}
	sort.Slice(migs, func(i, j int) bool { return migs[i].version < migs[j].version })
	for _, m := range migs {
		if err := db.applyMigration(ctx, m.version, m.name); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) applyMigration(ctx context.Context, version int, name string) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin migration: %w", err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: read schema_migrations: %w", err)
	}
	if n > 0 {
		return nil
	}
	body, err := migrationFS.ReadFile("migrations/" + name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		version, name, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("sqlite: record migration %s: %w", name, err)
	}
	return tx.Commit()
}

// SchemaVersion returns the highest applied migration number.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := db.rq.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v)
	return int(v.Int64), err
}

// ms converts a time to stored milliseconds; fromMS converts back (UTC).
func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func nullMS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}

func fromNullMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

// isUnique reports whether err is a UNIQUE constraint violation.
func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// scanner is the part of *sql.Row and *sql.Rows that scan functions use.
type scanner = sqlrow.Scanner

// list runs a cursor-paginated query. from is the table, where the scoping
// condition (with args) that both the page and the cursor lookup must
// match; cols the selected columns, read by scan.
func list[T any](ctx context.Context, q *reader, cols, from, where string, args []any, p ams.ListParams, scan func(scanner) (T, error)) (*ams.Page[T], error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 20
	}
	desc := p.Order != ams.OrderAsc
	cond, a := where, append([]any(nil), args...)
	cursorID, param := p.After, "after"
	if p.Before != "" {
		cursorID, param = p.Before, "before"
	}
	// forward: the page walks in the list's own order from the cursor.
	forward := p.Before == ""
	if cursorID != "" {
		var seq int64
		err := q.QueryRowContext(ctx, "SELECT seq FROM "+from+" WHERE id = ? AND "+where, append([]any{cursorID}, args...)...).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ams.ParamError("resource_missing", param, "No such object in this list: '%s'", cursorID)
		} else if err != nil {
			return nil, fmt.Errorf("find cursor: %w", err)
		}
		if desc == forward {
			cond += " AND seq < ?"
		} else {
			cond += " AND seq > ?"
		}
		a = append(a, seq)
	}
	scanDesc := desc == forward
	order := " ORDER BY seq ASC"
	if scanDesc {
		order = " ORDER BY seq DESC"
	}
	rows, err := q.QueryContext(ctx, "SELECT "+cols+" FROM "+from+" WHERE "+cond+order+" LIMIT ?", append(a, limit+1)...)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", from, err)
	}
	defer rows.Close()
	page := &ams.Page[T]{Data: make([]T, 0, limit)}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", from, err)
		}
		page.Data = append(page.Data, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", from, err)
	}
	return sqlrow.FinishPage(page, limit, forward), nil
}
