package sqlstore

import (
	"context"
	"strings"

	"github.com/amsdev/ams"
)

// Idempotency keys commit with the change (issue 26, M2). A request made
// with an Idempotency-Key carries an ams.IdempotentRequest in its context.
// The rule lives here, below every service, so that no write can forget
// it: a write transaction (inTx) that changed something marks the key's
// record done before it commits, and a write made outside a transaction
// in such a context (keyedWriter) runs in one that does the same. A retry
// after a crash at any point then finds either nothing committed (the
// claim is still running; it is taken over once abandoned) or the record
// done: the change is never made twice.

// markIdempotent marks the record of req's key done, in the transaction
// c is in, with answer: the one made from an event of the change or from
// the value its service kept (ams.IdempotentRequest.Answer,
// ams.KeepAnswer), or nil. The HTTP layer stores the
// answer it gave after the commit (FinishIdempotent).
func (s *Store) markIdempotent(ctx context.Context, c Conn, req *ams.IdempotentRequest, answer []byte) error {
	var body any // NULL without an answer
	if answer != nil {
		body = s.sealAnswer(req.UserID, req.Key, answer)
	}
	_, err := c.Exec(ctx, `UPDATE idempotency_keys SET done = TRUE, body = $4
		WHERE user_id = $1 AND key = $2 AND request_hash = $3 AND NOT done`, req.UserID, req.Key, req.RequestHash, body)
	return err
}

// answerFrom keeps, in q's transaction, the idempotent request's answer
// made from the first of events that makes one.
func (q *Queries) answerFrom(ctx context.Context, events []*ams.Event) {
	req := pendingRequest(ctx)
	if q.tx == nil || q.tx.answer != nil || req == nil || req.Answer == nil {
		return
	}
	for _, e := range events {
		if a := req.Answer(e); a != nil {
			q.tx.answer = a
			return
		}
	}
}

// pendingRequest returns the idempotent request of ctx whose change has
// not committed yet, or nil.
func pendingRequest(ctx context.Context) *ams.IdempotentRequest {
	r := ams.IdempotentRequestFrom(ctx)
	if r == nil || r.Committed() {
		return nil
	}
	return r
}

// isWrite reports whether a statement may change rows: everything but a
// SELECT (with or without a locking clause).
func isWrite(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	return len(q) < 6 || !strings.EqualFold(q[:6], "SELECT")
}

// tracked is a transaction's connection that notes whether a statement
// that may change rows ran in it.
type tracked struct {
	Conn
	wrote bool
}

func (t *tracked) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	t.wrote = t.wrote || isWrite(query)
	return t.Conn.Exec(ctx, query, args...)
}

func (t *tracked) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	t.wrote = t.wrote || isWrite(query)
	return t.Conn.Query(ctx, query, args...)
}

func (t *tracked) QueryRow(ctx context.Context, query string, args ...any) Row {
	t.wrote = t.wrote || isWrite(query)
	return t.Conn.QueryRow(ctx, query, args...)
}

func (t *tracked) Batch(ctx context.Context, stmts []Stmt) ([]int64, int, error) {
	for _, s := range stmts {
		t.wrote = t.wrote || isWrite(s.SQL)
	}
	return t.Conn.Batch(ctx, stmts)
}

// keyedWriter is the store's writer outside transactions: a write in the
// context of an idempotent request whose change has not committed runs
// in a transaction of its own that records the key (inTx). Other
// statements go to the engine's writer as they are. Query, which only
// the delivery worker's claims use for writes outside a transaction,
// goes as it is.
type keyedWriter struct {
	Conn
	s *Store
}

func (w keyedWriter) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if pendingRequest(ctx) == nil || !isWrite(query) {
		return w.Conn.Exec(ctx, query, args...)
	}
	var n int64
	err := w.s.Queries.inTx(ctx, func(q *Queries) error {
		var err error
		n, err = q.w.Exec(ctx, query, args...)
		return err
	})
	return n, err
}

func (w keyedWriter) QueryRow(ctx context.Context, query string, args ...any) Row {
	if pendingRequest(ctx) == nil || !isWrite(query) {
		return w.Conn.QueryRow(ctx, query, args...)
	}
	return keyedRow{w: w, ctx: ctx, query: query, args: args}
}

func (w keyedWriter) Batch(ctx context.Context, stmts []Stmt) ([]int64, int, error) {
	if pendingRequest(ctx) == nil {
		return w.Conn.Batch(ctx, stmts)
	}
	var n []int64
	failed := 0
	err := w.s.Queries.inTx(ctx, func(q *Queries) error {
		var err error
		n, failed, err = q.w.Batch(ctx, stmts)
		return err
	})
	return n, failed, err
}

// keyedRow is a write returning a row, run with its Scan in a transaction
// that records the key.
type keyedRow struct {
	w     keyedWriter
	ctx   context.Context
	query string
	args  []any
}

func (r keyedRow) Scan(dest ...any) error {
	return r.w.s.Queries.inTx(r.ctx, func(q *Queries) error {
		return q.w.QueryRow(r.ctx, r.query, r.args...).Scan(dest...)
	})
}
