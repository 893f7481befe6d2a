// Package postgres is the PostgreSQL storage engine of ams, for running
// several `ams serve` processes on one database. It implements ams.Store
// with the same behaviour as the embedded engine in package sqlite (the
// shared suite in package storetest holds both to it), on a pgx v5
// connection pool.
//
// What differs from SQLite is what many processes need: the delivery and
// e-mail queues are claimed with FOR UPDATE SKIP LOCKED, so two processes
// never lease the same job; idempotency keys are claimed with one
// INSERT … ON CONFLICT; read-modify-write updates lock their row; and the
// migrations run under an advisory lock, so processes that start together
// apply them once.
//
// Times are stored as BIGINT Unix milliseconds, as in SQLite, so both
// engines round and compare them identically.
//
// pgx caches a prepared statement per query and connection. Behind a
// connection pooler in transaction mode (PgBouncer) add
// default_query_exec_mode=exec to the URL.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/seal"
	"github.com/amsdev/ams/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// DB is an open PostgreSQL store: the shared SQL store (package sqlstore)
// over a pgx pool, with the SKIP LOCKED queue claims, the shared rate
// limiter and login throttle, and COPY import.
type DB struct {
	*sqlstore.Store
	pool   *pgxpool.Pool
	schema string // the schema of the store's tables
	wake   *wakeup
	auth   *authWatch // answers AuthGeneration
}

var _ ams.Store = (*DB)(nil)

// Option configures Open.
type Option func(*openOptions)

type openOptions struct {
	secretKey []byte
	schema    string
	maxConns  int32
	tracer    pgx.QueryTracer
	logger    *slog.Logger
	stmt      time.Duration
}

// DefaultConnectTimeout bounds each connection attempt when the URL does
// not (connect_timeout): a server that does not answer fails the attempt,
// and the request that waited for it answers 503, instead of waiting as
// long as the network does.
const DefaultConnectTimeout = 10 * time.Second

// WithStatementTimeout sets PostgreSQL's statement_timeout on every
// connection, when the URL does not set statement_timeout: a statement
// that runs longer (waiting for a lock held elsewhere, say) is cancelled
// by the server, and the request answers 503 request_timeout. Migrations
// run without it. 0: the server's setting.
func WithStatementTimeout(d time.Duration) Option { return func(o *openOptions) { o.stmt = d } }

// WithLogger sets where the store reports trouble it recovers from (the
// connection that listens for other processes' jobs). Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *openOptions) { o.logger = l } }

// WithSecretKey sets the 32-byte key that seals webhook secrets. It is
// required: unlike SQLite there is no data directory beside the database
// to keep a key file in, and every process sharing the database must use
// the same key.
func WithSecretKey(key []byte) Option { return func(o *openOptions) { o.secretKey = key } }

// WithSchema keeps the store's tables in the named schema (created if
// missing) by setting search_path on every connection. Several stores can
// so share one database; tests use it to isolate each test.
func WithSchema(name string) Option { return func(o *openOptions) { o.schema = name } }

// WithDefaultMaxConns sets the pool's size when the URL does not (with
// pool_max_conns). pgx's own default, max(4, CPUs), leaves a busy server
// waiting for connections: every request and delivery is a short
// transaction whose time is mostly the commit's WAL flush, so more
// connections than cores pay off (docs/benchmarks.md).
func WithDefaultMaxConns(n int32) Option { return func(o *openOptions) { o.maxConns = n } }

// WithTracer has pgx report every query and batch the store sends to t
// (tests count round trips with it; a tracing setup may log them).
func WithTracer(t pgx.QueryTracer) Option { return func(o *openOptions) { o.tracer = t } }

// Open connects to the database at url (a postgres:// URL or a libpq
// key=value string; pool settings such as pool_max_conns are read from
// it) and applies any pending migrations.
func Open(ctx context.Context, url string, opts ...Option) (*DB, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.secretKey == nil {
		return nil, errors.New("postgres: a secret key is required (WithSecretKey): it seals webhook secrets and must be the same in every process")
	}
	sealer, err := seal.New(o.secretKey)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	if o.maxConns > 0 && !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = o.maxConns
	}
	if o.tracer != nil {
		cfg.ConnConfig.Tracer = o.tracer
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	if _, set := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !set && o.stmt > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(max(1, o.stmt.Milliseconds()), 10)
	}
	if o.schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{o.schema}.Sanitize()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	db := &DB{pool: pool, Store: sqlstore.New(&engine{pool: pool}, dialect, sealer)}
	if err := db.migrate(ctx, o.schema); err != nil {
		pool.Close()
		return nil, err
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	db.wake = startWakeup(pool, db.schema, db.Store, o.logger)
	db.auth = newAuthWatch(pool, db.schema, db.Store, o.logger)
	db.Store.OnAuthChanged(db.auth.ownChange)
	return db, nil
}

// Close stops telling and hearing other processes about queued jobs and
// changes of authentication, and closes the connection pool.
func (db *DB) Close() error {
	db.wake.stop()
	db.auth.stop()
	db.pool.Close()
	return nil
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// Pool returns the connection pool, for other parts of ams that keep
// their state in the same database (a shared rate limiter).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// migrate applies the embedded migrations (sqlstore.Migrate) in one
// transaction that holds an advisory lock on the schema: processes that
// start together wait for the first, then find its versions recorded in
// schema_migrations and apply nothing.
func (db *DB) migrate(ctx context.Context, schema string) error {
	return db.migrateFS(ctx, schema, migrationFS)
}

func (db *DB) migrateFS(ctx context.Context, schema string, fsys fs.FS) error {
	if schema == "" {
		var cur *string
		if err := db.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&cur); err != nil {
			return fmt.Errorf("postgres: connect: %w", err)
		}
		if cur == nil {
			return errors.New("postgres: no schema of search_path exists; create one or use WithSchema")
		}
		schema = *cur
	}
	db.schema = schema
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: begin migration: %w", err)
	}
	defer tx.Rollback(ctx)
	// Migrations (and the wait for another process's) may take longer
	// than a request's statement: no statement timeout for them.
	if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
		return fmt.Errorf("postgres: begin migration: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('ams.migrate'), hashtext($1))`, schema); err != nil {
		return fmt.Errorf("postgres: lock migrations: %w", err)
	}
	// CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the
	// database even when the schema exists: look first.
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: find schema: %w", err)
	}
	if !exists {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("postgres: create schema: %w", err)
		}
	}
	if err := sqlstore.Migrate(ctx, fsys, func(fn func(sqlstore.Conn) error) error { return fn(conn{q: tx}) }); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: commit migrations: %w", err)
	}
	return nil
}
