package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// startTurn stores a new conversation with an inbound message and a
// running turn, as messaging does before the engine runs.
func startTurn(t *testing.T, s ams.Store, u *ams.User, a *ams.Assistant, key string, at time.Time) (*ams.Exchange, *ams.Turn) {
	t.Helper()
	conv := ams.NewID(ams.PrefixConversation)
	x := exchange(u, a, conv, true, "hello", at)
	x.Reply = nil
	x.Events = x.Events[:1]
	x.Turn = &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: u.ID, AssistantID: a.ID, ConversationID: conv,
		InboundMessageID: x.Inbound.ID, Status: ams.TurnRunning, IdempotencyKey: key, RequestHash: "h1",
		LeaseUntil: at.Add(30 * time.Second), Attempt: 1, CreatedAt: at, UpdatedAt: at}
	if err := s.SaveExchange(context.Background(), x); err != nil {
		t.Fatalf("start turn: %v", err)
	}
	return x, x.Turn
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *ams.Error
	if err == nil || !asError(err, &e) || e.Code != code {
		t.Fatalf("got error %v, want code %s", err, code)
	}
}

func asError(err error, e **ams.Error) bool {
	x, ok := err.(*ams.Error)
	if ok {
		*e = x
	}
	return ok
}

func testTurns(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "turn@example.com")
	a := mustAssistant(t, s, u, "t")
	x, tr := startTurn(t, s, u, a, "key-1", t0)

	got, err := s.FindTurn(ctx, u.ID, tr.ID)
	if err != nil || got.Status != ams.TurnRunning || got.InboundMessageID != x.Inbound.ID || got.ConversationID != x.ConversationID ||
		got.IdempotencyKey != "key-1" || got.RequestHash != "h1" || !got.LeaseUntil.Equal(t0.Add(30*time.Second)) || got.CompletedAt != nil {
		t.Fatalf("find turn: %+v %v", got, err)
	}
	if _, err := s.FindMessage(ctx, u.ID, x.Inbound.ID); err != nil {
		t.Fatalf("inbound message of a started turn: %v", err)
	}
	if _, err := s.FindConversation(ctx, u.ID, x.ConversationID); err != nil {
		t.Fatalf("conversation of a started turn: %v", err)
	}
	if got, err := s.FindTurnByMessage(ctx, u.ID, x.Inbound.ID); err != nil || got.ID != tr.ID {
		t.Fatalf("find by message: %v %v", got, err)
	}
	if got, err := s.FindTurnByKey(ctx, u.ID, "key-1", t0.Add(-time.Hour)); err != nil || got.ID != tr.ID {
		t.Fatalf("find by key: %v %v", got, err)
	}
	_, err = s.FindTurnByKey(ctx, u.ID, "key-1", t0.Add(time.Second))
	wantKind(t, err, ams.ENOTFOUND)
	other := mustUser(t, s, "other-turn@example.com")
	_, err = s.FindTurn(ctx, other.ID, tr.ID)
	wantKind(t, err, ams.ENOTFOUND)
	_, err = s.FindTurnByKey(ctx, other.ID, "key-1", t0.Add(-time.Hour))
	wantKind(t, err, ams.ENOTFOUND)
	_, err = s.FindTurnByMessage(ctx, other.ID, x.Inbound.ID)
	wantKind(t, err, ams.ENOTFOUND)

	// A live lease cannot be claimed; a lapsed one can.
	_, err = s.ClaimTurn(ctx, u.ID, tr.ID, t0.Add(10*time.Second), t0.Add(40*time.Second))
	wantCode(t, err, "turn_in_progress")
	claimed, err := s.ClaimTurn(ctx, u.ID, tr.ID, t0.Add(31*time.Second), t0.Add(61*time.Second))
	if err != nil || claimed.Status != ams.TurnRunning || !claimed.LeaseUntil.Equal(t0.Add(61*time.Second)) {
		t.Fatalf("claim lapsed turn: %+v %v", claimed, err)
	}
	if claimed.Attempt != 2 {
		t.Fatalf("attempt of the claimed turn: %d, want 2", claimed.Attempt)
	}
	if cancel, err := s.RenewTurn(ctx, u.ID, tr.ID, 2, t0.Add(70*time.Second)); err != nil || cancel {
		t.Fatalf("renew: %v %v", cancel, err)
	}
	// The attempt that lost its lease can neither renew nor finish.
	_, err = s.RenewTurn(ctx, u.ID, tr.ID, 1, t0.Add(70*time.Second))
	wantCode(t, err, "turn_finished")
	stale := *claimed
	stale.Attempt, stale.Status = 1, ams.TurnCompleted
	wantCode(t, s.FinishTurn(ctx, &stale, nil, nil), "turn_finished")

	// The tool calls of the turn: one action per call number.
	act := &ams.Action{ID: ams.NewID(ams.PrefixAction), UserID: u.ID, AssistantID: a.ID, ConversationID: x.ConversationID, Type: "create_task",
		Input: json.RawMessage(`{}`), Status: ams.ActionSucceeded, Result: json.RawMessage(`{}`), TurnID: tr.ID, CallSeq: 1, CreatedAt: t0}
	if err := s.CreateAction(ctx, act); err != nil {
		t.Fatal(err)
	}
	dup := *act
	dup.ID = ams.NewID(ams.PrefixAction)
	wantCode(t, s.CreateAction(ctx, &dup), "turn_call_exists")
	call, err := s.FindTurnCall(ctx, u.ID, tr.ID, 1)
	if err != nil || call.ID != act.ID || call.TurnID != tr.ID || call.CallSeq != 1 {
		t.Fatalf("find call: %+v %v", call, err)
	}
	_, err = s.FindTurnCall(ctx, u.ID, tr.ID, 2)
	wantKind(t, err, ams.ENOTFOUND)
	if got, err := s.FindAction(ctx, u.ID, act.ID); err != nil || got.TurnID != tr.ID || got.CallSeq != 1 {
		t.Fatalf("find action: %+v %v", got, err)
	}

	// Stream events.
	evs := []*ams.TurnEvent{{TurnID: tr.ID, Seq: 1, Type: "turn.started", Data: json.RawMessage(`{"a":1}`), CreatedAt: t0},
		{TurnID: tr.ID, Seq: 2, Type: "message.delta", Data: json.RawMessage(`{"delta":"x"}`), CreatedAt: t0}}
	if err := s.AppendTurnEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurnEvents(ctx, evs[1:]); err == nil {
		t.Fatal("duplicate turn event stored")
	}
	read, err := s.TurnEvents(ctx, tr.ID, 1, 10)
	if err != nil || len(read) != 1 || read[0].Seq != 2 || read[0].Type != "message.delta" || string(read[0].Data) != `{"delta":"x"}` {
		t.Fatalf("turn events: %v %v", read, err)
	}

	// A cancel request is seen at the next renewal.
	if ct, err := s.RequestTurnCancel(ctx, u.ID, tr.ID, t0.Add(41*time.Second)); err != nil || !ct.CancelRequested {
		t.Fatalf("request cancel: %+v %v", ct, err)
	}
	if cancel, err := s.RenewTurn(ctx, u.ID, tr.ID, 2, t0.Add(72*time.Second)); err != nil || !cancel {
		t.Fatalf("renew after cancel request: %v %v", cancel, err)
	}

	// Failing, then claiming again, then completing with the reply.
	done := t0.Add(50 * time.Second)
	failed := *claimed
	failed.Status, failed.Error, failed.UpdatedAt, failed.CompletedAt = ams.TurnFailed, &ams.ActionError{Type: "api_error", Code: "engine_error", Message: "x"}, done, &done
	if err := s.FinishTurn(ctx, &failed, nil, nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.FinishTurn(ctx, &failed, nil, nil), "turn_finished")
	_, err = s.RenewTurn(ctx, u.ID, tr.ID, 2, done.Add(time.Minute))
	wantCode(t, err, "turn_finished")
	got, _ = s.FindTurn(ctx, u.ID, tr.ID)
	if got.Status != ams.TurnFailed || got.Error == nil || got.Error.Code != "engine_error" || got.CompletedAt == nil || got.CancelRequested {
		t.Fatalf("failed turn: %+v", got)
	}
	again, err := s.ClaimTurn(ctx, u.ID, tr.ID, done, done.Add(time.Minute))
	if err != nil || again.Error != nil || again.CompletedAt != nil || again.Attempt != 3 {
		t.Fatalf("claim failed turn: %+v %v", again, err)
	}
	reply := &ams.Message{ID: ams.NewID(ams.PrefixMessage), Object: "message", UserID: u.ID, AssistantID: a.ID, ConversationID: x.ConversationID,
		Direction: ams.DirectionOutbound, Content: "done", CreatedAt: done, UpdatedAt: done}
	again.Status, again.ReplyMessageID, again.UpdatedAt, again.CompletedAt = ams.TurnCompleted, reply.ID, done, &done
	if err := s.FinishTurn(ctx, again, reply, []*ams.Event{ams.MessageCreatedEvent(reply)}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.FindTurn(ctx, u.ID, tr.ID)
	if got.Status != ams.TurnCompleted || got.ReplyMessageID != reply.ID || got.Error != nil {
		t.Fatalf("completed turn: %+v", got)
	}
	c, _ := s.FindConversation(ctx, u.ID, x.ConversationID)
	if c.MessageCount != 2 {
		t.Fatalf("conversation counts %d messages, want 2", c.MessageCount)
	}
	_, err = s.ClaimTurn(ctx, u.ID, tr.ID, done.Add(time.Hour), done.Add(2*time.Hour))
	wantCode(t, err, "turn_finished")
	if ct, err := s.RequestTurnCancel(ctx, u.ID, tr.ID, done); err != nil || ct.CancelRequested || ct.Status != ams.TurnCompleted {
		t.Fatalf("cancel of a completed turn: %+v %v", ct, err)
	}

	// A second turn in another conversation; the conversation filter.
	_, tr2 := startTurn(t, s, u, a, "", t0.Add(time.Minute))
	pg, err := s.ListTurns(ctx, u.ID, "", ams.ListParams{Limit: 10})
	if err != nil || len(pg.Data) != 2 || pg.Data[0].ID != tr2.ID {
		t.Fatalf("list turns: %v %v", pg, err)
	}
	pg, err = s.ListTurns(ctx, u.ID, x.ConversationID, ams.ListParams{Limit: 10})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].ID != tr.ID {
		t.Fatalf("list turns of a conversation: %v %v", pg, err)
	}
	if pg, _ := s.ListTurns(ctx, other.ID, "", ams.ListParams{Limit: 10}); len(pg.Data) != 0 {
		t.Fatal("other account lists turns")
	}
	// A key older than a day is free again.
	_, tr3 := startTurn(t, s, u, a, "key-1", t0.Add(25*time.Hour))
	if got, err := s.FindTurnByKey(ctx, u.ID, "key-1", t0); err != nil || got.ID != tr3.ID {
		t.Fatalf("reused key: %v %v", got, err)
	}
	// Stream events are purged with the events; the turn stays.
	if _, err := s.Purge(ctx, t0.Add(ams.EventRetention+time.Hour)); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.TurnEvents(ctx, tr.ID, 0, 10); len(evs) != 0 {
		t.Fatalf("%d turn events after the purge", len(evs))
	}
	if _, err := s.FindTurn(ctx, u.ID, tr.ID); err != nil {
		t.Fatalf("turn after the purge: %v", err)
	}
	// Deleting the conversation deletes its turns.
	if _, err := s.DeleteConversation(ctx, u.ID, x.ConversationID); err != nil {
		t.Fatal(err)
	}
	_, err = s.FindTurn(ctx, u.ID, tr.ID)
	wantKind(t, err, ams.ENOTFOUND)
	if evs, _ := s.TurnEvents(ctx, tr.ID, 0, 10); len(evs) != 0 {
		t.Fatal("events of a deleted turn remain")
	}
}

// testTurnWhole stores turns in one transaction at their end, as messaging
// does for a turn that ends before its start had to be stored: the
// conversation, both messages, the ended turn and its stream at once; a
// second turn with the same idempotency key is refused and leaves nothing.
func testTurnWhole(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "whole@example.com")
	a := mustAssistant(t, s, u, "w")
	conv := ams.NewID(ams.PrefixConversation)
	x := exchange(u, a, conv, true, "hello", t0)
	done := t0.Add(time.Second)
	x.Turn = &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: u.ID, AssistantID: a.ID, ConversationID: conv,
		InboundMessageID: x.Inbound.ID, ReplyMessageID: x.Reply.ID, Status: ams.TurnCompleted, IdempotencyKey: "whole-1", RequestHash: "h",
		LeaseUntil: t0.Add(30 * time.Second), Attempt: 1, CreatedAt: t0, UpdatedAt: done, CompletedAt: &done}
	for i, typ := range []string{"turn.started", "message.delta", "message.completed"} {
		x.Stream = append(x.Stream, &ams.TurnEvent{TurnID: x.Turn.ID, Seq: int64(i + 1), Type: typ, Data: json.RawMessage(`{"n":` + string(rune('1'+i)) + `}`), CreatedAt: t0})
	}
	if err := s.SaveExchange(ctx, x); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindTurn(ctx, u.ID, x.Turn.ID)
	if err != nil || got.Status != ams.TurnCompleted || got.ReplyMessageID != x.Reply.ID || got.CompletedAt == nil || !got.CompletedAt.Equal(done) ||
		got.Error != nil || got.Attempt != 1 || got.IdempotencyKey != "whole-1" || !got.LeaseUntil.Equal(time.UnixMilli(0)) {
		t.Fatalf("turn stored whole: %+v %v", got, err)
	}
	evs, err := s.TurnEvents(ctx, x.Turn.ID, 0, 10)
	if err != nil || len(evs) != 3 || evs[2].Type != "message.completed" || string(evs[1].Data) != `{"n":2}` {
		t.Fatalf("stream of a turn stored whole: %v %v", evs, err)
	}
	c, err := s.FindConversation(ctx, u.ID, conv)
	if err != nil || c.MessageCount != 2 {
		t.Fatalf("conversation of a turn stored whole: %+v %v", c, err)
	}
	if m, err := s.FindMessage(ctx, u.ID, x.Reply.ID); err != nil || m.Content != "re: hello" {
		t.Fatalf("reply of a turn stored whole: %+v %v", m, err)
	}
	// A turn that failed is stored with its error and no reply; a claim
	// (a retry with its key) takes it over.
	y := exchange(u, a, ams.NewID(ams.PrefixConversation), true, "fails", t0)
	y.Reply, y.Events = nil, y.Events[:1]
	y.Turn = &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: u.ID, AssistantID: a.ID, ConversationID: y.ConversationID,
		InboundMessageID: y.Inbound.ID, Status: ams.TurnFailed, Error: &ams.ActionError{Type: "api_error", Code: "engine_error", Message: "x"},
		IdempotencyKey: "whole-2", RequestHash: "h", Attempt: 1, CreatedAt: t0, UpdatedAt: done, CompletedAt: &done}
	if err := s.SaveExchange(ctx, y); err != nil {
		t.Fatal(err)
	}
	got, err = s.FindTurn(ctx, u.ID, y.Turn.ID)
	if err != nil || got.Status != ams.TurnFailed || got.Error == nil || got.Error.Code != "engine_error" || got.ReplyMessageID != "" {
		t.Fatalf("failed turn stored whole: %+v %v", got, err)
	}
	if again, err := s.ClaimTurn(ctx, u.ID, y.Turn.ID, done, done.Add(time.Minute)); err != nil || again.Attempt != 2 {
		t.Fatalf("claim a failed turn stored whole: %+v %v", again, err)
	}

	// The same key again (another process's turn for the same request):
	// refused, and nothing of it is stored.
	z := exchange(u, a, ams.NewID(ams.PrefixConversation), true, "hello", t0)
	z.Turn = &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: u.ID, AssistantID: a.ID, ConversationID: z.ConversationID,
		InboundMessageID: z.Inbound.ID, ReplyMessageID: z.Reply.ID, Status: ams.TurnCompleted, IdempotencyKey: "whole-1", RequestHash: "h",
		Attempt: 1, CreatedAt: t0, UpdatedAt: done, CompletedAt: &done}
	z.Stream = []*ams.TurnEvent{{TurnID: z.Turn.ID, Seq: 1, Type: "turn.started", Data: json.RawMessage(`{}`), CreatedAt: t0}}
	if err := s.SaveExchange(ctx, z); err == nil {
		t.Fatal("a second turn with the same idempotency key was stored")
	}
	_, err = s.FindConversation(ctx, u.ID, z.ConversationID)
	wantKind(t, err, ams.ENOTFOUND)
	_, err = s.FindMessage(ctx, u.ID, z.Reply.ID)
	wantKind(t, err, ams.ENOTFOUND)
	if evs, _ := s.TurnEvents(ctx, z.Turn.ID, 0, 10); len(evs) != 0 {
		t.Fatal("stream of a refused turn stored")
	}
}
