package messaging_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/messaging"
)

// blockingEngine answers only when released, or fails with its context's
// error when that ends first.
func blockingEngine(started chan<- struct{}, release <-chan struct{}) ams.Engine {
	return engineFunc(func(ctx context.Context, _ *ams.Assistant, h []*ams.Message) (*ams.Reply, error) {
		started <- struct{}{}
		select {
		case <-release:
			return &ams.Reply{Content: "ok " + h[len(h)-1].Content}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

func waitEnded(t *testing.T, s *messaging.Service, userID, id string) *ams.Turn {
	t.Helper()
	var tr *ams.Turn
	wait.Eventually(t, "the turn to end", func() bool {
		var err error
		tr, err = s.Turn(context.Background(), userID, id)
		if ams.IsNotFound(err) {
			return false // a deferred start, not stored yet
		}
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status != ams.TurnRunning
	})
	return tr
}

// TestTurnOutlivesCaller: the caller's context ending does not stop the
// turn; its reply is stored.
func TestTurnOutlivesCaller(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 1), make(chan struct{})
	s, _, u, a := setup(t, blockingEngine(started, release))
	s.EngineTimeout = 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	r, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	if _, err := r.Wait(ctx); err == nil {
		t.Fatal("Wait on an ended context returned a reply")
	}
	close(release)
	tr := waitEnded(t, s, u.ID, r.Turn.ID)
	if tr.Status != ams.TurnCompleted || tr.ReplyMessageID == "" {
		t.Fatalf("turn: %+v", tr)
	}
}

// TestCancelInProcess: a cancel stops the engine and records the turn
// cancelled; a second cancel answers it unchanged; a retry with its key
// is refused.
func TestCancelInProcess(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	s, _, u, a := setup(t, blockingEngine(started, nil))
	s.EngineTimeout = 5 * time.Second
	ctx := context.Background()
	in := messaging.SendInput{AssistantID: a.ID, Message: "hi", IdempotencyKey: "k-cancel"}
	r, err := s.Start(ctx, u.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := s.Start(ctx, u.ID, in); !hasCode(err, "turn_in_progress") {
		t.Fatalf("same key while running: %v", err)
	}
	tr, err := s.Cancel(ctx, u.ID, r.Turn.ID)
	if err != nil || tr.Status != ams.TurnCancelled || tr.Error == nil || tr.Error.Code != "turn_cancelled" || tr.CompletedAt == nil {
		t.Fatalf("cancel: %+v %v", tr, err)
	}
	if _, err := r.Result(); !hasCode(err, "turn_cancelled") {
		t.Fatalf("result of a cancelled turn: %v", err)
	}
	again, err := s.Cancel(ctx, u.ID, r.Turn.ID)
	if err != nil || again.Status != ams.TurnCancelled || !again.UpdatedAt.Equal(tr.UpdatedAt) {
		t.Fatalf("second cancel: %+v %v", again, err)
	}
	if _, err := s.Start(ctx, u.ID, in); !hasCode(err, "turn_cancelled") {
		t.Fatalf("retry of a cancelled turn: %v", err)
	}
	evs, _ := s.LastAttempt(ctx, r.Turn.ID)
	if last := evs[len(evs)-1]; last.Type != messaging.EventTurnCancelled || evs[len(evs)-2].Type != messaging.EventError || !json.Valid(last.Data) {
		t.Fatalf("last event %+v", last)
	}
}

// TestCancelFromAnotherProcess: a second service on the same store (as
// another process) marks the turn cancel_requested; the running process
// reads it at its next lease renewal and records the turn cancelled.
func TestCancelFromAnotherProcess(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	s, db, u, a := setup(t, blockingEngine(started, nil))
	// The turn's start is stored once it has run 20 ms (DeferStart):
	// from then on another process sees it.
	s.EngineTimeout, s.Lease, s.DeferStart = 5*time.Second, 60*time.Millisecond, 20*time.Millisecond
	other := &messaging.Service{Store: ams.Narrow[messaging.Tx](db), Clock: s.Clock, EngineFor: s.EngineFor}
	ctx := context.Background()
	r, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	waitStored(t, other, u.ID, r.Turn.ID)
	tr, err := other.Cancel(ctx, u.ID, r.Turn.ID)
	// The answer is the turn marked cancel_requested, or already
	// cancelled when the running process renewed its lease (every 20 ms
	// here) between the mark and the answer's read.
	if err != nil || !(tr.Status == ams.TurnRunning && tr.CancelRequested || tr.Status == ams.TurnCancelled) {
		t.Fatalf("cancel from another process: %+v %v", tr, err)
	}
	if tr := waitEnded(t, other, u.ID, r.Turn.ID); tr.Status != ams.TurnCancelled || tr.CancelRequested {
		t.Fatalf("turn: %+v", tr)
	}
}

// TestResumeAbandonedTurn: a turn whose process died (running, its lease
// lapsed) is resumed by a retry with its key; another is cancelled at
// once by anyone.
func TestResumeAbandonedTurn(t *testing.T) {
	t.Parallel()
	var seen []*ams.Message
	s, db, u, a := setup(t, engineFunc(func(_ context.Context, _ *ams.Assistant, h []*ams.Message) (*ams.Reply, error) {
		seen = h
		return &ams.Reply{Content: "ok " + h[len(h)-1].Content}, nil
	}))
	ctx := context.Background()
	now := s.Clock.Now()
	dead := func(key, text string) *ams.Turn {
		t.Helper()
		conv := ams.NewID(ams.PrefixConversation)
		at := now.Add(-time.Minute)
		in := &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: u.ID, AssistantID: a.ID, ConversationID: conv,
			Direction: ams.DirectionInbound, Content: text, CreatedAt: at, UpdatedAt: at}
		x := &ams.Exchange{ConversationID: conv, Inbound: in,
			NewConversation: &ams.Conversation{ID: conv, UserID: u.ID, AssistantID: a.ID, Title: text, CreatedAt: at, UpdatedAt: at, LastMessageAt: at},
			Turn: &ams.Turn{ID: ams.NewID(ams.PrefixTurn), UserID: u.ID, AssistantID: a.ID, ConversationID: conv, InboundMessageID: in.ID,
				Status: ams.TurnRunning, IdempotencyKey: key, RequestHash: messaging.RequestHash(messaging.SendInput{AssistantID: a.ID, Message: text}),
				LeaseUntil: now.Add(-time.Second), Attempt: 1, CreatedAt: at, UpdatedAt: at}}
		if err := db.SaveExchange(ctx, x); err != nil {
			t.Fatal(err)
		}
		return x.Turn
	}
	t1 := dead("k-dead", "hello")
	r, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hello", IdempotencyKey: "k-dead"})
	if err != nil || r.Turn.ID != t1.ID {
		t.Fatalf("resume: %+v %v", r, err)
	}
	reply, err := r.Result()
	if err != nil || reply.Content != "ok hello" || len(seen) != 1 || seen[0].ID != t1.InboundMessageID {
		t.Fatalf("resumed reply: %+v %v, history %v", reply, err, seen)
	}
	if tr, _ := s.Turn(ctx, u.ID, t1.ID); tr.Status != ams.TurnCompleted || tr.ReplyMessageID != reply.ID {
		t.Fatalf("resumed turn: %+v", tr)
	}
	// Another message with the key is refused.
	if _, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "other", IdempotencyKey: "k-dead"}); !hasCode(err, "idempotency_key_reused") {
		t.Fatalf("key reused: %v", err)
	}
	t2 := dead("", "bye")
	tr, err := s.Cancel(ctx, u.ID, t2.ID)
	if err != nil || tr.Status != ams.TurnCancelled {
		t.Fatalf("cancel of an abandoned turn: %+v %v", tr, err)
	}
	evs, _ := s.LastAttempt(ctx, t2.ID)
	if len(evs) != 1 || evs[0].Type != messaging.EventError {
		t.Fatalf("events of the abandoned turn: %+v", evs)
	}
}

func hasCode(err error, code string) bool {
	e, ok := err.(*ams.Error)
	return ok && e.Code == code
}

// TestFollowFromAnotherProcess: a second service on the same store (as
// another process) follows a running streamed turn from the stored events,
// polling, live, to its end: the same events, in order.
func TestFollowFromAnotherProcess(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s, db, u, a := setup(t, engineFunc(func(ctx context.Context, _ *ams.Assistant, _ []*ams.Message) (*ams.Reply, error) {
		return nil, nil
	}))
	s.EngineTimeout, s.FlushInterval = 5*time.Second, 5*time.Millisecond
	s.EngineFor = func(*ams.Assistant) (ams.Engine, error) {
		return streamEngine(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
			req.Stream("Hel")
			req.Stream("lo")
			<-release
			req.Stream(" there")
			return &ams.Reply{Content: "Hello there"}, nil
		}), nil
	}
	other := &messaging.Service{Store: ams.Narrow[messaging.Tx](db), Clock: s.Clock}
	ctx := context.Background()
	r, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi", Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		done <- other.FollowStored(ctx, u.ID, r.Turn.ID, 0, 5*time.Millisecond, func(e *ams.TurnEvent) error {
			seen <- e.Type
			return nil
		})
	}()
	// The first events arrive while the turn still runs.
	for _, want := range []string{messaging.EventTurnStarted, messaging.EventMessageDelta, messaging.EventMessageDelta} {
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("event %s, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s while the turn runs", want)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(seen)
	var rest []string
	for e := range seen {
		rest = append(rest, e)
	}
	if len(rest) != 3 || rest[0] != messaging.EventMessageDelta || rest[1] != messaging.EventMessageCompleted || rest[2] != messaging.EventTurnCompleted {
		t.Fatalf("events after the release: %v", rest)
	}
}

type streamEngine func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error)

func (f streamEngine) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	return f(ctx, req)
}

// TestUnstreamedTurnStoresOneDelta: a turn sent without Stream does not
// ask the engine to stream, and its stored events carry the reply as one
// delta: turn.started, message.delta, message.completed.
func TestUnstreamedTurnStoresOneDelta(t *testing.T) {
	t.Parallel()
	s, db, u, a := setup(t, engineFunc(func(ctx context.Context, _ *ams.Assistant, _ []*ams.Message) (*ams.Reply, error) {
		return nil, nil
	}))
	asked := false
	s.EngineFor = func(*ams.Assistant) (ams.Engine, error) {
		return streamEngine(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
			asked = req.Stream != nil
			return &ams.Reply{Content: "Hello there, you"}, nil
		}), nil
	}
	ctx := context.Background()
	r, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := db.TurnEvents(ctx, r.Turn.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if asked || len(evs) != 4 || types[0] != messaging.EventTurnStarted || types[1] != messaging.EventMessageDelta ||
		types[2] != messaging.EventMessageCompleted || types[3] != messaging.EventTurnCompleted || !strings.Contains(string(evs[1].Data), "Hello there, you") {
		t.Fatalf("asked to stream %v; events %v", asked, types)
	}
}
