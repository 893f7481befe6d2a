package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
)

// admit sends text to conversation conv with strategy as messaging does:
// an inbound message and a running turn, admitted by AdmitTurn.
func admit(t *testing.T, s ams.Store, u *ams.User, a *ams.Assistant, conv, text, strategy string, at time.Time) (*ams.Exchange, []*ams.Turn, error) {
	t.Helper()
	x := exchange(u, a, conv, false, text, at)
	x.Reply = nil
	x.Events = x.Events[:1]
	x.Turn = &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: u.ID, AssistantID: a.ID, ConversationID: conv,
		InboundMessageID: x.Inbound.ID, Status: ams.TurnRunning, RequestHash: "h", MultitaskStrategy: strategy,
		Options: &ams.TurnOptions{MaxOutputTokens: 7}, Stream: true, LeaseUntil: at.Add(30 * time.Second), Attempt: 1, CreatedAt: at, UpdatedAt: at}
	cut, err := s.AdmitTurn(context.Background(), x)
	return x, cut, err
}

// finish completes turn tr (attempt tr.Attempt) with a reply, its
// message.created and turn.completed events, as messaging does.
func finish(t *testing.T, s ams.Store, tr *ams.Turn, at time.Time) (*ams.Message, error) {
	t.Helper()
	end := *tr
	reply := &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: tr.UserID, AssistantID: tr.AssistantID, ConversationID: tr.ConversationID,
		Direction: ams.DirectionOutbound, Content: "re " + tr.ID, Metadata: ams.Metadata{}, CreatedAt: at, UpdatedAt: at}
	end.Status, end.StopReason, end.ReplyMessageID, end.UpdatedAt, end.CompletedAt = ams.TurnCompleted, ams.StopEndTurn, reply.ID, at, &at
	end.Usage = ams.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}
	end.ActionIDs = []string{"act_1", "act_2"}
	return reply, s.FinishTurn(context.Background(), &end, reply, []*ams.Event{ams.MessageCreatedEvent(reply), ams.TurnLifecycleEvent(&end, at)})
}

func countTurns(t *testing.T, s ams.Store, u *ams.User, conv string) int {
	t.Helper()
	p, err := s.ListTurns(context.Background(), u.ID, conv, ams.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(p.Data)
}

// eventsOf lists the user's events of type typ once at least want are
// listed (on PostgreSQL an event is listed once the transactions before
// it, of other tests too, have ended), or after a while.
func eventsOf(t *testing.T, s ams.Store, u *ams.User, typ string, want int) []*ams.Event {
	t.Helper()
	var got []*ams.Event
	wait.Until(func() bool {
		p, err := s.ListEvents(context.Background(), u.ID, ams.EventFilter{Type: typ}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
		if err != nil {
			t.Fatal(err)
		}
		got = p.Data
		return len(got) >= want
	})
	return got
}

// testTurnQueue: double texting in the store. Sends to a conversation
// with a running turn are queued (their message kept out of the
// conversation), start one at a time in commit order once the turn
// before them ended (their message joining the conversation then), are
// refused with reject (nothing stored), and interrupt cancels the
// unfinished turns (whose process is then fenced).
func testTurnQueue(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "queue@example.com")
	a := mustAssistant(t, s, u, "q")
	x1, t1 := startTurn(t, s, u, a, "", t0)
	conv := x1.ConversationID

	x2, cut, err := admit(t, s, u, a, conv, "second", ams.MultitaskEnqueue, t0.Add(time.Second))
	if err != nil || len(cut) != 0 || x2.Turn.Status != ams.TurnQueued || x2.Inbound != nil {
		t.Fatalf("enqueue: %v %v %+v", err, cut, x2.Turn)
	}
	x3, _, err := admit(t, s, u, a, conv, "third", "", t0.Add(2*time.Second)) // "" is enqueue
	if err != nil || x3.Turn.Status != ams.TurnQueued {
		t.Fatalf("enqueue by default: %v %+v", err, x3.Turn)
	}
	t2, t3 := x2.Turn, x3.Turn
	got, err := s.FindTurn(ctx, u.ID, t2.ID)
	if err != nil || got.Status != ams.TurnQueued || got.QueuedMessage == nil || got.QueuedMessage.Content != "second" ||
		got.Options == nil || got.Options.MaxOutputTokens != 7 || got.MultitaskStrategy != ams.MultitaskEnqueue || !got.Stream {
		t.Fatalf("queued turn: %+v %v", got, err)
	}
	if _, err := s.FindMessage(ctx, u.ID, t2.InboundMessageID); !ams.IsNotFound(err) {
		t.Fatalf("a queued turn's message is in the conversation: %v", err)
	}
	if c, _ := s.FindConversation(ctx, u.ID, conv); c.MessageCount != 1 {
		t.Fatalf("message count with queued turns: %d", c.MessageCount)
	}
	if n := len(eventsOf(t, s, u, ams.EventMessageCreated, 1)); n != 1 {
		t.Fatalf("%d message.created with two turns queued, want the running turn's", n)
	}
	if next, err := s.NextTurn(ctx, u.ID, conv); err != nil || next.ID != t1.ID {
		t.Fatalf("next turn: %v %v", next, err)
	}

	// Reject: 409 conversation_busy, nothing stored.
	before := countTurns(t, s, u, conv)
	xr, _, err := admit(t, s, u, a, conv, "rejected", ams.MultitaskReject, t0.Add(3*time.Second))
	wantCode(t, err, "conversation_busy")
	if countTurns(t, s, u, conv) != before {
		t.Fatal("a rejected send stored a turn")
	}
	if _, err := s.FindMessage(ctx, u.ID, xr.Inbound.ID); !ams.IsNotFound(err) {
		t.Fatalf("a rejected send stored its message: %v", err)
	}

	// Nothing starts while the turn before runs; not out of order.
	now := t0.Add(4 * time.Second)
	for _, q := range []*ams.Turn{t2, t3} {
		_, err := s.StartQueuedTurn(ctx, u.ID, q.ID, now, now.Add(30*time.Second), nil)
		wantCode(t, err, "turn_not_next")
	}
	run, err := s.RunnableTurns(ctx, now, 10)
	if err != nil || len(run) != 0 {
		t.Fatalf("runnable while the first runs: %v %v", run, err)
	}
	reply1, err := finish(t, s, t1, now)
	if err != nil {
		t.Fatal(err)
	}
	done := eventsOf(t, s, u, ams.EventTurnCompleted, 1)
	if len(done) != 1 || done[0].TurnID == nil || *done[0].TurnID != t1.ID || done[0].Data["id"] != t1.ID || done[0].Data["status"] != "completed" {
		t.Fatalf("turn.completed in the outbox: %+v", done)
	}
	run, err = s.RunnableTurns(ctx, now, 10)
	if err != nil || len(run) != 1 || run[0].ID != t2.ID {
		t.Fatalf("runnable after the first ended: %v %v", run, err)
	}
	_, err = s.StartQueuedTurn(ctx, u.ID, t3.ID, now, now.Add(30*time.Second), nil)
	wantCode(t, err, "turn_not_next")
	later := now.Add(time.Second)
	deadline := later.Add(10 * time.Minute)
	started, err := s.StartQueuedTurn(ctx, u.ID, t2.ID, later, later.Add(30*time.Second), &deadline)
	if err != nil || started.Status != ams.TurnRunning || started.Attempt != 1 || started.Deadline == nil || !started.Deadline.Equal(deadline) ||
		!started.Stream {
		t.Fatalf("start the next turn: %+v %v", started, err)
	}
	_, err = s.StartQueuedTurn(ctx, u.ID, t2.ID, later, later.Add(30*time.Second), nil)
	wantCode(t, err, "turn_not_next") // started once
	// Its message joined the conversation when it started: the history
	// alternates.
	msgs, err := s.RecentMessages(ctx, u.ID, conv, 10)
	if err != nil || len(msgs) != 3 || msgs[0].ID != x1.Inbound.ID || msgs[1].ID != reply1.ID || msgs[2].ID != t2.InboundMessageID ||
		!msgs[2].CreatedAt.Equal(later) || msgs[2].Content != "second" {
		t.Fatalf("history after the queued turn started: %v %v", msgs, err)
	}
	mc := eventsOf(t, s, u, ams.EventMessageCreated, 3)
	if last := mc[len(mc)-1]; last.Data["message_id"] != t2.InboundMessageID || last.TurnID == nil || *last.TurnID != t2.ID {
		t.Fatalf("message.created of the started turn: %+v", last)
	}

	// Interrupt: the running turn and the queued one are cancelled, the
	// new one runs; the interrupted turn's process is fenced.
	x4, cut, err := admit(t, s, u, a, conv, "stop, do this", ams.MultitaskInterrupt, later.Add(time.Second))
	if err != nil || x4.Turn.Status != ams.TurnRunning || len(cut) != 2 || cut[0].ID != t2.ID || cut[1].ID != t3.ID {
		t.Fatalf("interrupt: %v %+v %v", err, x4.Turn, cut)
	}
	for _, id := range []string{t2.ID, t3.ID} {
		got, err := s.FindTurn(ctx, u.ID, id)
		if err != nil || got.Status != ams.TurnCancelled || got.StopReason != ams.StopInterrupted || got.CompletedAt == nil ||
			got.Error == nil || got.Error.Code != "turn_interrupted" {
			t.Fatalf("interrupted turn: %+v %v", got, err)
		}
	}
	if ev := eventsOf(t, s, u, ams.EventTurnCancelled, 2); len(ev) != 2 || ev[0].Data["stop_reason"] != "interrupted" {
		t.Fatalf("turn.cancelled events: %+v", ev)
	}
	if _, err := s.RenewTurn(ctx, u.ID, t2.ID, 1, later.Add(time.Minute)); ams.ErrorKindOf(err) != ams.ECONFLICT {
		t.Fatalf("renew of an interrupted turn: %v", err)
	}
	if _, err := finish(t, s, started, later.Add(2*time.Second)); ams.ErrorKindOf(err) != ams.ECONFLICT {
		t.Fatalf("finish of an interrupted turn: %v", err)
	}
	if n, _ := s.FindConversation(ctx, u.ID, conv); n.MessageCount != 4 {
		t.Fatalf("message count: %d, want 4 (no reply of the interrupted turn)", n.MessageCount)
	}
	// A failed turn is not claimed again while another one runs.
	if next, err := s.NextTurn(ctx, u.ID, conv); err != nil || next.ID != x4.Turn.ID {
		t.Fatalf("next turn after the interrupt: %v %v", next, err)
	}
	// A queued turn is cancelled where it waits.
	x5, _, err := admit(t, s, u, a, conv, "never mind", "", later.Add(2*time.Second))
	if err != nil || x5.Turn.Status != ams.TurnQueued {
		t.Fatalf("queued behind the interrupting turn: %v %+v", err, x5.Turn)
	}
	c5, err := s.CancelQueuedTurn(ctx, u.ID, x5.Turn.ID, later.Add(3*time.Second))
	if err != nil || c5.Status != ams.TurnCancelled || c5.StopReason != ams.StopCancelled || c5.Error == nil || c5.Error.Code != "turn_cancelled" {
		t.Fatalf("cancel a queued turn: %+v %v", c5, err)
	}
	if again, err := s.CancelQueuedTurn(ctx, u.ID, x4.Turn.ID, later); err != nil || again.Status != ams.TurnRunning {
		t.Fatalf("cancel of a running turn through CancelQueuedTurn: %+v %v", again, err)
	}
	if ev := eventsOf(t, s, u, ams.EventTurnCancelled, 3); len(ev) != 3 {
		t.Fatalf("turn.cancelled of the queued turn: %d events", len(ev))
	}
	// Another account sees none of it.
	other := mustUser(t, s, "queue-other@example.com")
	if _, err := s.NextTurn(ctx, other.ID, conv); !ams.IsNotFound(err) {
		t.Fatalf("next turn of another account: %v", err)
	}
	_, err = s.StartQueuedTurn(ctx, other.ID, t3.ID, now, now, nil)
	wantKind(t, err, ams.ENOTFOUND)
	_, err = s.CancelQueuedTurn(ctx, other.ID, x5.Turn.ID, now)
	wantKind(t, err, ams.ENOTFOUND)
}

// testTurnTakeover: a running turn whose lease lapsed (its process died)
// is found by RunnableTurns and claimed by exactly one process; the
// process that lost it is fenced (its renewals and its end refused); the
// new attempt's end stores usage, stop reason, action ids, calls and a
// required action; the tokens add up per account.
func testTurnTakeover(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "takeover@example.com")
	a := mustAssistant(t, s, u, "t")
	conv := ams.NewID(ams.PrefixConversation)
	x := exchange(u, a, conv, true, "background", t0)
	x.Reply, x.Events = nil, x.Events[:1]
	deadline := t0.Add(10 * time.Minute)
	tr := &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: u.ID, AssistantID: a.ID, ConversationID: conv,
		InboundMessageID: x.Inbound.ID, Status: ams.TurnRunning, RequestHash: "h", Background: true, Deadline: &deadline,
		MultitaskStrategy: ams.MultitaskReject, LeaseUntil: t0.Add(30 * time.Second), Attempt: 1, CreatedAt: t0, UpdatedAt: t0}
	x.Turn = tr
	if err := s.SaveExchange(ctx, x); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindTurn(ctx, u.ID, tr.ID)
	if err != nil || !got.Background || got.Deadline == nil || !got.Deadline.Equal(deadline) || got.MultitaskStrategy != ams.MultitaskReject {
		t.Fatalf("background turn: %+v %v", got, err)
	}
	if run, _ := s.RunnableTurns(ctx, t0.Add(10*time.Second), 10); len(run) != 0 {
		t.Fatalf("runnable under a live lease: %v", run)
	}
	lapsed := t0.Add(31 * time.Second)
	run, err := s.RunnableTurns(ctx, lapsed, 10)
	if err != nil || len(run) != 1 || run[0].ID != tr.ID {
		t.Fatalf("abandoned turn not found: %v %v", run, err)
	}
	// Two processes claim it: one wins.
	type res struct {
		t   *ams.Turn
		err error
	}
	out := make(chan res, 2)
	for range 2 {
		go func() {
			c, err := s.ClaimTurn(ctx, u.ID, tr.ID, lapsed, lapsed.Add(30*time.Second))
			out <- res{c, err}
		}()
	}
	var won *ams.Turn
	for range 2 {
		r := <-out
		if r.err == nil {
			if won != nil {
				t.Fatal("two processes claimed one abandoned turn")
			}
			won = r.t
		} else {
			wantCode(t, r.err, "turn_in_progress")
		}
	}
	if won == nil || won.Attempt != 2 || !won.Background {
		t.Fatalf("claim: %+v", won)
	}
	// The process that lost its lease is fenced.
	if _, err := s.RenewTurn(ctx, u.ID, tr.ID, 1, lapsed.Add(time.Minute)); ams.ErrorKindOf(err) != ams.ECONFLICT {
		t.Fatalf("renew by the fenced process: %v", err)
	}
	stale := *tr
	stale.Status, stale.CompletedAt, stale.UpdatedAt = ams.TurnFailed, &lapsed, lapsed
	err = s.FinishTurn(ctx, &stale, nil, []*ams.Event{ams.TurnLifecycleEvent(&stale, lapsed)})
	wantCode(t, err, "turn_finished")
	if ev := eventsOf(t, s, u, ams.EventTurnFailed, 0); len(ev) != 0 {
		t.Fatalf("the fenced process's event was stored: %v", ev)
	}

	// The new attempt stops at requires_action, then completes.
	at := lapsed.Add(time.Second)
	paused := *won
	paused.Status, paused.StopReason, paused.UpdatedAt = ams.TurnRequiresAction, ams.StopRequiresAction, at
	paused.RequiredAction = &ams.RequiredAction{Type: ams.RequiredSubmitToolOutputs, ExpiresAt: at.Add(10 * time.Minute),
		ToolCalls: []*ams.ToolCallRequest{{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"q":1}`)}}}
	paused.Calls = []*ams.ToolCallRecord{{ID: "call_0", Name: "create_task", Arguments: json.RawMessage(`{}`), Output: "{}", ActionID: "act_9"}}
	paused.ActionIDs = []string{"act_9"}
	paused.Usage = ams.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}
	if err := s.FinishTurn(ctx, &paused, nil, []*ams.Event{ams.TurnLifecycleEvent(&paused, at)}); err != nil {
		t.Fatal(err)
	}
	got, err = s.FindTurn(ctx, u.ID, tr.ID)
	if err != nil || got.Status != ams.TurnRequiresAction || got.RequiredAction == nil || got.RequiredAction.Type != ams.RequiredSubmitToolOutputs ||
		len(got.RequiredAction.ToolCalls) != 1 || got.RequiredAction.ToolCalls[0].Name != "lookup" || !got.RequiredAction.ExpiresAt.Equal(at.Add(10*time.Minute)) ||
		len(got.Calls) != 1 || got.Calls[0].ActionID != "act_9" || len(got.ActionIDs) != 1 || got.Usage.TotalTokens != 7 ||
		got.StopReason != ams.StopRequiresAction || got.CompletedAt != nil {
		t.Fatalf("turn waiting for outputs: %+v %v", got, err)
	}
	if ev := eventsOf(t, s, u, ams.EventTurnRequiresAction, 1); len(ev) != 1 || ev[0].Data["required_action"] == nil {
		t.Fatalf("turn.requires_action: %+v", ev)
	}
	if next, err := s.NextTurn(ctx, u.ID, conv); err != nil || next.ID != tr.ID {
		t.Fatalf("a waiting turn holds its conversation: %v %v", next, err)
	}
	if run, _ := s.RunnableTurns(ctx, at.Add(time.Hour), 10); len(run) != 0 {
		t.Fatalf("a waiting turn is runnable: %v", run)
	}

	// A completed turn: usage, stop reason, action ids.
	_, t2 := startTurn(t, s, u, a, "", t0)
	if _, err := finish(t, s, t2, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err = s.FindTurn(ctx, u.ID, t2.ID)
	if err != nil || got.Usage != (ams.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}) || got.StopReason != ams.StopEndTurn ||
		len(got.ActionIDs) != 2 || got.ActionIDs[1] != "act_2" {
		t.Fatalf("completed turn: %+v %v", got, err)
	}
	tot, err := s.TokenTotals(ctx, u.ID, t0.Add(-time.Hour))
	if err != nil || tot != (ams.Usage{InputTokens: 13, OutputTokens: 9, TotalTokens: 22}) {
		t.Fatalf("token totals: %+v %v", tot, err)
	}
	other := mustUser(t, s, "takeover-other@example.com")
	if tot, _ := s.TokenTotals(ctx, other.ID, t0.Add(-time.Hour)); tot.TotalTokens != 0 {
		t.Fatalf("another account's tokens: %+v", tot)
	}
}
