package messaging_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/messaging"
)

// countingStore counts the store's write transactions of a turn.
type countingStore struct {
	ams.Store
	mu                           sync.Mutex
	exchanges, finishes, appends int
}

func (c *countingStore) SaveExchange(ctx context.Context, x *ams.Exchange) error {
	c.mu.Lock()
	c.exchanges++
	c.mu.Unlock()
	return c.Store.SaveExchange(ctx, x)
}

func (c *countingStore) FinishTurn(ctx context.Context, t *ams.Turn, reply *ams.Message, events []*ams.Event, stream ...*ams.TurnEvent) error {
	c.mu.Lock()
	c.finishes++
	c.mu.Unlock()
	return c.Store.FinishTurn(ctx, t, reply, events, stream...)
}

func (c *countingStore) AppendTurnEvents(ctx context.Context, evs []*ams.TurnEvent) error {
	c.mu.Lock()
	c.appends++
	c.mu.Unlock()
	return c.Store.AppendTurnEvents(ctx, evs)
}

func (c *countingStore) counts() [3]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return [3]int{c.exchanges, c.finishes, c.appends}
}

// waitStored waits until another process (s) sees the turn.
func waitStored(t *testing.T, s *messaging.Service, userID, id string) *ams.Turn {
	t.Helper()
	var tr *ams.Turn
	wait.Eventually(t, "the turn to be stored", func() bool {
		var err error
		tr, err = s.Turn(context.Background(), userID, id)
		if err != nil && !ams.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	})
	return tr
}

// TestShortTurnStoredWhole: a turn that ends before DeferStart, without a
// tool call, is one transaction: the conversation, both messages with
// their events, the completed turn and its stream.
func TestShortTurnStoredWhole(t *testing.T) {
	t.Parallel()
	s, db, u, a := setup(t, engineFunc(func(_ context.Context, _ *ams.Assistant, h []*ams.Message) (*ams.Reply, error) {
		return &ams.Reply{Content: "ok " + h[len(h)-1].Content}, nil
	}))
	s.DeferStart = time.Hour
	cs := &countingStore{Store: db}
	s.Store = ams.Narrow[messaging.Tx](cs)
	ctx := context.Background()
	r, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi", IdempotencyKey: "k-whole"})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := r.Result()
	if err != nil || reply.Content != "ok hi" {
		t.Fatalf("reply: %+v %v", reply, err)
	}
	if got := cs.counts(); got != [3]int{1, 0, 0} {
		t.Fatalf("write transactions (exchanges, finishes, event appends) = %v, want one exchange", got)
	}
	tr, err := db.FindTurn(ctx, u.ID, r.Turn.ID)
	if err != nil || tr.Status != ams.TurnCompleted || tr.ReplyMessageID != reply.ID || tr.CompletedAt == nil || tr.IdempotencyKey != "k-whole" ||
		r.Final() == nil || r.Final().ID != tr.ID {
		t.Fatalf("turn: %+v %v (final %+v)", tr, err, r.Final())
	}
	evs, _ := db.TurnEvents(ctx, tr.ID, 0, 10)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if len(types) != 4 || types[0] != messaging.EventTurnStarted || types[1] != messaging.EventMessageDelta || types[2] != messaging.EventMessageCompleted ||
		types[3] != messaging.EventTurnCompleted {
		t.Fatalf("stream of a turn stored whole: %v", types)
	}
	c, _ := db.FindConversation(ctx, u.ID, tr.ConversationID)
	e, _ := db.ListEvents(ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10})
	if c == nil || c.MessageCount != 2 || len(e.Data) != 4 { // conversation.created, two message.created, turn.completed
		t.Fatalf("conversation %+v, %d events", c, len(e.Data))
	}
	// A retry with the key replays the stored reply.
	again, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi", IdempotencyKey: "k-whole"})
	if err != nil || !again.Replayed {
		t.Fatalf("retry: %+v %v", again, err)
	}
	if m, _ := again.Result(); m == nil || m.ID != reply.ID {
		t.Fatalf("replayed reply %+v, want %s", m, reply.ID)
	}
}

// TestLongTurnStoredAtDeferStart: a turn still running after DeferStart
// has its start stored (running, visible to another process), then its
// end as usual.
func TestLongTurnStoredAtDeferStart(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 1), make(chan struct{})
	s, db, u, a := setup(t, blockingEngine(started, release))
	s.EngineTimeout, s.DeferStart = 5*time.Second, 20*time.Millisecond
	cs := &countingStore{Store: db}
	s.Store = ams.Narrow[messaging.Tx](cs)
	other := &messaging.Service{Store: ams.Narrow[messaging.Tx](db), Clock: s.Clock, EngineFor: s.EngineFor}
	r, err := s.Start(context.Background(), u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if tr := waitStored(t, other, u.ID, r.Turn.ID); tr.Status != ams.TurnRunning {
		t.Fatalf("turn after DeferStart: %+v", tr)
	}
	close(release)
	if _, err := r.Result(); err != nil {
		t.Fatal(err)
	}
	if got := cs.counts(); got[0] != 1 || got[1] != 1 {
		t.Fatalf("write transactions (exchanges, finishes, event appends) = %v, want the start and the finish", got)
	}
	if tr := waitEnded(t, other, u.ID, r.Turn.ID); tr.Status != ams.TurnCompleted {
		t.Fatalf("turn: %+v", tr)
	}
}

// recordingTools is a toolbox whose one tool records whether the turn
// and its conversation were stored when it ran.
type recordingTools struct {
	db        ams.Store
	userID    string
	turnFound bool
	convFound bool
}

func (b *recordingTools) Specs() []ams.ToolSpec { return []ams.ToolSpec{{Name: "note"}} }

func (b *recordingTools) Run(ctx context.Context, name string, _ json.RawMessage) (*ams.Action, error) {
	call := ams.ToolCallFrom(ctx)
	tr, err := b.db.FindTurn(ctx, b.userID, call.TurnID)
	b.turnFound = err == nil && tr.Status == ams.TurnRunning
	if err == nil {
		_, cerr := b.db.FindConversation(ctx, b.userID, tr.ConversationID)
		b.convFound = cerr == nil
	}
	return &ams.Action{ID: ams.NewID(ams.PrefixAction), Type: name, Status: ams.ActionSucceeded}, nil
}

// toolEngine calls its tool once, then replies.
type toolEngine struct{}

func (toolEngine) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	if _, err := req.Tools.Run(ctx, "note", json.RawMessage(`{}`)); err != nil {
		return nil, err
	}
	return &ams.Reply{Content: "noted"}, nil
}

// TestToolCallStoresDeferredStart: before a tool acts, the turn's start
// is stored, however short the turn: an action never names a turn or
// conversation that is not stored.
func TestToolCallStoresDeferredStart(t *testing.T) {
	t.Parallel()
	s, db, u, a := setup(t, toolEngine{})
	s.EngineTimeout, s.DeferStart = 5*time.Second, time.Hour
	tools := &recordingTools{db: db, userID: u.ID}
	s.Tools = func(string, *ams.Assistant, string) ams.Toolbox { return tools }
	reply, err := s.Send(context.Background(), u.ID, messaging.SendInput{AssistantID: a.ID, Message: "note this"})
	if err != nil || reply.Content != "noted" {
		t.Fatalf("send: %+v %v", reply, err)
	}
	if !tools.turnFound || !tools.convFound {
		t.Fatalf("when the tool ran: turn stored %v, conversation stored %v", tools.turnFound, tools.convFound)
	}
}

// TestDeferredKeyAcrossProcesses: two processes run a turn for the same
// Idempotency-Key at once, both deferred (neither saw the other's). The
// first to store wins; the other answers with the winner's reply and
// stores nothing of its own.
func TestDeferredKeyAcrossProcesses(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 1), make(chan struct{})
	slow, db, u, a := setup(t, blockingEngine(started, release))
	slow.EngineTimeout, slow.DeferStart = 5*time.Second, time.Hour
	fast := &messaging.Service{Store: ams.Narrow[messaging.Tx](db), Clock: slow.Clock, DeferStart: time.Hour,
		EngineFor: func(*ams.Assistant) (ams.Engine, error) {
			return engineFunc(func(_ context.Context, _ *ams.Assistant, h []*ams.Message) (*ams.Reply, error) {
				return &ams.Reply{Content: "fast " + h[len(h)-1].Content}, nil
			}), nil
		}}
	ctx := context.Background()
	in := messaging.SendInput{AssistantID: a.ID, Message: "hi", IdempotencyKey: "k-race"}
	lost, err := slow.Start(ctx, u.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	// In the same process the key is in progress.
	if _, err := slow.Start(ctx, u.ID, in); !hasCode(err, "turn_in_progress") {
		t.Fatalf("same key in the same process: %v", err)
	}
	won, err := fast.Send(ctx, u.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	got, err := lost.Result()
	if err != nil || got.ID != won.ID || got.Content != "fast hi" {
		t.Fatalf("the losing turn answered %+v %v, want the winner's reply %s", got, err, won.ID)
	}
	if f := lost.Final(); f == nil || f.ID == lost.Turn.ID || f.ReplyMessageID != won.ID {
		t.Fatalf("final turn of the loser: %+v", f)
	}
	if _, err := db.FindTurn(ctx, u.ID, lost.Turn.ID); !ams.IsNotFound(err) {
		t.Fatalf("the losing turn was stored: %v", err)
	}
	c, _ := db.ListConversations(ctx, u.ID, "", ams.ListParams{Limit: 10})
	e, _ := db.ListEvents(ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10})
	if len(c.Data) != 1 || c.Data[0].MessageCount != 2 || len(e.Data) != 4 { // conversation.created, two message.created, turn.completed
		t.Fatalf("stored %d conversations and %d events, want the winner's only", len(c.Data), len(e.Data))
	}
}

// TestCancelDeferredTurn: a turn of this process not stored yet is
// cancelled by its id and stored cancelled.
func TestCancelDeferredTurn(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	s, db, u, a := setup(t, blockingEngine(started, nil))
	s.EngineTimeout, s.DeferStart = 5*time.Second, time.Hour
	ctx := context.Background()
	r, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := s.Cancel(ctx, ams.NewID(ams.PrefixUser), r.Turn.ID); !ams.IsNotFound(err) {
		t.Fatalf("another account cancels: %v", err)
	}
	select {
	case <-r.Done():
		t.Fatal("another account's cancel stopped the turn")
	default:
	}
	tr, err := s.Cancel(ctx, u.ID, r.Turn.ID)
	if err != nil || tr.Status != ams.TurnCancelled {
		t.Fatalf("cancel: %+v %v", tr, err)
	}
	if _, err := db.FindMessage(ctx, u.ID, tr.InboundMessageID); err != nil {
		t.Fatalf("inbound message of the cancelled turn: %v", err)
	}
}
