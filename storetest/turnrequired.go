package storetest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// pauseTurn stops running turn tr at requires_action of type typ with
// one pending call and one earlier call, as messaging stores it.
func pauseTurn(t *testing.T, s ams.Store, tr *ams.Turn, typ string, at time.Time) *ams.Turn {
	t.Helper()
	end := *tr
	end.Status, end.StopReason, end.UpdatedAt = ams.TurnRequiresAction, ams.StopRequiresAction, at
	end.RequiredAction = &ams.RequiredAction{Type: typ, ExpiresAt: at.Add(10 * time.Minute),
		ToolCalls: []*ams.ToolCallRequest{{ID: "call_2", Name: "create_task", Arguments: json.RawMessage(`{"title":"x"}`)}}}
	end.Calls = []*ams.ToolCallRecord{{ID: "call_1", Name: "list_tasks", Arguments: json.RawMessage(`{}`), Output: `{"status":"succeeded"}`}}
	end.Usage = ams.Usage{InputTokens: 3, OutputTokens: 2, TotalTokens: 5}
	ev := ams.TurnLifecycleEvent(&end, at)
	if err := s.FinishTurn(context.Background(), &end, nil, []*ams.Event{ev}); err != nil {
		t.Fatalf("pause turn: %v", err)
	}
	got, err := s.FindTurn(context.Background(), tr.UserID, tr.ID)
	if err != nil || got.Status != ams.TurnRequiresAction || got.RequiredAction == nil || got.RequiredAction.Type != typ ||
		!got.RequiredAction.ExpiresAt.Equal(at.Add(10*time.Minute)) || len(got.Calls) != 1 || got.CompletedAt != nil {
		t.Fatalf("paused turn: %+v %v", got, err)
	}
	return got
}

// A waiting turn resumes once, with the answered calls and the rejected
// actions stored together, as its next attempt; an answer of the wrong
// type or attempt, a second answer, or another account's is refused and
// changes nothing.
func testTurnRequired(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "required@example.com")
	a := mustAssistant(t, s, u, "r")
	_, tr := startTurn(t, s, u, a, "", t0)
	w := pauseTurn(t, s, tr, ams.RequiredApproveToolCalls, t0.Add(time.Second))

	other := mustUser(t, s, "other-required@example.com")
	rejected := &ams.Action{ID: ams.NewID(ams.PrefixAction), Object: "action", UserID: u.ID, AssistantID: a.ID, ConversationID: w.ConversationID,
		Type: "create_task", Input: json.RawMessage(`{"title":"x"}`), Status: ams.ActionRejected, Error: ams.RejectedError("no"),
		TurnID: w.ID, CallSeq: 2, CreatedAt: t0.Add(2 * time.Second)}
	calls := append(w.Calls, &ams.ToolCallRecord{ID: "call_2", Name: "create_task", Arguments: json.RawMessage(`{"title":"x"}`),
		Output: ams.CallOutput(rejected), Rejected: true, ActionID: rejected.ID})
	now := t0.Add(2 * time.Second)
	resume := func(mod func(r *ams.TurnResume)) (*ams.Turn, error) {
		r := &ams.TurnResume{UserID: u.ID, TurnID: w.ID, Attempt: w.Attempt, Type: ams.RequiredApproveToolCalls, Calls: calls,
			Rejected: []*ams.Action{rejected}, Now: now, LeaseUntil: now.Add(30 * time.Second)}
		if mod != nil {
			mod(r)
		}
		return s.ResumeTurn(ctx, r)
	}
	_, err := resume(func(r *ams.TurnResume) { r.Type = ams.RequiredSubmitToolOutputs })
	wantCode(t, err, "turn_not_waiting")
	_, err = resume(func(r *ams.TurnResume) { r.Attempt++ })
	wantCode(t, err, "turn_not_waiting")
	if _, err := resume(func(r *ams.TurnResume) { r.UserID = other.ID }); !ams.IsNotFound(err) {
		t.Fatalf("another account's turn: %v", err)
	}
	if _, err := s.FindAction(ctx, u.ID, rejected.ID); !ams.IsNotFound(err) {
		t.Fatalf("a refused resume stored the rejected action: %v", err)
	}

	got, err := resume(nil)
	if err != nil || got.Status != ams.TurnRunning || got.Attempt != w.Attempt+1 || got.RequiredAction != nil || len(got.Calls) != 2 ||
		!got.Calls[1].Rejected || !got.LeaseUntil.Equal(now.Add(30*time.Second)) || got.Usage.TotalTokens != 5 || got.StopReason != "" {
		t.Fatalf("resumed: %+v %v", got, err)
	}
	act, err := s.FindAction(ctx, u.ID, rejected.ID)
	if err != nil || act.Status != ams.ActionRejected || act.TurnID != w.ID || act.CallSeq != 2 || act.Error == nil || act.Error.Code != "tool_call_rejected" {
		t.Fatalf("rejected action: %+v %v", act, err)
	}
	_, err = resume(func(r *ams.TurnResume) { r.Rejected = nil })
	wantCode(t, err, "turn_not_waiting")
	// The resumed attempt runs and may stop again.
	if _, err := s.RenewTurn(ctx, u.ID, w.ID, got.Attempt, now.Add(time.Minute)); err != nil {
		t.Fatalf("renew the resumed attempt: %v", err)
	}
}

// Of answers racing to resume one turn, exactly one resumes it.
func testTurnRequiredRace(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "race-required@example.com")
	a := mustAssistant(t, s, u, "r")
	_, tr := startTurn(t, s, u, a, "", t0)
	w := pauseTurn(t, s, tr, ams.RequiredSubmitToolOutputs, t0)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			calls := append(w.Calls, &ams.ToolCallRecord{ID: "call_2", Name: "create_task", Output: "answer"})
			_, errs[i] = s.ResumeTurn(ctx, &ams.TurnResume{UserID: u.ID, TurnID: w.ID, Attempt: w.Attempt, Type: ams.RequiredSubmitToolOutputs,
				Calls: calls, Now: t0, LeaseUntil: t0.Add(time.Minute)})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		default:
			wantCode(t, err, "turn_not_waiting")
		}
	}
	if won != 1 {
		t.Fatalf("%d answers resumed the turn, want 1: %v", won, errs)
	}
	got, err := s.FindTurn(ctx, u.ID, w.ID)
	if err != nil || got.Attempt != w.Attempt+1 {
		t.Fatalf("turn after the race: %+v %v", got, err)
	}
}

// A waiting turn whose action expired is found by the expiry index and
// failed once, with its event; one that was answered is not.
func testTurnRequiredExpiry(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "expiry-required@example.com")
	a := mustAssistant(t, s, u, "r")
	_, tr := startTurn(t, s, u, a, "", t0)
	w := pauseTurn(t, s, tr, ams.RequiredSubmitToolOutputs, t0)
	_, tr2 := startTurn(t, s, u, a, "", t0)
	w2 := pauseTurn(t, s, tr2, ams.RequiredSubmitToolOutputs, t0.Add(time.Minute))

	due, err := s.DueRequiredActions(ctx, t0.Add(10*time.Minute-time.Millisecond), 10)
	if err != nil || len(due) != 0 {
		t.Fatalf("due before expiry: %v %v", due, err)
	}
	at := t0.Add(10*time.Minute + 30*time.Second)
	due, err = s.DueRequiredActions(ctx, at, 10)
	if err != nil || len(due) != 1 || due[0].ID != w.ID {
		t.Fatalf("due: %v %v", due, err)
	}
	fail := func(x *ams.Turn) (bool, error) {
		end := *x
		end.Status, end.StopReason, end.UpdatedAt, end.CompletedAt, end.RequiredAction = ams.TurnFailed, ams.StopError, at, &at, nil
		end.Error = &ams.ActionError{Type: ams.TypeInvalidRequest, Code: "required_action_expired", Message: "expired"}
		stream := &ams.TurnEvent{TurnID: x.ID, Seq: 1, Type: "turn.failed", Data: json.RawMessage(`{}`), CreatedAt: at}
		return s.ExpireRequiredAction(ctx, &end, at, []*ams.Event{ams.TurnLifecycleEvent(&end, at)}, stream)
	}
	if ok, err := fail(w2); ok || err != nil {
		t.Fatalf("a turn not yet expired was failed: %v %v", ok, err)
	}
	if ok, err := fail(due[0]); !ok || err != nil {
		t.Fatalf("expire: %v %v", ok, err)
	}
	if ok, err := fail(due[0]); ok || err != nil {
		t.Fatalf("expired twice: %v %v", ok, err)
	}
	got, err := s.FindTurn(ctx, u.ID, w.ID)
	if err != nil || got.Status != ams.TurnFailed || got.Error == nil || got.Error.Code != "required_action_expired" || got.RequiredAction != nil ||
		got.CompletedAt == nil {
		t.Fatalf("expired turn: %+v %v", got, err)
	}
	evs, err := s.TurnEvents(ctx, w.ID, 0, 10)
	if err != nil || len(evs) != 1 || evs[0].Type != "turn.failed" {
		t.Fatalf("stream of the expired turn: %v %v", evs, err)
	}
	_, err = s.ResumeTurn(ctx, &ams.TurnResume{UserID: u.ID, TurnID: w.ID, Attempt: w.Attempt, Type: ams.RequiredSubmitToolOutputs, Now: at, LeaseUntil: at})
	wantCode(t, err, "turn_not_waiting")
	if due, err = s.DueRequiredActions(ctx, at.Add(time.Hour), 10); err != nil || len(due) != 1 || due[0].ID != w2.ID {
		t.Fatalf("due later: %v %v", due, err)
	}
}
