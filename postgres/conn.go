package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/amsdev/ams/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SQLSTATE codes the engine tells apart.
const (
	codeUniqueViolation     = "23505"
	codeBadCharacter        = "22021" // character_not_in_repertoire: a NUL byte in text
	codeUntranslatableChars = "22P05" // untranslatable_character: \u0000 in JSON
	codeQueryCanceled       = "57014" // query_canceled: statement_timeout ran out
	codeLockNotAvailable    = "55P03" // lock_not_available: lock_timeout ran out
)

// unavailable reports whether err says that the server cannot be reached
// or cannot write: a failed connect, a connection refused, reset or
// closed under a query, the server shutting down (57P01 admin_shutdown,
// 57P02 crash_shutdown, 57P03 cannot_connect_now), a connection exception
// (class 08), insufficient resources (class 53: 53100 disk_full, 53200
// out_of_memory, 53300 too_many_connections) or an I/O error (58030).
func unavailable(err error) bool {
	if c := pgCode(err); c != "" {
		return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "53") ||
			c == "57P01" || c == "57P02" || c == "57P03" || c == "58030"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// timeout reports whether err is a timeout: the statement_timeout or
// lock_timeout ran out on the server, or pgx's own (a context's deadline,
// a network timeout).
func timeout(err error) bool {
	c := pgCode(err)
	return c == codeQueryCanceled || c == codeLockNotAvailable || pgconn.Timeout(err)
}

// pgCode returns the SQLSTATE of err.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// dialect is PostgreSQL's: many processes write at once, so a transaction
// locks the rows it reads to change.
var dialect = sqlstore.Dialect{
	Name:     "postgres",
	RowLocks: true,
	// A read of one record is a round trip to the server: concurrent
	// ones go together (sqlstore/pointread.go).
	CombineReads: true,
	// A turn's write is a transaction of statements that cost more than
	// their rows: concurrent ones go together (sqlstore/exchange.go).
	CombineWrites: true,
	ClaimsLock:    true,
	WritableWith:  true,
	KeyLock:       `SELECT pg_advisory_xact_lock(hashtext('ams.key_lock'), hashtext($1))`,
	Schema:        schema,
	IsUnique:      func(err error) bool { return pgCode(err) == codeUniqueViolation },
	BadText: func(err error) bool {
		c := pgCode(err)
		return c == codeBadCharacter || c == codeUntranslatableChars
	},
	Unavailable: unavailable,
	Timeout:     timeout,
	// Every transaction id below the xmin of the statement's snapshot
	// belongs to a transaction that has ended; every transaction still
	// running or yet to start has one at or above it (migration 0009).
	EventsVisible: `txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint`,
	EventField:    func(name string) string { return `data->>'` + name + `'` },
	EventNulled:   func(name string) string { return `jsonb_set(data::jsonb, '{` + name + `}', 'null'::jsonb)::json` },
	MetadataHolds: func(meta, filter string) string {
		return `CAST(` + meta + ` AS jsonb) @> CAST(` + filter + ` AS jsonb)`
	},
}

// claimShared takes the claims' advisory lock shared: the lock the job
// triggers of migration 0032 take (the schema is the first of
// search_path, as TG_TABLE_SCHEMA is there), and claimLock's key. Every
// transaction takes it first (lazyTx's begin, conn.Batch's implicit
// transactions): see begin.
const claimShared = `SELECT pg_advisory_xact_lock_shared(hashtext('ams.claim'), hashtext(current_schema()))`

// querier runs queries: the pool, or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// conn adapts a pool or transaction to sqlstore.Conn. On the pool
// (implicit), a batch of several statements is one implicit transaction,
// which takes the claims' lock first as every transaction does (begin).
type conn struct {
	q        querier
	implicit bool
}

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return c.q.Query(ctx, query, args...)
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return c.q.QueryRow(ctx, query, args...)
}

// Batch sends the statements in one round trip (pgx pipelines a batch).
func (c conn) Batch(ctx context.Context, stmts []sqlstore.Stmt) ([]int64, int, error) {
	b := &pgx.Batch{}
	locked := c.implicit && len(stmts) > 1
	if locked {
		b.Queue(claimShared)
	}
	for _, s := range stmts {
		b.Queue(s.SQL, s.Args...)
	}
	br := c.q.SendBatch(ctx, b)
	if locked {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, 0, err
		}
	}
	n := make([]int64, len(stmts))
	for i := range stmts {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return nil, i, err
		}
		n[i] = tag.RowsAffected()
	}
	if err := br.Close(); err != nil {
		return nil, len(stmts) - 1, err
	}
	return n, 0, nil
}

// engine gives sqlstore the pool for reads and writes, and transactions.
type engine struct{ pool *pgxpool.Pool }

func (e *engine) Reader() sqlstore.Conn { return conn{q: e.pool, implicit: true} }
func (e *engine) Writer() sqlstore.Conn { return conn{q: e.pool, implicit: true} }

// InTx runs fn in one READ COMMITTED transaction. A statement that fails
// in PostgreSQL ends the transaction: the store checks what it can
// (ownership, a taken unique value) before writing, so that its ENOTFOUND
// and ECONFLICT answers leave the transaction usable, as in SQLite.
//
// Its BEGIN is sent with its first statement (lazyTx): one round trip
// fewer per transaction.
func (e *engine) InTx(ctx context.Context, fn func(sqlstore.Conn) error) error {
	return e.inLazyTx(ctx, fn)
}
