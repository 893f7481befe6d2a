package sqlstore

import (
	"context"
	"strings"
	"sync"

	"github.com/amsdev/ams/internal/batch"
)

// Combined writes of whole turns (Dialect.CombineWrites, PostgreSQL). A
// turn in a new conversation (POST /v1/messages without a
// conversation_id) is stored whole by SaveExchange: its conversation,
// turn, messages, stream and events, and the events' delivery jobs, in
// one transaction of six INSERTs sent with its BEGIN and COMMIT. On
// PostgreSQL most of what that costs the server is paid per statement
// and per transaction (a statement's executor start-up, a transaction's
// commit), not per row: eight turns written by one statement of each
// kind cost the server about a quarter of eight written apart
// (docs/benchmarks.md). So such a write made while another is in flight
// waits for it, then goes with the others that waited: one transaction
// whose every statement carries the rows of all of them. A lone write
// runs at once (internal/batch), so nothing waits when nothing else is
// going on.
//
// What each write stores, and when its caller hears of it, are as
// alone: its caller is answered after the COMMIT that made its rows
// durable, and its rows are the same, with the same ids. Every row keeps
// the account its caller gave it. Should the transaction fail (one
// write's conversation id taken, a deadlock, the server gone), each
// write runs again alone, so that each caller gets its own answer and
// one write's fault never fails another's. A write leaves the queue
// when its caller goes away before a transaction took it; once taken,
// its caller waits for the outcome (batch.DoOrLeave), which is never
// lost.
//
// Only writes of one shape go together: the same statements in the same
// order (a turn with its stream, or without). A write with a statement
// that cannot merge (the release of an idempotency key), one in a
// caller's transaction, or one whose request records an idempotent
// answer in its own transaction, runs alone, as before.

// exchangeWriter writes whole turns alone or together.
type exchangeWriter struct {
	s *Store
	b batch.Batcher[*exchangeWrite, error]
	// merges are the statements that merge, by Op.
	merges map[string]merge
	// sql caches merges' statements of one write (mergeKey → string).
	sql sync.Map
}

// merge is how a statement of one kind is made for any number of rows:
// width parameters a row, the statement for n rows.
type merge struct {
	width int
	sql   func(n int) string
}

type mergeKey struct {
	op   string
	rows int
}

// exchangeWrite is one SaveExchange: its statements, the eventStmts
// pairs from head on (runEmitLast), and its shape.
type exchangeWrite struct {
	ctx   context.Context
	stmts []Stmt
	head  int
	shape string
}

// maxCombinedExchanges bounds the writes of one transaction: what one
// statement may carry stays far below PostgreSQL's 65,535 parameters
// (a stream's insert, the widest per row and per write, takes 16 rows
// of 5 at most: 64 writes give 5,120).
const maxCombinedExchanges = 64

func newExchangeWriter(s *Store) *exchangeWriter {
	w := &exchangeWriter{s: s, merges: map[string]merge{
		opInsertConversation: {9, insertConversationsSQL},
		opInsertTurn:         {turnWidth, insertTurnsSQL},
		opInsertMessages:     {9, insertMessagesSQL},
		opInsertTurnEvents:   {5, insertTurnEventsSQL},
		opInsertEvents:       {5, insertEventsSQL},
		opQueueDeliveries:    {fanWidth, func(n int) string { return s.Queries.fanOut(n, true) }},
	}}
	w.b.Max = maxCombinedExchanges
	w.b.Run = w.run
	return w
}

// write stores stmts (SaveExchange's, with eventStmts' pairs from head
// on) in a transaction of their own, or with other writes of their
// shape. The caller is outside any transaction.
func (w *exchangeWriter) write(ctx context.Context, stmts []Stmt, head int) error {
	x := &exchangeWrite{ctx: ctx, stmts: stmts, head: head}
	if x.shape = w.shape(stmts); x.shape == "" {
		return w.alone(x)
	}
	err, left := w.b.DoOrLeave(ctx, x)
	if left != nil {
		return w.s.fail("save exchange", left)
	}
	return err
}

// ExchangesQueued returns how many whole turns wait for a combined
// write: what a test holds a write in flight for.
func (s *Store) ExchangesQueued() int { return s.exchanges.b.Queued() }

// shape returns what writes that merge with one of stmts have in common
// (their statements' ops in order), or "" when a statement does not
// merge. A statement merges when its op has a merge whose statement for
// its rows is its own: a statement of another kind that happened to
// share the op is never mistaken for one.
func (w *exchangeWriter) shape(stmts []Stmt) string {
	var b strings.Builder
	for _, st := range stmts {
		m, ok := w.merges[st.Op]
		if !ok || len(st.Args) == 0 || len(st.Args)%m.width != 0 || w.sqlFor(st.Op, m, len(st.Args)/m.width) != st.SQL {
			return ""
		}
		b.WriteString(st.Op)
		b.WriteByte(';')
	}
	return b.String()
}

// cachedRows bounds the statements sqlFor keeps: those of one write
// (eventStmts and turnEventStmts take 16 rows at most), which every
// write's shape compares with; a combined statement is made for its
// transaction only, so that what is kept stays small whatever the
// writes' sizes.
const cachedRows = 32

// sqlFor returns m's statement for rows rows of op, made once when it
// has at most cachedRows.
func (w *exchangeWriter) sqlFor(op string, m merge, rows int) string {
	if rows > cachedRows {
		return m.sql(rows)
	}
	k := mergeKey{op, rows}
	q, ok := w.sql.Load(k)
	if !ok {
		q, _ = w.sql.LoadOrStore(k, m.sql(rows))
	}
	return q.(string)
}

// run writes a batch: the writes of each shape together, or alone when
// a shape has one; a failed transaction's writes again, each alone.
func (w *exchangeWriter) run(xs []*exchangeWrite) []error {
	out := make([]error, len(xs))
	groups := map[string][]int{}
	var shapes []string
	for i, x := range xs {
		k := x.shape
		if _, ok := groups[k]; !ok {
			shapes = append(shapes, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range shapes {
		idx := groups[k]
		if len(idx) > 1 && w.together(xs, idx) == nil {
			continue
		}
		for _, i := range idx {
			out[i] = w.alone(xs[i])
		}
	}
	return out
}

// alone writes x in a transaction of its own, as SaveExchange always did.
func (w *exchangeWriter) alone(x *exchangeWrite) error {
	return w.s.Queries.inTx(x.ctx, func(q *Queries) error { return q.runEmitLast(x.ctx, x.stmts, x.head, true) })
}

// together writes the writes xs[idx] (of one shape) in one transaction:
// each statement with the rows of all of them, in their order.
func (w *exchangeWriter) together(xs []*exchangeWrite, idx []int) error {
	first := xs[idx[0]]
	stmts := make([]Stmt, len(first.stmts))
	for p, st := range first.stmts {
		m := w.merges[st.Op]
		n := 0
		for _, i := range idx {
			n += len(xs[i].stmts[p].Args)
		}
		args := make([]any, 0, n)
		for _, i := range idx {
			args = append(args, xs[i].stmts[p].Args...)
		}
		stmts[p] = Stmt{st.Op, w.sqlFor(st.Op, m, n/m.width), args}
	}
	ctxs := make([]context.Context, len(idx))
	for j, i := range idx {
		ctxs[j] = xs[i].ctx
	}
	ctx, cancel := combinedContext(ctxs)
	defer cancel()
	return w.s.Queries.inTx(ctx, func(q *Queries) error { return q.runEmitLast(ctx, stmts, first.head, true) })
}
