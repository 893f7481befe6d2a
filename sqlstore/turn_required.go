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

// Turns waiting for their required action (tool outputs or approvals):
// resumed by the answer, or failed when it expires. See
// ams.TurnRequiredStore.

// notWaiting is the conflict of an answer to a turn that does not wait
// for it.
func notWaiting(id string) error {
	return ams.Errorf(ams.ECONFLICT, "turn_not_waiting", "Turn '%s' is not waiting for this answer (it was answered, expired or ended).", id)
}

// ResumeTurn makes a turn waiting in requires_action running again: one
// conditional UPDATE on its status, attempt and required action's type,
// so that of two answers exactly one resumes it.
func (q *Queries) ResumeTurn(ctx context.Context, r *ams.TurnResume) (*ams.Turn, error) {
	var calls *string
	if len(r.Calls) > 0 {
		b, err := json.Marshal(r.Calls)
		if err != nil {
			return nil, fmt.Errorf("encode turn calls: %w", err)
		}
		s := string(b)
		calls = &s
	}
	var out *ams.Turn
	err := q.inTx(ctx, func(q *Queries) error {
		var raw []byte
		err := q.w.QueryRow(ctx, `SELECT required_action FROM turns WHERE id = $1 AND user_id = $2 AND status = 'requires_action' AND attempt = $3`+q.lock("FOR UPDATE"),
			r.TurnID, r.UserID, r.Attempt).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			if _, ferr := q.FindTurn(ctx, r.UserID, r.TurnID); ferr != nil {
				return ferr
			}
			return notWaiting(r.TurnID)
		}
		if err != nil {
			return q.fail("find waiting turn", err)
		}
		var ra ams.RequiredAction
		if json.Unmarshal(raw, &ra) != nil || ra.Type != r.Type {
			return notWaiting(r.TurnID)
		}
		n, err := q.exec(ctx, "resume turn", `UPDATE turns SET status = 'running', required_action = NULL, action_expires_at = NULL, calls = $1,
			stop_reason = '', cancel_requested = FALSE, lease_until = $2, updated_at = $3, attempt = attempt + 1, deadline = COALESCE(CAST($7 AS BIGINT), deadline)
			WHERE id = $4 AND user_id = $5 AND status = 'requires_action' AND attempt = $6`,
			calls, MS(r.LeaseUntil), MS(r.Now), r.TurnID, r.UserID, r.Attempt, nullMS(r.Deadline))
		if err != nil {
			return err
		}
		if n == 0 {
			return notWaiting(r.TurnID)
		}
		for _, a := range r.Rejected {
			if err := q.CreateAction(ctx, a); err != nil {
				return err
			}
		}
		out, err = q.FindTurn(ctx, r.UserID, r.TurnID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DueRequiredActions returns the waiting turns whose action expired.
func (q *Queries) DueRequiredActions(ctx context.Context, now time.Time, limit int) ([]*ams.Turn, error) {
	return collect(ctx, q.r, "due required actions", scanTurn, `SELECT `+turnCols+` FROM turns
		WHERE status = 'requires_action' AND action_expires_at <= $1 ORDER BY action_expires_at LIMIT $2`, MS(now), limit)
}

// ExpireRequiredAction fails a waiting turn whose action expired.
func (q *Queries) ExpireRequiredAction(ctx context.Context, t *ams.Turn, now time.Time, events []*ams.Event, stream ...*ams.TurnEvent) (bool, error) {
	errText, err := turnError(t.Error)
	if err != nil {
		return false, err
	}
	done := false
	err = q.inTx(ctx, func(q *Queries) error {
		n, err := q.exec(ctx, "expire required action", `UPDATE turns SET status = $1, error = $2, stop_reason = $3, completed_at = $4, updated_at = $5,
			required_action = NULL, action_expires_at = NULL, lease_until = 0
			WHERE id = $6 AND user_id = $7 AND status = 'requires_action' AND action_expires_at <= $8`,
			t.Status, errText, t.StopReason, nullMS(t.CompletedAt), MS(t.UpdatedAt), t.ID, t.UserID, MS(now))
		if err != nil || n == 0 {
			return err
		}
		done = true
		if len(stream) > 0 {
			if err := q.insertTurnEvents(ctx, stream); err != nil {
				return err
			}
		}
		turnEvents(t.ID, events)
		return q.emit(ctx, nil, events)
	})
	return done && err == nil, err
}
