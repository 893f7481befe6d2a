package messaging

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/amsdev/ams"
)

// turnTools runs an engine's tool calls for a turn: each call is numbered;
// a call whose number committed in an earlier attempt of the turn, with
// the same tool, returns the stored action instead of running again. Every
// call renews the lease, which also reads a cancel asked elsewhere, and
// is told on the turn's stream (tool_call, then tool_result).
type turnTools struct {
	inner ams.Toolbox
	r     *Run
	mu    sync.Mutex
	n     int
}

func (b *turnTools) Specs() []ams.ToolSpec { return b.inner.Specs() }

// Run implements ams.Toolbox.
func (b *turnTools) Run(ctx context.Context, name string, input json.RawMessage) (*ams.Action, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, s, t := b.r, b.r.s, b.r.Turn
	// A call acts: the turn's deferred start is stored first, so that
	// the action's turn and conversation exist and a retry finds it (not
	// cut short by the engine's deadline: a turn that timed out is then
	// recorded as such).
	if err := r.storeStart(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	r.renew(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.n++
	args := input
	if !json.Valid(args) {
		args, _ = json.Marshal(string(input))
	}
	r.log.emit(EventToolCall, ToolCallData{TurnID: t.ID, CallSeq: b.n, Name: name, Arguments: args})
	for {
		act, err := s.Store.FindTurnCall(ctx, t.UserID, t.ID, b.n)
		if ams.IsNotFound(err) {
			break
		}
		if err != nil {
			return nil, err
		}
		if act.Type == name {
			r.log.emit(EventToolResult, ToolResultData{TurnID: t.ID, CallSeq: b.n, Name: name, Action: act, Replayed: true})
			r.addAction(act.ID)
			return act, nil
		}
		// The engine chose another tool this time: the call gets the
		// next free number, and the committed one stays as it was.
		b.n++
	}
	act, err := b.inner.Run(ams.WithToolCall(ctx, ams.ToolCall{TurnID: t.ID, Seq: b.n}), name, input)
	if err != nil {
		return nil, err
	}
	r.log.emit(EventToolResult, ToolResultData{TurnID: t.ID, CallSeq: b.n, Name: name, Action: act})
	r.addAction(act.ID)
	return act, nil
}

// Turn returns the user's turn.
func (s *Service) Turn(ctx context.Context, userID, id string) (*ams.Turn, error) {
	return s.Store.FindTurn(ctx, userID, id)
}

// TurnOfMessage returns the turn whose inbound message is messageID.
func (s *Service) TurnOfMessage(ctx context.Context, userID, messageID string) (*ams.Turn, error) {
	return s.Store.FindTurnByMessage(ctx, userID, messageID)
}

// CancelWait is how long Cancel waits for a turn running in this process
// to stop, so that its answer shows the turn cancelled.
const CancelWait = 5 * time.Second

// Cancel stops a running turn and returns it. In this process the turn's
// context is cancelled and Cancel waits for it to be recorded cancelled;
// a turn running in another process is marked cancel_requested, which
// that process reads at its next tool call or lease renewal; a turn whose
// process died (lease lapsed) is recorded cancelled at once. A turn that
// has ended is returned unchanged.
func (s *Service) Cancel(ctx context.Context, userID, turnID string) (*ams.Turn, error) {
	t, err := s.Store.FindTurn(ctx, userID, turnID)
	if ams.IsNotFound(err) {
		// A turn of this process whose start is deferred (not stored
		// yet, or stored since the lookup): it is stored cancelled.
		if r := s.running(turnID); r != nil && r.Turn.UserID == userID {
			r.requestCancel()
			select {
			case <-r.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return s.Store.FindTurn(ctx, userID, turnID)
	}
	if err != nil {
		return nil, err
	}
	if t.Status == ams.TurnRequiresAction {
		return s.cancelWaiting(ctx, t) // required.go
	}
	if t.Status == ams.TurnQueued {
		// Not started: cancelled where it waits; its waiting send (in
		// any process) sees it at its next look.
		c, err := s.Store.CancelQueuedTurn(ctx, userID, turnID, s.Clock.Now())
		if err == nil && c.Status == ams.TurnCancelled {
			s.wakeWaiters()
			go s.advance(context.WithoutCancel(ctx), userID, c.ConversationID)
		}
		return c, err
	}
	if t.Status != ams.TurnRunning {
		return t, nil
	}
	if r := s.running(turnID); r != nil {
		r.requestCancel()
		select {
		case <-r.done:
		case <-time.After(CancelWait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return s.Store.FindTurn(ctx, userID, turnID)
	}
	now := s.Clock.Now()
	if t.LeaseUntil.Before(now) {
		claimed, err := s.Store.ClaimTurn(ctx, userID, turnID, now, now.Add(s.lease()))
		if err == nil {
			end := *claimed
			end.Status, end.UpdatedAt, end.CompletedAt = ams.TurnCancelled, now, &now
			end.Error = apiError(ams.Errorf(ams.ECONFLICT, "turn_cancelled", "The turn was cancelled."))
			if err := s.Store.FinishTurn(ctx, &end, nil, nil); err != nil {
				return nil, err
			}
			last, _ := s.lastEventSeq(ctx, turnID)
			b, _ := json.Marshal(ErrorData{Error: end.Error})
			if err := s.Store.AppendTurnEvents(ctx, []*ams.TurnEvent{{TurnID: turnID, Seq: last + 1, Type: EventError, Data: b, CreatedAt: now}}); err != nil {
				s.logger().Warn("store cancel event", "turn", turnID, "err", err)
			}
			return s.Store.FindTurn(ctx, userID, turnID)
		}
		var e *ams.Error
		if !errors.As(err, &e) || e.Kind != ams.ECONFLICT {
			return nil, err
		}
	}
	return s.Store.RequestTurnCancel(ctx, userID, turnID, now)
}

// ListTurns returns a page of the user's turns, of one conversation when
// conversationID is set.
func (s *Service) ListTurns(ctx context.Context, userID, conversationID string, p ams.ListParams) (*ams.Page[*ams.Turn], error) {
	return s.Store.ListTurns(ctx, userID, conversationID, p)
}

// LastAttempt returns the stored events of a turn's last attempt (from its
// last turn.started), for replaying the stream of a completed turn.
func (s *Service) LastAttempt(ctx context.Context, turnID string) ([]*ams.TurnEvent, error) {
	var all []*ams.TurnEvent
	var last int64
	for {
		evs, err := s.Store.TurnEvents(ctx, turnID, last, 1000)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		all = append(all, evs...)
		last = evs[len(evs)-1].Seq
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Type == EventTurnStarted {
			return all[i:], nil
		}
	}
	return all, nil
}
