package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/batch"
)

// Combined reads of one record (Dialect.CombineReads, PostgreSQL). An
// authenticated GET of one record is the auth cache, the limiter and
// one indexed read; on PostgreSQL that read is a round trip to another
// process, and on a busy server it is half of what the GET costs (its
// write system call wakes a backend that parses, plans and runs a
// statement for one row). A read made while another read of the same
// kind is in flight waits for it, then goes with the others that waited
// in the next statement, which reads all of their rows at once
// (internal/batch: a lone read runs at once, so nothing waits when
// nothing else is going on).
//
// What a read sees is unchanged: its statement is sent after the read
// was asked for, so it sees every change committed before that, as a
// statement of its own would. Each read's key stays scoped by its
// account in SQL: the statement joins the table to the pairs (id,
// user_id) asked for, so that no account's read can return another's
// row. Reads inside a transaction (ams.Tx) are never combined: they
// lock, and see the transaction's own writes.
//
// Each kind of record is defined once (newPointReader: its table,
// columns, further condition and lock); the read alone and the combined
// statement are both made from that definition (findByID).

// pointReaders are a store's reads by id, one per kind of record that a
// GET reads by id (and an assistant, which every POST /v1/messages reads
// before its turn).
type pointReaders struct {
	messages      *pointReader[*ams.Message]
	assistants    *pointReader[*ams.Assistant]
	conversations *pointReader[*ams.Conversation]
	turns         *pointReader[*ams.Turn]
	tasks         *pointReader[*ams.Task]
	actions       *pointReader[*ams.Action]
	events        *pointReader[*ams.Event]
}

func newPointReaders(s *Store) *pointReaders {
	const update = "FOR UPDATE"
	return &pointReaders{
		messages:      newPointReader(s, "message", "messages", messageCols, "", update, scanMessage),
		assistants:    newPointReader(s, "assistant", "assistants", assistantCols, "deleted_at IS NULL", update, scanAssistant),
		conversations: newPointReader(s, "conversation", "conversations", conversationCols, "", update, scanConversation),
		turns:         newPointReader(s, "turn", "turns", turnCols, "", "", scanTurn),
		tasks:         newPointReader(s, "task", "tasks", taskCols, "", update, scanTask),
		actions:       newPointReader(s, "action", "actions", actionCols, "", "", scanAction),
		events:        newPointReader(s, "event", "events", eventCols, "", "", scanEvent),
	}
}

// findByID reads the user's record id of p's kind: combined with others
// (p.find) outside a transaction where the dialect combines reads, else
// alone, locked by p's lock in a transaction; ENOTFOUND when there is
// none.
func findByID[T any](ctx context.Context, q *Queries, p *pointReader[T], userID, id string) (T, error) {
	if q.tx == nil && q.s.d.CombineReads {
		return p.find(ctx, userID, id)
	}
	query := p.alone
	if p.lock != "" {
		query += q.lock(p.lock)
	}
	return findOne(ctx, q, p.scan, p.object, id, query, id, userID)
}

// ReadsQueued returns how many reads of one record wait for a combined
// statement (pointread.go): what a test holds a read in flight for.
func (s *Store) ReadsQueued() int {
	p := s.points
	return p.messages.b.Queued() + p.assistants.b.Queued() + p.conversations.b.Queued() + p.turns.b.Queued() +
		p.tasks.b.Queued() + p.actions.b.Queued() + p.events.b.Queued()
}

// pointKey is one read of a combined statement.
type pointKey struct {
	ctx      context.Context
	id, user string
}

// pointAnswer is one read's answer.
type pointAnswer[T any] struct {
	v   T
	err error
}

// pointReader reads one kind of record by id and account, alone or
// combined.
type pointReader[T any] struct {
	object string // the record's name in a not-found error ("message")
	alone  string // the statement of one read ($1 id, $2 account)
	query  string // the combined statement (newPointReader)
	lock   string // the lock a read alone takes in a transaction, if any
	scan   func(scanner) (T, error)
	fail   func(op string, err error) error // Store.fail
	b      batch.Batcher[pointKey, pointAnswer[T]]
}

// newPointReader returns the reader of object's rows of table by their
// columns cols and scan, combining on s's reader pool; where, if not
// empty, is a further condition on the rows (an assistant deleted is not
// found); lock, if not empty, the clause that locks a row read alone in
// a transaction.
// The statement joins the table to the asked pairs (id, user_id),
// numbered by their place in the batch (WITH ORDINALITY): a row comes
// back once per read that asked for it, numbered so, and two reads of
// one record get a record each, never one shared value.
func newPointReader[T any](s *Store, object, table, cols, where, lock string, scan func(scanner) (T, error)) *pointReader[T] {
	r := s.eng.Reader()
	if where != "" {
		where = " AND " + where
	}
	p := &pointReader[T]{object: object, scan: scan, fail: s.fail, lock: lock,
		alone: `SELECT ` + cols + ` FROM ` + table + ` WHERE id = $1 AND user_id = $2` + where,
		query: `SELECT ` + cols + `, k.n FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(kid, kuser, n) JOIN ` +
			table + ` ON id = k.kid AND user_id = k.kuser` + where}
	p.b.Max = 64
	p.b.Run = func(keys []pointKey) []pointAnswer[T] { return p.run(r, keys) }
	return p
}

// find reads the user's record id: alone when no other read of its kind
// is in flight, else with the others in the next statement. It waits no
// longer than ctx allows, however long the statement before its own
// takes.
func (p *pointReader[T]) find(ctx context.Context, userID, id string) (T, error) {
	a, err := p.b.DoContext(ctx, pointKey{ctx: ctx, id: id, user: userID})
	if err != nil {
		var zero T
		return zero, p.fail("find "+p.object, err)
	}
	return a.v, a.err
}

// run reads keys' records in one statement, in the context of them all
// (combinedContext).
func (p *pointReader[T]) run(r Conn, keys []pointKey) []pointAnswer[T] {
	out := make([]pointAnswer[T], len(keys))
	ids, users := make([]string, len(keys)), make([]string, len(keys))
	ctxs := make([]context.Context, len(keys))
	for i, k := range keys {
		ids[i], users[i], ctxs[i] = k.id, k.user, k.ctx
	}
	ctx, cancel := combinedContext(ctxs)
	defer cancel()
	found := make([]bool, len(keys))
	err := func() error {
		rows, err := r.Query(ctx, p.query, ids, users)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			n := int64(0)
			v, err := p.scan(ordinal{rows, &n})
			if n < 1 || n > int64(len(keys)) || found[n-1] {
				if err == nil {
					err = fmt.Errorf("row numbered %d of %d", n, len(keys))
				}
				return err
			}
			// A record that does not decode fails its own read only.
			out[n-1], found[n-1] = pointAnswer[T]{v: v, err: err}, true
			if err != nil {
				out[n-1].err = p.fail("find "+p.object, err)
			}
		}
		return rows.Err()
	}()
	for i, k := range keys {
		switch {
		case err != nil:
			out[i] = pointAnswer[T]{err: p.fail("find "+p.object, err)}
		case !found[i]:
			out[i].err = ams.NotFound(p.object, k.id)
		}
	}
	return out
}

// ordinal is a row of a combined read: its record's columns, then the
// number of the read it answers, which Scan puts in n.
type ordinal struct {
	rows Rows
	n    *int64
}

func (o ordinal) Scan(dest ...any) error { return o.rows.Scan(append(dest, o.n)...) }

// combinedBound bounds a combined statement none of whose callers has a
// deadline (background work): the next statement of its kind waits for
// it, so it must end.
const combinedBound = 30 * time.Second

// combinedContext is the context of a statement made for several
// callers (ctxs, at least one): the first one's values (its trace) but
// none of their cancellation, since the others wait for it too, and the
// latest of their deadlines (combinedBound when none has one).
func combinedContext(ctxs []context.Context) (context.Context, context.CancelFunc) {
	var until time.Time
	for _, c := range ctxs {
		if d, ok := c.Deadline(); ok && d.After(until) {
			until = d
		}
	}
	base := context.WithoutCancel(ctxs[0])
	if until.IsZero() {
		return context.WithTimeout(base, combinedBound)
	}
	return context.WithDeadline(base, until)
}
