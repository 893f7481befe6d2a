package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/amsdev/ams"
)

const turnCols = `id, user_id, assistant_id, conversation_id, inbound_message_id, reply_message_id, status, error, cancel_requested,
	idempotency_key, request_hash, lease_until, created_at, updated_at, completed_at, attempt,
	background, multitask_strategy, options, required_action, calls, input_tokens, output_tokens, stop_reason, action_expires_at, deadline, action_ids`

// turnOptions is the JSON of a turn's options column: the request's
// per-turn options, and a queued turn's inbound message.
type turnOptions struct {
	Options *ams.TurnOptions `json:"options,omitempty"`
	Message *ams.Message     `json:"message,omitempty"`
	Stream  bool             `json:"stream,omitempty"`
}

func scanTurn(s scanner) (*ams.Turn, error) {
	t := &ams.Turn{Object: "turn"}
	var errText, opts, required, calls, actionIDs []byte
	var key *string
	var lease, c, u int64
	var done, expires, deadline *int64
	if err := s.Scan(&t.ID, &t.UserID, &t.AssistantID, &t.ConversationID, &t.InboundMessageID, &t.ReplyMessageID, &t.Status, &errText,
		&t.CancelRequested, &key, &t.RequestHash, &lease, &c, &u, &done, &t.Attempt,
		&t.Background, &t.MultitaskStrategy, &opts, &required, &calls, &t.Usage.InputTokens, &t.Usage.OutputTokens, &t.StopReason,
		&expires, &deadline, &actionIDs); err != nil {
		return nil, err
	}
	t.IdempotencyKey = deref(key)
	t.LeaseUntil, t.CreatedAt, t.UpdatedAt, t.CompletedAt = FromMS(lease), FromMS(c), FromMS(u), fromNullMS(done)
	t.Deadline = fromNullMS(deadline)
	t.Usage.TotalTokens = t.Usage.InputTokens + t.Usage.OutputTokens
	t.ActionIDs = []string{}
	for _, f := range []struct {
		b    []byte
		v    any
		what string
	}{{errText, &t.Error, "error"}, {required, &t.RequiredAction, "required action"}, {calls, &t.Calls, "calls"}, {actionIDs, &t.ActionIDs, "action ids"}} {
		if len(f.b) > 0 {
			if err := json.Unmarshal(f.b, f.v); err != nil {
				return nil, fmt.Errorf("decode turn %s %s: %w", f.what, t.ID, err)
			}
		}
	}
	if len(opts) > 0 {
		var o turnOptions
		if err := json.Unmarshal(opts, &o); err != nil {
			return nil, fmt.Errorf("decode turn options %s: %w", t.ID, err)
		}
		t.Options, t.QueuedMessage, t.Stream = o.Options, o.Message, o.Stream
		if m := t.QueuedMessage; m != nil {
			m.UserID, m.Object = t.UserID, "message"
		}
	}
	if t.RequiredAction != nil && expires != nil {
		t.RequiredAction.ExpiresAt = FromMS(*expires)
	}
	return t, nil
}

func turnError(e *ams.ActionError) (*string, error) {
	if e == nil {
		return nil, nil
	}
	return jsonText(e, "turn error")
}

// jsonText is v's JSON, or NULL for a nil v.
func jsonText(v any, what string) (*string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	s := string(b)
	return &s, nil
}

// turnState is the JSON and nullable columns of a turn that its stops
// and ends write.
type turnState struct {
	errText, required, calls, actionIDs *string
	expires                             *int64
}

func stateOf(t *ams.Turn) (*turnState, error) {
	st := &turnState{}
	var err error
	if st.errText, err = turnError(t.Error); err != nil {
		return nil, err
	}
	if t.RequiredAction != nil {
		if st.required, err = jsonText(t.RequiredAction, "required action"); err != nil {
			return nil, err
		}
		st.expires = nullMS(&t.RequiredAction.ExpiresAt)
	}
	if len(t.Calls) > 0 {
		if st.calls, err = jsonText(t.Calls, "turn calls"); err != nil {
			return nil, err
		}
	}
	if len(t.ActionIDs) > 0 {
		if st.actionIDs, err = jsonText(t.ActionIDs, "action ids"); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// insertTurn is the statements that store a new turn, queued, running or
// already ended (a turn stored whole at its end): the idempotency key is
// first taken from a turn older than ams.IdempotencyTTL that held it.
func insertTurn(t *ams.Turn) ([]Stmt, error) {
	st, err := stateOf(t)
	if err != nil {
		return nil, err
	}
	var opts *string
	if t.Options != nil || t.QueuedMessage != nil || t.Stream {
		if opts, err = jsonText(turnOptions{Options: t.Options, Message: t.QueuedMessage, Stream: t.Stream}, "turn options"); err != nil {
			return nil, err
		}
	}
	lease := MS(t.LeaseUntil)
	if t.Status != ams.TurnRunning {
		lease = 0 // as FinishTurn leaves it
	}
	strategy := t.MultitaskStrategy
	if strategy == "" {
		strategy = ams.MultitaskEnqueue
	}
	var out []Stmt
	if t.IdempotencyKey != "" {
		out = append(out, Stmt{"free idempotency key", `UPDATE turns SET idempotency_key = NULL WHERE user_id = $1 AND idempotency_key = $2 AND created_at < $3`,
			[]any{t.UserID, t.IdempotencyKey, MS(t.CreatedAt.Add(-ams.IdempotencyTTL))}})
	}
	return append(out, Stmt{opInsertTurn, insertTurnsSQL(1),
		[]any{t.ID, t.UserID, t.AssistantID, t.ConversationID, t.InboundMessageID, t.ReplyMessageID, t.Status, st.errText, false,
			nullText(t.IdempotencyKey), t.RequestHash, lease, MS(t.CreatedAt), MS(t.UpdatedAt), nullMS(t.CompletedAt), 1,
			t.Background, strategy, opts, st.required, st.calls, t.Usage.InputTokens, t.Usage.OutputTokens, t.StopReason,
			st.expires, nullMS(t.Deadline), st.actionIDs}}), nil
}

// opInsertTurn names the insert of new turns (insertTurnsSQL).
const opInsertTurn = "insert turn"

// turnWidth is the parameters of one row of insertTurnsSQL: a value for
// each of turnCols.
const turnWidth = 27

// insertTurnsSQL inserts n turns (turnWidth parameters each). A new
// turn's attempt is 1 and its cancel_requested false.
func insertTurnsSQL(n int) string {
	return `INSERT INTO turns (` + turnCols + `) VALUES ` + valueRows(n, turnWidth)
}

// FindTurn returns the user's turn; ENOTFOUND otherwise.
func (q *Queries) FindTurn(ctx context.Context, userID, id string) (*ams.Turn, error) {
	return findByID(ctx, q, q.s.points.turns, userID, id)
}

// FindTurnByMessage returns the turn of an inbound message.
func (q *Queries) FindTurnByMessage(ctx context.Context, userID, messageID string) (*ams.Turn, error) {
	t, err := findOne(ctx, q, scanTurn, "turn", messageID, `SELECT `+turnCols+` FROM turns WHERE inbound_message_id = $1 AND user_id = $2`, messageID, userID)
	if ams.IsNotFound(err) {
		return nil, ams.NotFound("message", messageID)
	}
	return t, err
}

// FindTurnByKey returns the user's turn started with an idempotency key
// at or after since.
func (q *Queries) FindTurnByKey(ctx context.Context, userID, key string, since time.Time) (*ams.Turn, error) {
	return findOne(ctx, q, scanTurn, "turn", key, `SELECT `+turnCols+` FROM turns WHERE user_id = $1 AND idempotency_key = $2 AND created_at >= $3`,
		userID, key, MS(since))
}

// ListTurns returns a page of the user's turns, of one conversation when
// conversationID is set.
func (q *Queries) ListTurns(ctx context.Context, userID, conversationID string, p ams.ListParams) (*ams.Page[*ams.Turn], error) {
	f := where("user_id = $1", userID)
	if conversationID != "" {
		f.add("conversation_id = $?", conversationID)
	}
	return list(ctx, q, turnCols, "turns", f, p, scanTurn)
}

// openStatuses is the SQL list of the statuses of an unfinished turn:
// the ones that hold a conversation's queue.
const openStatuses = `('queued', 'running', 'requires_action')`

// ClaimTurn makes a failed turn, or a running one whose lease has ended,
// running again under a new lease (one conditional UPDATE: of several
// claimants exactly one wins). A failed turn is not claimed while
// another turn of its conversation runs or waits (conversation_busy).
func (q *Queries) ClaimTurn(ctx context.Context, userID, id string, now, leaseUntil time.Time) (*ams.Turn, error) {
	t, err := scanTurn(q.w.QueryRow(ctx, `UPDATE turns SET status = 'running', error = NULL, cancel_requested = FALSE, completed_at = NULL,
		stop_reason = '', lease_until = $1, updated_at = $2, attempt = attempt + 1
		WHERE id = $3 AND user_id = $4 AND ((status = 'failed' AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.conversation_id = turns.conversation_id
			AND o.user_id = turns.user_id AND o.status IN ('running', 'requires_action')))
		OR (status = 'running' AND lease_until < $2)) RETURNING `+turnCols,
		MS(leaseUntil), MS(now), id, userID))
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, q.fail("claim turn", err)
	}
	cur, err := q.FindTurn(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	switch cur.Status {
	case ams.TurnRunning:
		return nil, ams.Errorf(ams.ECONFLICT, "turn_in_progress", "Turn '%s' is still running; wait for it, or follow its stream.", id)
	case ams.TurnFailed:
		return nil, conversationBusy(cur.ConversationID)
	}
	return nil, ams.Errorf(ams.ECONFLICT, "turn_finished", "Turn '%s' has ended (%s).", id, cur.Status)
}

// conversationBusy is the error of a turn refused because another turn of
// its conversation is unfinished.
func conversationBusy(conv string) error {
	return ams.Errorf(ams.ECONFLICT, "conversation_busy",
		"Conversation '%s' has a turn in progress; wait for it to end, or send with multitask_strategy 'enqueue' or 'interrupt'.", conv)
}

// lockConversation takes the lock of a conversation's row for the rest
// of the transaction (PostgreSQL; SQLite's one writer serializes
// transactions anyway): whatever decides on a conversation's turns
// (admission, the start of a queued turn, a turn's end) takes it first,
// always before a turn's row, so that they run one at a time and never
// deadlock. ENOTFOUND when the conversation is not the user's.
func (q *Queries) lockConversation(ctx context.Context, userID, id string) error {
	lock := q.lock("FOR UPDATE")
	if lock == "" {
		return nil
	}
	ok, err := q.exists(ctx, "conversation", `SELECT 1 FROM conversations WHERE id = $1 AND user_id = $2`+lock, id, userID)
	if err != nil {
		return err
	}
	if !ok {
		return ams.NotFound("conversation", id)
	}
	return nil
}

// AdmitTurn stores the start of turn x.Turn in an existing conversation,
// deciding by its multitask strategy in one transaction, under the
// conversation's lock, what becomes of it when the conversation already
// has unfinished turns (queued, running or requires_action):
//   - enqueue: the turn is stored queued, its inbound message kept in
//     the turn (x.Turn.QueuedMessage) and left out of the conversation
//     (and its message.created out of the events) until it starts;
//   - reject: nothing is stored, ECONFLICT conversation_busy;
//   - interrupt: those turns are cancelled (stop_reason interrupted, each
//     with its turn.cancelled event), and the turn is stored running.
//
// Without unfinished turns it is stored running (as SaveExchange does).
// x.Turn's Status (and for a queued turn, x.Inbound and x.Events) are
// updated to what was stored; the interrupted turns are returned.
func (q *Queries) AdmitTurn(ctx context.Context, x *ams.Exchange) ([]*ams.Turn, error) {
	if x.NewConversation != nil || x.Turn == nil {
		return nil, q.SaveExchange(ctx, x)
	}
	t := x.Turn
	var cut []*ams.Turn
	inbound, events := x.Inbound, x.Events
	err := q.inTx(ctx, func(q *Queries) error {
		x.Inbound, x.Events, t.Status, t.QueuedMessage, cut = inbound, events, ams.TurnRunning, nil, nil
		if err := q.lockConversation(ctx, t.UserID, t.ConversationID); err != nil {
			return err
		}
		open, err := collect(ctx, q.r, "open turns", scanTurn, `SELECT `+turnCols+` FROM turns
			WHERE conversation_id = $1 AND user_id = $2 AND status IN `+openStatuses+` ORDER BY seq`, t.ConversationID, t.UserID)
		if err != nil {
			return err
		}
		if len(open) > 0 {
			switch t.MultitaskStrategy {
			case ams.MultitaskReject:
				return conversationBusy(t.ConversationID)
			case ams.MultitaskInterrupt:
				if cut, err = q.interrupt(ctx, open, t.CreatedAt); err != nil {
					return err
				}
			default:
				t.Status, t.QueuedMessage, x.Inbound = ams.TurnQueued, inbound, nil
				x.Events = nil
				for _, e := range events {
					if e.Type != ams.EventMessageCreated {
						x.Events = append(x.Events, e)
					}
				}
			}
		}
		return q.SaveExchange(ctx, x)
	})
	if err != nil {
		x.Inbound, x.Events = inbound, events
		return nil, err
	}
	return cut, nil
}

// interrupt cancels the unfinished turns open (stop_reason interrupted)
// with their turn.cancelled events.
func (q *Queries) interrupt(ctx context.Context, open []*ams.Turn, now time.Time) ([]*ams.Turn, error) {
	var events []*ams.Event
	for _, o := range open {
		o.Status, o.StopReason, o.UpdatedAt, o.CompletedAt = ams.TurnCancelled, ams.StopInterrupted, now, &now
		o.Error = &ams.ActionError{Type: ams.TypeInvalidRequest, Code: "turn_interrupted", Message: "The turn was interrupted by a newer message to its conversation."}
		o.RequiredAction, o.CancelRequested, o.LeaseUntil = nil, false, time.Time{}
		errText, err := turnError(o.Error)
		if err != nil {
			return nil, err
		}
		if _, err := q.exec(ctx, "interrupt turn", `UPDATE turns SET status = 'cancelled', stop_reason = $1, error = $2, completed_at = $3, updated_at = $3,
			lease_until = 0, cancel_requested = FALSE, required_action = NULL, action_expires_at = NULL WHERE id = $4 AND user_id = $5`,
			ams.StopInterrupted, errText, MS(now), o.ID, o.UserID); err != nil {
			return nil, err
		}
		events = append(events, ams.TurnLifecycleEvent(o, now))
	}
	return open, q.emit(ctx, nil, events)
}

// StartQueuedTurn starts a queued turn that is the first unfinished turn
// of its conversation: it becomes running (attempt 1) with a lease until
// leaseUntil (and, when deadline is set, that deadline), and its inbound
// message joins the conversation now, with its message.created event, in
// one transaction. ECONFLICT (turn_not_next) when the turn is not queued
// or an earlier turn of its conversation is unfinished; ENOTFOUND when
// the turn or its conversation is gone.
func (q *Queries) StartQueuedTurn(ctx context.Context, userID, id string, now, leaseUntil time.Time, deadline *time.Time) (*ams.Turn, error) {
	var started *ams.Turn
	err := q.inTx(ctx, func(q *Queries) error {
		cur, err := q.FindTurn(ctx, userID, id)
		if err != nil {
			return err
		}
		if err := q.lockConversation(ctx, userID, cur.ConversationID); err != nil {
			return err
		}
		t, err := scanTurn(q.w.QueryRow(ctx, `UPDATE turns SET status = 'running', lease_until = $1, updated_at = $2, deadline = $3
			WHERE id = $4 AND user_id = $5 AND status = 'queued' AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.conversation_id = turns.conversation_id
				AND o.user_id = turns.user_id AND o.seq < turns.seq AND o.status IN `+openStatuses+`) RETURNING `+turnCols,
			MS(leaseUntil), MS(now), nullMS(deadline), id, userID))
		if errors.Is(err, sql.ErrNoRows) {
			return ams.Errorf(ams.ECONFLICT, "turn_not_next", "Turn '%s' is not the next of its conversation.", id)
		}
		if err != nil {
			return q.fail("start queued turn", err)
		}
		m := t.QueuedMessage
		if m == nil {
			return fmt.Errorf("start queued turn %s: no inbound message", id)
		}
		m.ID, m.ConversationID, m.AssistantID, m.Direction = t.InboundMessageID, t.ConversationID, t.AssistantID, ams.DirectionInbound
		m.CreatedAt, m.UpdatedAt = now, now
		if m.Metadata == nil {
			m.Metadata = ams.Metadata{}
		}
		started = t
		events := []*ams.Event{ams.MessageCreatedEvent(m)}
		turnEvents(t.ID, events)
		return q.SaveExchange(ctx, &ams.Exchange{ConversationID: t.ConversationID, Inbound: m, Events: events})
	})
	if err != nil {
		return nil, err
	}
	return started, nil
}

// RunnableTurns returns, across accounts, turns that a process should
// take up: running turns whose lease ended before now (their process
// died), and queued turns that are the first unfinished turn of their
// conversation; at most limit of each, oldest first.
func (q *Queries) RunnableTurns(ctx context.Context, now time.Time, limit int) ([]*ams.Turn, error) {
	abandoned, err := collect(ctx, q.r, "abandoned turns", scanTurn, `SELECT `+turnCols+` FROM turns
		WHERE status = 'running' AND lease_until < $1 ORDER BY lease_until LIMIT $2`, MS(now), limit)
	if err != nil {
		return nil, err
	}
	next, err := collect(ctx, q.r, "queued turns", scanTurn, `SELECT `+turnCols+` FROM turns
		WHERE status = 'queued' AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.conversation_id = turns.conversation_id
			AND o.user_id = turns.user_id AND o.seq < turns.seq AND o.status IN `+openStatuses+`) ORDER BY seq LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return append(abandoned, next...), nil
}

// CancelQueuedTurn cancels a queued turn (stop_reason cancelled, code
// turn_cancelled) with its turn.cancelled event, in one transaction, and
// returns it; a turn that is not queued is returned unchanged.
func (q *Queries) CancelQueuedTurn(ctx context.Context, userID, id string, now time.Time) (*ams.Turn, error) {
	var out *ams.Turn
	err := q.inTx(ctx, func(q *Queries) error {
		t, err := findOne(ctx, q, scanTurn, "turn", id, `SELECT `+turnCols+` FROM turns WHERE id = $1 AND user_id = $2`+q.lock("FOR UPDATE"), id, userID)
		if err != nil {
			return err
		}
		out = t
		if t.Status != ams.TurnQueued {
			return nil
		}
		t.Status, t.StopReason, t.UpdatedAt, t.CompletedAt = ams.TurnCancelled, ams.StopCancelled, now, &now
		t.Error = &ams.ActionError{Type: ams.TypeInvalidRequest, Code: "turn_cancelled", Message: "The turn was cancelled."}
		errText, err := turnError(t.Error)
		if err != nil {
			return err
		}
		if _, err := q.exec(ctx, "cancel queued turn", `UPDATE turns SET status = 'cancelled', stop_reason = 'cancelled', error = $1, completed_at = $2, updated_at = $2
			WHERE id = $3 AND user_id = $4 AND status = 'queued'`, errText, MS(now), id, userID); err != nil {
			return err
		}
		return q.emit(ctx, nil, []*ams.Event{ams.TurnLifecycleEvent(t, now)})
	})
	return out, err
}

// NextTurn returns the first unfinished turn of a conversation (queued,
// running or requires_action); ENOTFOUND when there is none.
func (q *Queries) NextTurn(ctx context.Context, userID, conversationID string) (*ams.Turn, error) {
	return findOne(ctx, q, scanTurn, "turn", conversationID, `SELECT `+turnCols+` FROM turns
		WHERE conversation_id = $1 AND user_id = $2 AND status IN `+openStatuses+` ORDER BY seq LIMIT 1`, conversationID, userID)
}

// TokenTotals returns the tokens of the user's turns created at or after
// since.
func (q *Queries) TokenTotals(ctx context.Context, userID string, since time.Time) (ams.Usage, error) {
	var u ams.Usage
	if err := q.r.QueryRow(ctx, `SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM turns WHERE user_id = $1 AND created_at >= $2`,
		userID, MS(since)).Scan(&u.InputTokens, &u.OutputTokens); err != nil {
		return ams.Usage{}, q.fail("sum turn tokens", err)
	}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return u, nil
}

// RenewTurn extends the lease of a running turn's attempt.
func (q *Queries) RenewTurn(ctx context.Context, userID, id string, attempt int, leaseUntil time.Time) (bool, error) {
	var cancel bool
	err := q.w.QueryRow(ctx, `UPDATE turns SET lease_until = $1 WHERE id = $2 AND user_id = $3 AND status = 'running' AND attempt = $4
		RETURNING cancel_requested`, MS(leaseUntil), id, userID, attempt).Scan(&cancel)
	if errors.Is(err, sql.ErrNoRows) {
		return false, ams.Errorf(ams.ECONFLICT, "turn_finished", "Turn '%s' is not running attempt %d.", id, attempt)
	}
	if err != nil {
		return false, q.fail("renew turn", err)
	}
	return cancel, nil
}

// RequestTurnCancel marks a running turn cancel_requested.
func (q *Queries) RequestTurnCancel(ctx context.Context, userID, id string, now time.Time) (*ams.Turn, error) {
	if _, err := q.exec(ctx, "request turn cancel", `UPDATE turns SET cancel_requested = TRUE, updated_at = $1
		WHERE id = $2 AND user_id = $3 AND status = 'running'`, MS(now), id, userID); err != nil {
		return nil, err
	}
	return q.FindTurn(ctx, userID, id)
}

// FinishTurn ends (or, for status requires_action, stops) a running
// turn's attempt, with its reply when there is one. The events given
// carry the turn's lifecycle event (messaging makes it).
func (q *Queries) FinishTurn(ctx context.Context, t *ams.Turn, reply *ams.Message, events []*ams.Event, stream ...*ams.TurnEvent) error {
	st, err := stateOf(t)
	if err != nil {
		return err
	}
	return q.inTx(ctx, func(q *Queries) error {
		if reply != nil {
			// The conversation's lock before the turn's row, as admission
			// takes them.
			if err := q.lockConversation(ctx, t.UserID, t.ConversationID); err != nil {
				return err
			}
		}
		n, err := q.exec(ctx, "finish turn", `UPDATE turns SET status = $1, error = $2, reply_message_id = $3, completed_at = $4, updated_at = $5,
			lease_until = 0, cancel_requested = FALSE, stop_reason = $9, input_tokens = $10, output_tokens = $11, calls = $12, action_ids = $13,
			required_action = $14, action_expires_at = $15
			WHERE id = $6 AND user_id = $7 AND status = 'running' AND attempt = $8`,
			t.Status, st.errText, t.ReplyMessageID, nullMS(t.CompletedAt), MS(t.UpdatedAt), t.ID, t.UserID, t.Attempt,
			t.StopReason, t.Usage.InputTokens, t.Usage.OutputTokens, st.calls, st.actionIDs, st.required, st.expires)
		if err != nil {
			return err
		}
		if n == 0 {
			return ams.Errorf(ams.ECONFLICT, "turn_finished", "Turn '%s' is not running attempt %d.", t.ID, t.Attempt)
		}
		if len(stream) > 0 {
			if err := q.insertTurnEvents(ctx, stream); err != nil {
				return err
			}
		}
		turnEvents(t.ID, events)
		if reply == nil {
			return q.emit(ctx, nil, events)
		}
		return q.SaveExchange(ctx, &ams.Exchange{ConversationID: reply.ConversationID, Reply: reply, Events: events})
	})
}

// turnEvents marks events as the records of turn id's messages.
func turnEvents(id string, events []*ams.Event) {
	for _, e := range events {
		if e.TurnID == nil {
			e.TurnID = &id
		}
	}
}

// AppendTurnEvents stores events of a turn, in one transaction, with one
// multi-row INSERT per turnEventsPerInsert events: a reply streamed word
// by word makes dozens of events, and a statement each cost more than the
// rest of the turn.
func (q *Queries) AppendTurnEvents(ctx context.Context, events []*ams.TurnEvent) error {
	if len(events) == 0 {
		return nil
	}
	return q.inTx(ctx, func(q *Queries) error {
		return q.insertTurnEvents(ctx, events)
	})
}

// turnEventsPerInsert bounds the rows of one INSERT (5 parameters each):
// SQLite's driver looks each numbered parameter up in a list, so a
// statement's binding cost grows with the square of its parameters.
const turnEventsPerInsert = 16

// insertTurnEvents writes events with multi-row INSERTs, pipelined.
func (q *Queries) insertTurnEvents(ctx context.Context, events []*ams.TurnEvent) error {
	_, err := q.batch(ctx, turnEventStmts(events))
	return err
}

// turnEventStmts is the multi-row INSERTs of events.
func turnEventStmts(events []*ams.TurnEvent) []Stmt {
	var stmts []Stmt
	for len(events) > 0 {
		n := min(len(events), turnEventsPerInsert)
		args := make([]any, 0, 5*n)
		for _, e := range events[:n] {
			args = append(args, e.TurnID, e.Seq, e.Type, string(e.Data), MS(e.CreatedAt))
		}
		stmts = append(stmts, Stmt{opInsertTurnEvents, insertTurnEventsSQL(n), args})
		events = events[n:]
	}
	return stmts
}

// opInsertTurnEvents names the insert of a turn's stream events
// (insertTurnEventsSQL).
const opInsertTurnEvents = "insert turn events"

// insertTurnEventsSQL inserts n stream events (5 parameters each).
func insertTurnEventsSQL(n int) string {
	return `INSERT INTO turn_events (turn_id, seq, type, data, created_at) VALUES ` + valueRows(n, 5)
}

// TurnEvents returns the turn's events after seq after.
func (q *Queries) TurnEvents(ctx context.Context, turnID string, after int64, limit int) ([]*ams.TurnEvent, error) {
	return collect(ctx, q.r, "turn events", func(s scanner) (*ams.TurnEvent, error) {
		e := &ams.TurnEvent{}
		var data string
		var c int64
		if err := s.Scan(&e.TurnID, &e.Seq, &e.Type, &data, &c); err != nil {
			return nil, err
		}
		e.Data, e.CreatedAt = json.RawMessage(data), FromMS(c)
		return e, nil
	}, `SELECT turn_id, seq, type, data, created_at FROM turn_events WHERE turn_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, turnID, after, limit)
}

// FindTurnCall returns the action of call seq of a turn.
func (q *Queries) FindTurnCall(ctx context.Context, userID, turnID string, seq int) (*ams.Action, error) {
	return findOne(ctx, q, scanAction, "action", fmt.Sprintf("%s#%d", turnID, seq),
		`SELECT `+actionCols+` FROM actions WHERE turn_id = $1 AND call_seq = $2 AND user_id = $3`, turnID, seq, userID)
}
