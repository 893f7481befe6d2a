// Package sqlstore is the storage of ams written once for both SQL engines.
// Every statement and every multi-step rule (a webhook's lifecycle, a
// conversation turn with its events, a reminder fired once) lives here;
// the engines, package sqlite and package postgres, give it a connection
// (Conn) and a Dialect and keep only what truly differs: opening and
// pooling, pragmas, their migration files (one runner, Migrate, and one
// numbering) and the locking around them, the delivery-queue claims (SKIP
// LOCKED against SQLite's single writer), COPY for import, pipelining and
// error codes.
//
// The SQL is written in the common subset of SQLite and PostgreSQL:
// numbered placeholders ($1, which SQLite binds by number too), TRUE and
// FALSE, RETURNING, ON CONFLICT, string_agg, CAST. Times are BIGINT Unix
// milliseconds on both, so they round and compare identically. Row locks
// (FOR UPDATE and its kin) come from the Dialect: SQLite has one writer
// and needs none.
package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/seal"
	"github.com/amsdev/ams/tracing"
)

// Conn runs statements: an engine's pool, or one transaction.
type Conn interface {
	// Exec runs a statement and returns the number of rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Batch runs stmts in order, stopping at the first error, and returns
	// the rows each changed. PostgreSQL sends them in one round trip
	// (pipelined); SQLite, which is in-process, runs them one by one. On
	// error, failed is the index of the statement that failed.
	Batch(ctx context.Context, stmts []Stmt) (affected []int64, failed int, err error)
}

// BatchCommitter is a Conn of a transaction that can send the
// transaction's last statements together with its COMMIT (PostgreSQL: in
// one round trip, with BEGIN too when nothing ran before). Once
// BatchCommit returns without error the transaction has committed; on
// error it has not. failed is the index of the statement that failed, or
// len(stmts) for the COMMIT itself.
type BatchCommitter interface {
	BatchCommit(ctx context.Context, stmts []Stmt) (affected []int64, failed int, err error)
}

// QueryCommitter is a Conn of a transaction that can send the
// transaction's last statement, one that returns rows, together with its
// COMMIT (PostgreSQL: in one round trip, with BEGIN too when nothing ran
// before). scan reads the rows before the COMMIT's answer is read. An
// error of the statement or of the COMMIT leaves the transaction
// uncommitted; an error of scan's own (a value that does not scan) is
// returned after the COMMIT that was sent with the statement has run.
type QueryCommitter interface {
	QueryCommit(ctx context.Context, query string, args []any, scan func(Rows) error) error
}

// Row is one row of a query; Scan returns sql.ErrNoRows (pgx's ErrNoRows
// wraps it) when there is none.
type Row interface{ Scan(dest ...any) error }

// Rows is the result of Conn.Query.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Stmt is one statement of a Batch. Op names it in errors.
type Stmt struct {
	Op   string
	SQL  string
	Args []any
}

// WriteWaiter is an engine whose writes take turns on one writer
// (SQLite's): it tells whether other writes than a transaction of the
// caller's wanted the writer while it ran. The retention purge rests
// between its batches only then.
type WriteWaiter interface {
	// WriteMark returns a mark of the writer's work, taken before the
	// caller's transaction.
	WriteMark() int64
	// WritesWaiting reports whether write transactions wait for the
	// writer now, or others than the caller's one ran since mark.
	WritesWaiting(mark int64) bool
}

// Engine is what an engine gives the store.
type Engine interface {
	// Reader runs reads outside transactions.
	Reader() Conn
	// Writer runs single-statement writes outside transactions.
	Writer() Conn
	// InTx runs fn in a write transaction, committing when it returns nil.
	InTx(ctx context.Context, fn func(Conn) error) error
}

// claimsLockKey marks a context whose transaction begins without the
// claims' lock (Dialect.ClaimsLock).
type claimsLockKey struct{}

// WithoutClaimsLock returns ctx marked so that a transaction begun with
// it does not take the claims' lock (Dialect.ClaimsLock): for one that
// queues no delivery job and makes none due.
func WithoutClaimsLock(ctx context.Context) context.Context {
	return context.WithValue(ctx, claimsLockKey{}, true)
}

// NeedsClaimsLock reports whether a transaction begun with ctx takes the
// claims' lock, where transactions do (Dialect.ClaimsLock): all but those
// begun with a context of WithoutClaimsLock.
func NeedsClaimsLock(ctx context.Context) bool {
	return ctx.Value(claimsLockKey{}) == nil
}

// Dialect is what differs in the SQL and the errors of an engine.
type Dialect struct {
	// Name is "sqlite" or "postgres".
	Name string
	// RowLocks is whether a transaction must lock the rows it reads to
	// change (PostgreSQL); SQLite serializes writers and takes none.
	RowLocks bool
	// IsUnique reports whether err is a unique-constraint violation.
	IsUnique func(err error) bool
	// BadText reports whether err says that a text value cannot be
	// stored (PostgreSQL refuses NUL characters, which SQLite keeps).
	BadText func(err error) bool
	// KeyLock is a statement that takes a lock on the text $1, held until
	// the transaction ends, so that transactions in several processes
	// acting on one key (such as an e-mail recipient's count) take their
	// turns; empty where writers are serialized anyway (SQLite).
	KeyLock string
	// Unavailable reports whether err says that the database cannot be
	// reached or cannot write (connection refused or lost, the server
	// shutting down, a full disk): answered 503, as ams.Unavailable.
	Unavailable func(err error) bool
	// Timeout reports whether err is the engine's own timeout (a
	// statement timeout); a context's deadline is one on every engine.
	Timeout func(err error) bool
	// CombineReads is whether reads of one record outside a transaction
	// made while another is in flight go together in one statement
	// (pointread.go): PostgreSQL's, where each statement is a round trip
	// to another process. The statement is PostgreSQL's (unnest WITH
	// ORDINALITY); SQLite reads in-process and combines none.
	CombineReads bool
	// CombineWrites is whether whole turns in new conversations stored
	// outside a transaction while another is being stored go together in
	// one transaction, several turns to a statement (exchange.go):
	// PostgreSQL's, where a statement and a commit cost the server far
	// more than a row. SQLite's writes take turns on one connection and
	// are committed in groups already.
	CombineWrites bool
	// ClaimsLock is whether every transaction takes the delivery claims'
	// lock shared at its start (PostgreSQL: postgres/lazytx.go), so that
	// a claim, which takes it alone, runs while no transaction that
	// queues jobs is open. A transaction begun with a context of
	// WithoutClaimsLock does not: a record of successes (recordAttempts).
	ClaimsLock bool
	// WritableWith is whether a statement's WITH may hold an UPDATE or an
	// INSERT whose RETURNING rows the statement reads (PostgreSQL): a
	// record of attempts then updates their jobs and logs them in one
	// statement (recordAttemptChunk) where it takes two elsewhere.
	WritableWith bool
	// Schema describes the engine's tables for export and import.
	Schema Schema
	// EventsVisible is a condition on rows of events that holds for the
	// events a list may show: those that no transaction still running or
	// yet to start can precede in the events' order (txid, seq). On
	// PostgreSQL, where seq is taken at insert, not at commit, it is the
	// transaction-id watermark: txid below the oldest transaction id
	// still running. Empty where commit order is insert order (SQLite's
	// single writer; every txid there is 0).
	EventsVisible string
	// EventField is the SQL of the text of top-level field name of an
	// events row's data; EventNulled is the SQL of that data with field
	// name set to JSON null (erasure, sqlstore/erase.go).
	EventField  func(name string) string
	EventNulled func(name string) string
	// MetadataHolds is the SQL of a condition that holds when the JSON
	// object (text) meta holds every pair of the JSON object (text)
	// filter, both of string values: a webhook's metadata filter and an
	// event's record metadata (NULL meta: it does not hold).
	MetadataHolds func(meta, filter string) string
}

// Store implements ams.Store over an Engine. An engine embeds it and adds
// the methods whose SQL must differ.
type Store struct {
	*Queries
	eng    Engine
	d      Dialect
	sealer *seal.Sealer
	jobs   chan struct{} // signalled when a commit queued webhook jobs
	queued func()        // called too, to tell other processes (OnJobsQueued)
	auth   func()        // called after a commit that changed authentication (OnAuthChanged)
	// writeDown is set when a write failed because the database could
	// not write (ams.IsStorageUnavailable), and cleared by the next write
	// that succeeds: the process is not ready meanwhile (CheckWrites).
	writeDown atomic.Bool
	// points reads single records by id (pointread.go): combined where
	// the dialect combines reads (CombineReads), alone elsewhere.
	points *pointReaders
	// exchanges writes whole turns (exchange.go): combined where the
	// dialect combines writes (CombineWrites), alone elsewhere.
	exchanges *exchangeWriter
	// fanOuts caches fanOut's statements (fanOutKey → string): the same
	// few are made for every write that emits events.
	fanOuts sync.Map
}

// New returns a store over eng; sealer seals webhook and integration
// secrets.
func New(eng Engine, d Dialect, sealer *seal.Sealer) *Store {
	s := &Store{eng: eng, d: d, sealer: sealer, jobs: make(chan struct{}, 1)}
	s.Queries = &Queries{s: s, r: eng.Reader(), w: trackedWriter{keyedWriter{Conn: eng.Writer(), s: s}, s}}
	s.points = newPointReaders(s)
	s.exchanges = newExchangeWriter(s)
	return s
}

// Sealer returns the key that seals secrets at rest.
func (s *Store) Sealer() *seal.Sealer { return s.sealer }

// Dialect returns the engine's dialect.
func (s *Store) Dialect() Dialect { return s.d }

// Queries runs the store's statements on one connection: the engine's
// pools (reads on the reader, writes on the writer), or one transaction.
// Inside a transaction (ams.Tx) the reads that precede a change lock their
// rows where the engine needs it, and the events emitted wake the delivery
// worker once the transaction commits.
type Queries struct {
	s    *Store
	r, w Conn
	tx   *txState // nil outside a transaction
}

type txState struct {
	// commitAhead: the transaction's COMMIT may travel with its last
	// statements (lastBatch), nothing being left to run after fn.
	commitAhead bool
	queued      int64
	auth        bool   // authentication changed (authgen.go)
	answer      []byte // the idempotent request's answer made from an event emitted (keyed.go)
	// locked: the assistants (id → user) this transaction found and
	// locked (FindAssistant), so that ownedAssistant need not read them
	// again: a tool's action reads its assistant once where it read it
	// three times (the action, the record it makes, the action's record).
	locked map[string]string
}

// Update runs fn in one transaction; see ams.Tx.
func (s *Store) Update(ctx context.Context, fn func(tx ams.Tx) error) error {
	return s.inTx(ctx, func(q *Queries) error { return fn(q) })
}

// inTx runs fn in a transaction: q's own when it is one, else a new one,
// committed when fn returns nil. Delivery jobs queued in it wake the
// worker after the commit. In the context of an idempotent request
// (keyed.go) a transaction that changed something records the request's
// key before it commits.
func (q *Queries) inTx(ctx context.Context, fn func(q *Queries) error) error {
	if q.tx != nil {
		return fn(q)
	}
	_, span := tracing.Start(ctx, "store.transaction") // the transaction, its commit included
	defer span.End()
	req := pendingRequest(ctx)
	st := &txState{commitAhead: req == nil}
	marked := false
	if err := q.s.eng.InTx(ctx, func(c Conn) error {
		tc := &tracked{Conn: c}
		marked, st.locked = false, nil // fn may run again, in a new transaction
		if err := fn(&Queries{s: q.s, r: tc, w: tc, tx: st}); err != nil {
			return err
		}
		if req != nil && tc.wrote {
			answer := st.answer
			if answer == nil && req.Answer != nil {
				if v := req.Kept(); v != nil {
					answer = req.Answer(v)
				}
			}
			if err := q.s.markIdempotent(ctx, c, req, answer); err != nil {
				return q.fail("record idempotency key", err)
			}
			marked = true
		}
		return nil
	}); err != nil {
		return q.s.wrote(q.s.fault(err))
	}
	if marked {
		req.MarkCommitted()
	}
	q.s.wrote(nil)
	q.s.signalJobs(st.queued)
	if st.auth {
		q.s.signalAuth()
	}
	return nil
}

// lock returns the row-locking clause clause (" FOR UPDATE", ...) for a
// read inside a transaction on an engine that takes row locks, else "".
func (q *Queries) lock(clause string) string { return q.lockIf(q.tx != nil, clause) }

// lockIf is lock for a statement made now to run in a transaction (tx)
// or not.
func (q *Queries) lockIf(tx bool, clause string) string {
	if !tx || !q.s.d.RowLocks {
		return ""
	}
	return " " + clause
}

// queued counts delivery jobs queued: woken after the commit, or at once
// outside a transaction.
func (q *Queries) queued(n int64) {
	if q.tx != nil {
		q.tx.queued += n
	} else {
		q.s.signalJobs(n)
	}
}

func (s *Store) signalJobs(n int64) {
	if n > 0 {
		s.WakeWorkers()
		if s.queued != nil {
			s.queued()
		}
	}
}

// WakeWorkers signals JobsReady without blocking.
func (s *Store) WakeWorkers() {
	select {
	case s.jobs <- struct{}{}:
	default:
	}
}

// OnJobsQueued sets f, called (after JobsReady is signalled) when a commit
// of this process queued delivery jobs; an engine tells other processes
// with it. f must not block. Set it before the store is used.
func (s *Store) OnJobsQueued(f func()) { s.queued = f }

// JobsReady is signalled when a commit of this process queued delivery
// jobs (and, by an engine that hears of other processes' jobs, through
// WakeWorkers).
func (s *Store) JobsReady() <-chan struct{} { return s.jobs }

// fail wraps a database error with what was being done. Text the engine
// cannot hold (a NUL character in PostgreSQL) is the caller's EINVALID,
// not an internal error.
func (q *Queries) fail(op string, err error) error { return q.s.fail(op, err) }

func (s *Store) fail(op string, err error) error {
	var ae *ams.Error
	if errors.As(err, &ae) {
		return err
	}
	if s.d.BadText != nil && s.d.BadText(err) {
		return ams.Errorf(ams.EINVALID, "parameter_invalid", "Text must not contain NUL characters (\\u0000).")
	}
	return s.fault(fmt.Errorf("%s: %w", op, err))
}

// fault returns err as ams.Unavailable when it says the database cannot
// be reached or cannot write, as ams.TimedOut when a deadline or the
// statement timeout ran out, else err as it is.
func (s *Store) fault(err error) error {
	var ae *ams.Error
	switch {
	case err == nil || errors.As(err, &ae) || errors.Is(err, context.Canceled):
		return err // a caller that went away is no fault of the database
	case errors.Is(err, context.DeadlineExceeded) || (s.d.Timeout != nil && s.d.Timeout(err)):
		return ams.TimedOut(err)
	case s.d.Unavailable != nil && s.d.Unavailable(err):
		return ams.Unavailable(err)
	}
	return err
}

// wrote records the outcome of a write: err (returned as it is) marks
// the process's writes down when it is ams.IsStorageUnavailable; a
// success (nil) clears the mark.
func (s *Store) wrote(err error) error {
	switch {
	case err == nil:
		if s.writeDown.Load() {
			s.writeDown.Store(false)
		}
	case ams.IsStorageUnavailable(err):
		s.writeDown.Store(true)
	}
	return err
}

// probeName is the oauth_locks row a write probe inserts and deletes.
const probeName = "ams.write-probe"

// CheckWrites reports whether this process can write: nil unless its
// last write failed because the database could not write (a full disk,
// the server gone; ams.IsStorageUnavailable). Then it tries a probe
// write — a transaction that inserts a row of some kilobytes, which
// needs new pages, and deletes it — and reports its error, or nil, and
// clears the mark, when it succeeds. GET /readyz calls it, so that a
// process whose writes fail is taken out of the load balancer and comes
// back once writes succeed again.
func (s *Store) CheckWrites(ctx context.Context) error {
	if !s.writeDown.Load() {
		return nil
	}
	// Random, so that the row needs pages of its own whatever compresses.
	filler := probeFiller()
	name := probeName + "." + ams.NewSecret("")
	return s.inTx(ctx, func(q *Queries) error {
		if _, err := q.exec(ctx, "probe write", `INSERT INTO oauth_locks (name, owner, expires_at) VALUES ($1, $2, 0)`, name, filler); err != nil {
			return err
		}
		_, err := q.exec(ctx, "probe write", `DELETE FROM oauth_locks WHERE name = $1`, name)
		return err
	})
}

// Fail is fail for the engines' own statements.
func (s *Store) Fail(op string, err error) error { return s.fail(op, err) }

// isUnique reports whether err is a unique violation.
func (q *Queries) isUnique(err error) bool { return err != nil && q.s.d.IsUnique(err) }

// exec runs one write statement on the writer.
func (q *Queries) exec(ctx context.Context, op, query string, args ...any) (int64, error) {
	n, err := q.w.Exec(ctx, query, args...)
	if err != nil {
		return 0, q.fail(op, err)
	}
	return n, nil
}

// trackedWriter is the engine's writer as the store uses it outside
// transactions: it records the outcome of every write (Store.wrote;
// inTx records those of transactions, at their end).
type trackedWriter struct {
	Conn
	s *Store
}

func (w trackedWriter) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	n, err := w.Conn.Exec(ctx, query, args...)
	w.s.track(err)
	return n, err
}

func (w trackedWriter) Batch(ctx context.Context, stmts []Stmt) ([]int64, int, error) {
	n, i, err := w.Conn.Batch(ctx, stmts)
	w.s.track(err)
	return n, i, err
}

func (w trackedWriter) QueryRow(ctx context.Context, query string, args ...any) Row {
	return trackedRow{w.Conn.QueryRow(ctx, query, args...), w.s}
}

// trackedRow records the outcome of a write that returns a row
// (INSERT … RETURNING, on the writer).
type trackedRow struct {
	Row
	s *Store
}

func (r trackedRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if !errors.Is(err, sql.ErrNoRows) {
		r.s.track(err)
	}
	return err
}

// track records the outcome of a write outside a transaction: err as
// the engine returned it.
func (s *Store) track(err error) { s.wrote(s.fault(err)) }

// batch runs stmts on the writer, pipelined where the engine can.
func (q *Queries) batch(ctx context.Context, stmts []Stmt) ([]int64, error) {
	if len(stmts) == 0 {
		return nil, nil
	}
	n, i, err := q.w.Batch(ctx, stmts)
	if err != nil {
		return nil, q.fail(stmts[i].Op, err)
	}
	return n, nil
}

// lastBatch is batch for the last statements of a transaction that fn
// of inTx began (began: q.tx was nil when inTx was called): where the
// engine can, they travel with the COMMIT, one round trip fewer. The
// caller must run nothing in the transaction after it.
func (q *Queries) lastBatch(ctx context.Context, stmts []Stmt, began bool) ([]int64, error) {
	t := q.commitAhead(began)
	if t == nil || len(stmts) == 0 {
		return q.batch(ctx, stmts)
	}
	bc, ok := t.Conn.(BatchCommitter)
	if !ok {
		return q.batch(ctx, stmts)
	}
	t.wrote = true
	n, i, err := bc.BatchCommit(ctx, stmts)
	if err != nil {
		op := "commit"
		if i < len(stmts) {
			op = stmts[i].Op
		}
		return nil, q.fail(op, err)
	}
	return n, nil
}

// commitAhead returns the transaction's connection when its COMMIT may
// travel with its last statements (lastBatch, lastQuery): fn of inTx
// began it (began) and nothing is left to run after fn; else nil.
func (q *Queries) commitAhead(began bool) *tracked {
	if t, ok := q.w.(*tracked); ok && began && q.tx != nil && q.tx.commitAhead {
		return t
	}
	return nil
}

// lastQuery runs query on the writer and hands its rows to scan; where
// the engine can, and the transaction is one fn of inTx began (began),
// the query travels with the COMMIT, one round trip fewer (as
// lastBatch). The caller must run nothing in the transaction after it.
func (q *Queries) lastQuery(ctx context.Context, op, query string, args []any, scan func(Rows) error, began bool) error {
	if t := q.commitAhead(began); t != nil {
		if qc, ok := t.Conn.(QueryCommitter); ok {
			t.wrote = true
			if err := qc.QueryCommit(ctx, query, args, scan); err != nil {
				return q.fail(op, err)
			}
			return nil
		}
	}
	rows, err := q.w.Query(ctx, query, args...)
	if err != nil {
		return q.fail(op, err)
	}
	defer rows.Close()
	if err := scan(rows); err != nil {
		return q.fail(op, err)
	}
	if err := rows.Err(); err != nil {
		return q.fail(op, err)
	}
	return nil
}

// affected returns ams.NotFound(object, id) when n is 0.
func affected(n int64, object, id string) error {
	if n == 0 {
		return ams.NotFound(object, id)
	}
	return nil
}

// lockKey takes the dialect's KeyLock on key, in q's transaction.
func (q *Queries) lockKey(ctx context.Context, key string) error {
	if q.s.d.KeyLock == "" {
		return nil
	}
	_, err := q.exec(ctx, "lock "+key, q.s.d.KeyLock, key)
	return err
}

// exists runs a SELECT EXISTS (...) query.
func (q *Queries) exists(ctx context.Context, what, query string, args ...any) (bool, error) {
	var ok bool
	if err := q.r.QueryRow(ctx, `SELECT EXISTS (`+query+`)`, args...).Scan(&ok); err != nil {
		return false, q.fail("find "+what, err)
	}
	return ok, nil
}

// MS converts a time to stored milliseconds.
func MS(t time.Time) int64 { return t.UnixMilli() }

// FromMS converts stored milliseconds to a time in UTC.
func FromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func fromNullMS(v *int64) *time.Time {
	if v == nil {
		return nil
	}
	t := FromMS(*v)
	return &t
}

// nullMS converts an optional time to stored milliseconds (nil: NULL).
func nullMS(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := t.UnixMilli()
	return &v
}

// nullText converts a string to a nullable column value: "" is NULL.
func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// SchemaVersion returns the highest applied migration number.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.r.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// probeFiller returns 16 KiB of random hex text: a value that needs
// pages of its own (SQLite overflow pages; incompressible for TOAST).
func probeFiller() string {
	b := make([]byte, 8<<10)
	rand.Read(b)
	return hex.EncodeToString(b)
}
