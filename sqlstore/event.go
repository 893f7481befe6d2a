package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/amsdev/ams"
)

const eventCols = `id, user_id, type, data, created_at`

func scanEvent(s scanner) (*ams.Event, error) {
	e := &ams.Event{Object: "event"}
	var data []byte
	var c int64
	if err := s.Scan(&e.ID, &e.UserID, &e.Type, &data, &c); err != nil {
		return nil, err
	}
	e.CreatedAt = FromMS(c)
	if err := decodeEventData(data, e); err != nil {
		return nil, err
	}
	return e, nil
}

// An event's envelope fields beyond its data, what caused it (request,
// turn_id) and what a change replaced (previous_attributes), are kept in its data column, under keys no record has
// ("$request", "$turn_id", "$trace", "$test"), so that every reader of the column (the
// listing, the delivery claims of both engines) gets them with the data:
// encodeEventData writes them, decodeEventData takes them out again.
const (
	keyRequest  = "$request"
	keyTurnID   = "$turn_id"
	keyPrevious = "$previous_attributes"
	keyTrace    = "$trace"
	keyTest     = "$test" // true on a test event (POST /v1/events/trigger)
)

// encodeEventData returns the data column of e: its envelope's keys
// (keyRequest and the others, those set), then the data's, in one buffer.
func encodeEventData(e *ams.Event) ([]byte, error) {
	b := make([]byte, 0, 160+ams.DataSize(e.Data))
	b = append(b, '{')
	if e.Request != nil {
		b = append(append(append(b, '"'), keyRequest...), `":`...)
		b = append(ams.AppendEventRequest(b, e.Request), ',')
	}
	if e.TurnID != nil {
		b = append(append(append(b, '"'), keyTurnID...), `":`...)
		b = append(ams.AppendJSONString(b, *e.TurnID), ',')
	}
	if e.PreviousAttributes != nil {
		b = append(append(append(b, '"'), keyPrevious...), `":`...)
		var err error
		if b, err = ams.AppendData(b, e.PreviousAttributes); err != nil {
			return nil, fmt.Errorf("encode event previous_attributes: %w", err)
		}
		b = append(b, ',')
	}
	if e.Trace != "" {
		b = append(append(append(b, '"'), keyTrace...), `":`...)
		b = append(ams.AppendJSONString(b, e.Trace), ',')
	}
	if e.Test {
		b = append(append(append(b, '"'), keyTest...), `":true,`...)
	}
	if len(b) == 1 {
		// No envelope key: the column is the data as it is (null for
		// none, as before).
		data, err := ams.AppendData(b[:0], e.Data)
		if err != nil {
			return nil, fmt.Errorf("encode event data: %w", err)
		}
		return data, nil
	}
	if e.Data == nil {
		return nil, fmt.Errorf("encode event data: not an object")
	}
	// The data's object, written after the envelope's keys, less its
	// opening brace (and the comma before an empty one).
	mark := len(b)
	b, err := ams.AppendData(b, e.Data)
	if err != nil {
		return nil, fmt.Errorf("encode event data: %w", err)
	}
	if len(b)-mark == 2 { // {}
		return append(b[:mark-1], '}'), nil
	}
	copy(b[mark:], b[mark+1:])
	return b[:len(b)-1], nil
}

// decodeEventData decodes e's data column into e.Data, e.Request,
// e.TurnID, e.PreviousAttributes and e.Trace.
func decodeEventData(data []byte, e *ams.Event) error {
	if err := json.Unmarshal(data, &e.Data); err != nil {
		return fmt.Errorf("decode event %s: %w", e.ID, err)
	}
	if r, ok := e.Data[keyRequest].(map[string]any); ok {
		req := &ams.EventRequest{}
		req.ID, _ = r["id"].(string)
		if k, ok := r["idempotency_key"].(string); ok {
			req.IdempotencyKey = &k
		}
		e.Request = req
		delete(e.Data, keyRequest)
	}
	if id, ok := e.Data[keyTurnID].(string); ok {
		e.TurnID = &id
		delete(e.Data, keyTurnID)
	}
	if p, ok := e.Data[keyPrevious].(map[string]any); ok {
		e.PreviousAttributes = p
		delete(e.Data, keyPrevious)
	}
	if tp, ok := e.Data[keyTrace].(string); ok {
		e.Trace = tp
		delete(e.Data, keyTrace)
	}
	if t, ok := e.Data[keyTest].(bool); ok {
		e.Test = t
		delete(e.Data, keyTest)
	}
	return nil
}

// FindEvent returns the user's event; ENOTFOUND otherwise.
func (q *Queries) FindEvent(ctx context.Context, userID, id string) (*ams.Event, error) {
	return findByID(ctx, q, q.s.points.events, userID, id)
}

// eventKey orders events in the catch-up order: by the inserting
// transaction's id, then seq (see Dialect.EventsVisible).
var eventKey = []string{"txid", "seq"}

// ListEvents returns a page of the user's events that match f, in the
// catch-up order, holding back those a running transaction could still
// precede (Dialect.EventsVisible). A cursor need not be visible yet.
func (q *Queries) ListEvents(ctx context.Context, userID string, f ams.EventFilter, p ams.ListParams) (*ams.Page[*ams.Event], error) {
	w := where("user_id = $1", userID)
	if f.Type != "" {
		w.add("type = $?", f.Type)
	}
	if f.NoManagement {
		w.where += " AND type NOT IN (" + ams.ManagementEventList() + ")"
	}
	// Times are whole milliseconds: created_at > t is created_at > t
	// rounded down, created_at < t is created_at < t rounded up.
	if f.CreatedAfter != nil {
		w.add("created_at > $?", MS(*f.CreatedAfter))
	}
	if f.CreatedBefore != nil {
		w.add("created_at < $?", ceilMS(*f.CreatedBefore))
	}
	key := eventKey
	if q.s.d.EventsVisible == "" {
		// Commit order is insert order (SQLite, where every txid is 0):
		// seq alone orders the list, and with txid = 0 said, a cursor is
		// a range on the indexes (user_id[, type], txid, seq) read in
		// order, not a scan and a sort of the account's events from its
		// first one (a row value (txid, seq) narrows only on txid).
		key = nil
		w.where += " AND txid = 0"
	}
	return listOf(ctx, q, listQuery{cols: eventCols, from: "events", f: w, key: key, visible: q.s.d.EventsVisible}, p, scanEvent)
}

// ceilMS is t in Unix milliseconds, rounded up.
func ceilMS(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}

// Emit writes events into the outbox and queues their deliveries; the
// worker of this process is woken after the commit.
func (q *Queries) Emit(ctx context.Context, events ...*ams.Event) error {
	return q.inTx(ctx, func(q *Queries) error { return q.emit(ctx, nil, events) })
}

// emit runs stmts, then for each event its insert into the outbox and its
// fan-out to the subscribed webhooks, in one batch; it counts the jobs
// queued.
func (q *Queries) emit(ctx context.Context, stmts []Stmt, events []*ams.Event) error {
	q.answerFrom(ctx, events)
	evs, err := q.eventStmts(ctx, events, q.tx != nil)
	if err != nil {
		return err
	}
	return q.runEmit(ctx, append(stmts, evs...), len(stmts))
}

// eventStmts is the statements that store events and queue their
// delivery jobs, in pairs (insert, fan-out), for a transaction when tx is
// set. Each event's cause is taken from ctx where it does not say it
// (ams.Event.Cause). They can be made before the transaction begins: on SQLite it runs
// on the one writer, which then only runs them.
func (q *Queries) eventStmts(ctx context.Context, events []*ams.Event, tx bool) ([]Stmt, error) {
	var stmts []Stmt
	for c := range slices.Chunk(events, eventsPerStatement) {
		ins, fan := make([]any, 0, 5*len(c)), make([]any, 0, fanWidth*len(c))
		for _, e := range c {
			e.Cause(ctx)
			data, err := encodeEventData(e)
			if err != nil {
				return nil, err
			}
			ins = append(ins, e.ID, e.UserID, e.Type, string(data), MS(e.CreatedAt))
			asst, conv, meta := e.Facets()
			var metaJSON *string
			if len(meta) > 0 {
				b, err := json.Marshal(meta)
				if err != nil {
					return nil, fmt.Errorf("encode event metadata: %w", err)
				}
				m := string(b)
				metaJSON = &m
			}
			fan = append(fan, e.ID, MS(e.CreatedAt), e.UserID, e.Type, nullText(asst), nullText(conv), metaJSON)
		}
		stmts = append(stmts, Stmt{opInsertEvents, insertEventsSQL(len(c)), ins},
			Stmt{opQueueDeliveries, q.fanOut(len(c), tx), fan})
	}
	return stmts, nil
}

// opInsertEvents and opQueueDeliveries name the statements of
// eventStmts: the insert of events (insertEventsSQL) and their fan-out
// (fanOut).
const (
	opInsertEvents    = "insert event"
	opQueueDeliveries = "queue deliveries"
)

// insertEventsSQL inserts n events (5 parameters each), in order.
func insertEventsSQL(n int) string {
	return `INSERT INTO events (` + eventCols + `) VALUES ` + valueRows(n, 5)
}

// runEmit runs stmts, of which those from head on are eventStmts' pairs,
// in one batch, and counts the jobs queued.
func (q *Queries) runEmit(ctx context.Context, stmts []Stmt, head int) error {
	return q.runEmitLast(ctx, stmts, head, false)
}

// runEmitLast is runEmit for the last statements of a transaction that
// fn of inTx began (began), which may then travel with its COMMIT
// (lastBatch).
func (q *Queries) runEmitLast(ctx context.Context, stmts []Stmt, head int, began bool) error {
	n, err := q.lastBatch(ctx, stmts, began)
	if err != nil {
		return err
	}
	for i := head + 1; i < len(n); i += 2 {
		q.queued(n[i])
	}
	return nil
}

// eventsPerStatement bounds the events of one multi-row INSERT and of one
// fan-out (a turn emits two, for its inbound message and its reply; a
// statement each cost as much as the rows).
const eventsPerStatement = 16

// fanWidth is the number of parameters of one event in fanOut.
const fanWidth = 7

// fanOut queues a delivery job for every active webhook subscribed to
// the type of one of n events (id, time, user, type, and what a filter
// compares: assistant, conversation, metadata as a JSON object; see
// ams.Event.Facets), or to every type ("*", which never takes a
// webhook.ping: pings are queued for their webhook only), the jobs of the
// first event first. A webhook with a filter (ams.WebhookFilter) gets a
// job only for the events it selects: each column of the filter that is
// set must equal the event's (an event without it does not match), so a
// filtered-out event costs no job. A management event
// (ams.ManagementEventTypes) goes only to webhooks with
// management_events. Within a transaction
// (tx) on PostgreSQL it share-locks those webhooks: a concurrent
// deactivation (UpdateWebhook, or a final failure) either waits for this
// transaction and then cancels its jobs, or commits first and is seen
// here, so no pending job outlives its webhook's deactivation. (SQLite's
// single writer gives the same order.)
func (q *Queries) fanOut(n int, tx bool) string {
	k := fanOutKey{n, tx}
	if s, ok := q.s.fanOuts.Load(k); ok {
		return s.(string)
	}
	s := q.makeFanOut(n, tx)
	if n <= maxCachedRows {
		q.s.fanOuts.Store(k, s)
	}
	return s
}

// fanOutKey is a statement of fanOut: its events, and whether it locks.
type fanOutKey struct {
	n  int
	tx bool
}

// makeFanOut makes fanOut's statement.
func (q *Queries) makeFanOut(n int, tx bool) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO webhook_jobs (user_id, webhook_id, event_id, next_at, created_at, updated_at)
	SELECT w.user_id, w.id, e.column1, e.column2, e.column2, e.column2 FROM (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		p := fanWidth*i + 1
		fmt.Fprintf(&b, "(CAST($%d AS TEXT), CAST($%d AS BIGINT), CAST($%d AS TEXT), CAST($%d AS TEXT), %d, CAST($%d AS TEXT), CAST($%d AS TEXT), CAST($%d AS TEXT))",
			p, p+1, p+2, p+3, i, p+4, p+5, p+6)
	}
	b.WriteString(`) AS e JOIN webhook_subscriptions s ON s.user_id = e.column3
		AND s.event_type IN (e.column4, CASE WHEN e.column4 = 'webhook.ping' THEN e.column4 ELSE '*' END)
	JOIN webhooks w ON w.id = s.webhook_id WHERE w.active
		AND (w.management_events OR e.column4 NOT IN (` + ams.ManagementEventList() + `))
		AND (w.filter_assistant_id IS NULL OR w.filter_assistant_id = e.column6)
		AND (w.filter_conversation_id IS NULL OR w.filter_conversation_id = e.column7)
		AND (w.filter_metadata IS NULL OR ` + q.s.d.MetadataHolds("e.column8", "w.filter_metadata") + `)
	ORDER BY e.column5, w.seq` + q.lockIf(tx, "FOR SHARE OF w"))
	return b.String()
}
