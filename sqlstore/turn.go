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
	idempotency_key, request_hash, lease_until, created_at, updated_at, completed_at, attempt`

func scanTurn(s scanner) (*ams.Turn, error) {
	t := &ams.Turn{Object: "turn"}
	var errText []byte
	var key *string
	var lease, c, u int64
	var done *int64
	if err := s.Scan(&t.ID, &t.UserID, &t.AssistantID, &t.ConversationID, &t.InboundMessageID, &t.ReplyMessageID, &t.Status, &errText,
		&t.CancelRequested, &key, &t.RequestHash, &lease, &c, &u, &done, &t.Attempt); err != nil {
		return nil, err
	}
	t.IdempotencyKey = deref(key)
	t.LeaseUntil, t.CreatedAt, t.UpdatedAt, t.CompletedAt = FromMS(lease), FromMS(c), FromMS(u), fromNullMS(done)
	if errText != nil {
		t.Error = &ams.ActionError{}
		if err := json.Unmarshal(errText, t.Error); err != nil {
			return nil, fmt.Errorf("decode turn error %s: %w", t.ID, err)
		}
	}
	return t, nil
}

func turnError(e *ams.ActionError) (*string, error) {
	if e == nil {
		return nil, nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode turn error: %w", err)
	}
	s := string(b)
	return &s, nil
}

// insertTurn is the statements that store a new turn, running or already
// ended (a turn stored whole at its end): the idempotency key is first
// taken from a turn older than ams.IdempotencyTTL that held it.
func insertTurn(t *ams.Turn) ([]Stmt, error) {
	errText, err := turnError(t.Error)
	if err != nil {
		return nil, err
	}
	lease := MS(t.LeaseUntil)
	if t.Status != ams.TurnRunning {
		lease = 0 // as FinishTurn leaves it
	}
	var out []Stmt
	if t.IdempotencyKey != "" {
		out = append(out, Stmt{"free idempotency key", `UPDATE turns SET idempotency_key = NULL WHERE user_id = $1 AND idempotency_key = $2 AND created_at < $3`,
			[]any{t.UserID, t.IdempotencyKey, MS(t.CreatedAt.Add(-ams.IdempotencyTTL))}})
	}
	return append(out, Stmt{"insert turn", `INSERT INTO turns (` + turnCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, FALSE, $9, $10, $11, $12, $13, $14, 1)`,
		[]any{t.ID, t.UserID, t.AssistantID, t.ConversationID, t.InboundMessageID, t.ReplyMessageID, t.Status, errText,
			nullText(t.IdempotencyKey), t.RequestHash, lease, MS(t.CreatedAt), MS(t.UpdatedAt), nullMS(t.CompletedAt)}}), nil
}

// FindTurn returns the user's turn; ENOTFOUND otherwise.
func (q *Queries) FindTurn(ctx context.Context, userID, id string) (*ams.Turn, error) {
	return findOne(ctx, q, scanTurn, "turn", id, `SELECT `+turnCols+` FROM turns WHERE id = $1 AND user_id = $2`, id, userID)
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

// ClaimTurn makes a failed turn, or a running one whose lease has ended,
// running again under a new lease (one conditional UPDATE: of several
// claimants exactly one wins).
func (q *Queries) ClaimTurn(ctx context.Context, userID, id string, now, leaseUntil time.Time) (*ams.Turn, error) {
	t, err := scanTurn(q.w.QueryRow(ctx, `UPDATE turns SET status = 'running', error = NULL, cancel_requested = FALSE, completed_at = NULL,
		lease_until = $1, updated_at = $2, attempt = attempt + 1
		WHERE id = $3 AND user_id = $4 AND (status = 'failed' OR (status = 'running' AND lease_until < $2)) RETURNING `+turnCols,
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
	if cur.Status == ams.TurnRunning {
		return nil, ams.Errorf(ams.ECONFLICT, "turn_in_progress", "Turn '%s' is still running; wait for it, or follow its stream.", id)
	}
	return nil, ams.Errorf(ams.ECONFLICT, "turn_finished", "Turn '%s' has ended (%s).", id, cur.Status)
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

// FinishTurn ends a running turn, with its reply when there is one.
func (q *Queries) FinishTurn(ctx context.Context, t *ams.Turn, reply *ams.Message, events []*ams.Event, stream ...*ams.TurnEvent) error {
	errText, err := turnError(t.Error)
	if err != nil {
		return err
	}
	return q.inTx(ctx, func(q *Queries) error {
		n, err := q.exec(ctx, "finish turn", `UPDATE turns SET status = $1, error = $2, reply_message_id = $3, completed_at = $4, updated_at = $5,
			lease_until = 0, cancel_requested = FALSE WHERE id = $6 AND user_id = $7 AND status = 'running' AND attempt = $8`,
			t.Status, errText, t.ReplyMessageID, nullMS(t.CompletedAt), MS(t.UpdatedAt), t.ID, t.UserID, t.Attempt)
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
		stmts = append(stmts, Stmt{"insert turn events", `INSERT INTO turn_events (turn_id, seq, type, data, created_at) VALUES ` + valueRows(n, 5), args})
		events = events[n:]
	}
	return stmts
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
