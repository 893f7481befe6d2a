package messaging_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/messaging"
)

// overlapEngine answers "re: <message>", recording how many of its
// replies run at once (max), and whether the history it was given
// alternated (inbound, outbound, …, inbound) and ended with the message.
type overlapEngine struct {
	now, max atomic.Int64
	runs     atomic.Int64
	bad      atomic.Value // string: what was wrong with a history
	usage    ams.Usage
}

func (e *overlapEngine) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	n := e.now.Add(1)
	defer e.now.Add(-1)
	e.runs.Add(1)
	for {
		m := e.max.Load()
		if n <= m || e.max.CompareAndSwap(m, n) {
			break
		}
	}
	h := req.History
	for i, m := range h {
		want := ams.DirectionInbound
		if (len(h)-1-i)%2 == 1 {
			want = ams.DirectionOutbound
		}
		if m.Direction != want || (i > 0 && m.Direction == ams.DirectionOutbound && m.Content != "re: "+h[i-1].Content) {
			e.bad.Store(fmt.Sprintf("history %d of %d: %s %q", i, len(h), m.Direction, m.Content))
		}
	}
	// Some work, during which another run would overlap.
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(2 * time.Millisecond):
	}
	return &ams.Reply{Content: "re: " + h[len(h)-1].Content, Usage: e.usage, StopReason: ams.StopEndTurn}, nil
}

// services are two messaging services on one store, as two processes.
func services(t *testing.T, db ams.Store, e ams.Engine) (s1, s2 *messaging.Service) {
	mk := func() *messaging.Service {
		return &messaging.Service{Store: ams.Narrow[messaging.Tx](db), Clock: func() time.Time { return time.Now().UTC() },
			EngineFor: func(*ams.Assistant) (ams.Engine, error) { return e, nil }, EngineTimeout: time.Minute, QueuePoll: 5 * time.Millisecond}
	}
	return mk(), mk()
}

func account(t *testing.T, db ams.Store) (*ams.User, *ams.Assistant) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "q@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "A", Model: ams.ModelBuiltin, CreatedAt: now, UpdatedAt: now}
	if err := errors.Join(db.CreateUser(ctx, u), db.CreateAssistant(ctx, a)); err != nil {
		t.Fatal(err)
	}
	return u, a
}

// onBoth runs fn on a SQLite store and, with AMS_TEST_DATABASE_URL, on
// PostgreSQL.
func onBoth(t *testing.T, fn func(t *testing.T, db ams.Store)) {
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); fn(t, sqlitetest.Open(t)) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); fn(t, pgtest.Open(t)) })
}

// TestEnqueueConcurrent: 20 sends at once to one conversation, through
// two services on one store (two processes), with the default strategy
// (enqueue): all complete, the engine never runs two of them at once,
// each sees the replies before it, and the conversation alternates.
func TestEnqueueConcurrent(t *testing.T) {
	onBoth(t, func(t *testing.T, db ams.Store) {
		ctx := context.Background()
		e := &overlapEngine{usage: ams.Usage{InputTokens: 3, OutputTokens: 2, TotalTokens: 5}}
		s1, s2 := services(t, db, e)
		u, a := account(t, db)
		first, err := s1.Send(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "m first"})
		if err != nil {
			t.Fatal(err)
		}
		conv := first.ConversationID
		const n = 20
		replies := make([]*ams.Message, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			s := s1
			if i%2 == 1 {
				s = s2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				replies[i], errs[i] = s.Send(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, ConversationID: conv, Message: fmt.Sprintf("m %d", i)})
			}()
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil || replies[i] == nil || replies[i].Content != fmt.Sprintf("re: m %d", i) {
				t.Fatalf("send %d: %v %v", i, replies[i], errs[i])
			}
		}
		if m := e.max.Load(); m != 1 {
			t.Errorf("the engine ran %d replies of one conversation at once", m)
		}
		if b := e.bad.Load(); b != nil {
			t.Errorf("an engine saw a history that does not alternate: %v", b)
		}
		msgs, err := db.RecentMessages(ctx, u.ID, conv, 100)
		if err != nil || len(msgs) != 2*(n+1) {
			t.Fatalf("%d messages, %v", len(msgs), err)
		}
		for i := 0; i < len(msgs); i += 2 {
			if msgs[i].Direction != ams.DirectionInbound || msgs[i+1].Direction != ams.DirectionOutbound || msgs[i+1].Content != "re: "+msgs[i].Content {
				t.Fatalf("the conversation does not alternate at %d: %q, %q", i, msgs[i].Content, msgs[i+1].Content)
			}
		}
		turns, _ := db.ListTurns(ctx, u.ID, conv, ams.ListParams{Limit: 100})
		for _, tr := range turns.Data {
			if tr.Status != ams.TurnCompleted || tr.StopReason != ams.StopEndTurn || tr.Usage.TotalTokens != 5 {
				t.Fatalf("turn %+v", tr)
			}
		}
		if tot, _ := db.TokenTotals(ctx, u.ID, time.Now().Add(-time.Hour)); tot.TotalTokens != 5*(n+1) {
			t.Errorf("token totals %+v", tot)
		}
		// Every turn's turn.completed is in the outbox.
		wait.Eventually(t, "21 turn.completed events", func() bool {
			p, err := db.ListEvents(ctx, u.ID, ams.EventFilter{Type: ams.EventTurnCompleted}, ams.ListParams{Limit: 100})
			return err == nil && len(p.Data) == n+1
		})
	})
}

// blocked is an engine whose replies wait for release (or their end),
// telling started when each begins; it records the contexts it ran in.
type blocked struct {
	started chan string
	release chan struct{}
}

func (b *blocked) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	msg := req.History[len(req.History)-1].Content
	b.started <- msg
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.release:
	}
	return &ams.Reply{Content: "re: " + msg}, nil
}

// TestRejectAndInterrupt: while a turn runs, a send with reject is 409
// conversation_busy and stores nothing; one with interrupt cancels it
// (stop_reason interrupted, its engine stopped, turn.cancelled) and runs.
func TestRejectAndInterrupt(t *testing.T) {
	onBoth(t, func(t *testing.T, db ams.Store) {
		ctx := context.Background()
		e := &blocked{started: make(chan string, 4), release: make(chan struct{})}
		s, _ := services(t, db, e)
		u, a := account(t, db)
		first, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "one", Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		<-e.started
		conv := first.Turn.ConversationID
		before, _ := db.ListTurns(ctx, u.ID, "", ams.ListParams{Limit: 100})
		_, err = s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, ConversationID: conv, Message: "two", MultitaskStrategy: ams.MultitaskReject})
		if !hasCode(err, "conversation_busy") || ams.ErrorKindOf(err) != ams.ECONFLICT {
			t.Fatalf("reject: %v", err)
		}
		after, _ := db.ListTurns(ctx, u.ID, "", ams.ListParams{Limit: 100})
		if c, _ := db.FindConversation(ctx, u.ID, conv); len(after.Data) != len(before.Data) || c.MessageCount != 1 {
			t.Fatalf("a rejected send stored something: %d turns, %d messages", len(after.Data), c.MessageCount)
		}
		_, err = s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, ConversationID: conv, Message: "x", MultitaskStrategy: "later"})
		if !hasCode(err, "parameter_invalid") {
			t.Fatalf("unknown strategy: %v", err)
		}

		second, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, ConversationID: conv, Message: "two", MultitaskStrategy: ams.MultitaskInterrupt})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := first.Result(); !hasCode(err, "turn_interrupted") {
			t.Fatalf("the interrupted turn's run: %v", err)
		}
		if got := <-e.started; got != "two" {
			t.Fatalf("started %q", got)
		}
		close(e.release)
		if reply, err := second.Result(); err != nil || reply.Content != "re: two" {
			t.Fatalf("the interrupting turn: %v %v", reply, err)
		}
		tr, err := db.FindTurn(ctx, u.ID, first.Turn.ID)
		if err != nil || tr.Status != ams.TurnCancelled || tr.StopReason != ams.StopInterrupted || tr.ReplyMessageID != "" {
			t.Fatalf("interrupted turn: %+v %v", tr, err)
		}
		wait.Eventually(t, "turn.cancelled", func() bool {
			p, err := db.ListEvents(ctx, u.ID, ams.EventFilter{Type: ams.EventTurnCancelled}, ams.ListParams{Limit: 10})
			return err == nil && len(p.Data) == 1 && p.Data[0].Data["stop_reason"] == "interrupted"
		})
		evs, _ := db.TurnEvents(ctx, first.Turn.ID, 0, 100)
		if last := evs[len(evs)-1]; last.Type != messaging.EventTurnCancelled {
			t.Fatalf("the interrupted turn's stream ends with %s", last.Type)
		}
	})
}

// TestBackgroundTurnDeadline: a background turn that has not ended
// within BackgroundTimeout fails with background_turn_timeout, with its
// turn.failed event.
func TestBackgroundTurnDeadline(t *testing.T) {
	t.Parallel()
	db := sqlitetest.Open(t)
	e := &blocked{started: make(chan string, 1), release: make(chan struct{})}
	s, _ := services(t, db, e)
	s.BackgroundTimeout = 50 * time.Millisecond
	u, a := account(t, db)
	ctx := context.Background()
	r, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "slow", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Turn.Status != ams.TurnRunning || !r.Turn.Background || r.Turn.Deadline == nil {
		t.Fatalf("background turn: %+v", r.Turn)
	}
	// Stored at once (not deferred): another process can take it over.
	if _, err := db.FindTurn(ctx, u.ID, r.Turn.ID); err != nil {
		t.Fatalf("a background turn is stored at its start: %v", err)
	}
	if _, err := r.Result(); !hasCode(err, "background_turn_timeout") {
		t.Fatalf("background turn past its deadline: %v", err)
	}
	tr, _ := db.FindTurn(ctx, u.ID, r.Turn.ID)
	if tr.Status != ams.TurnFailed || tr.Error == nil || tr.Error.Code != "background_turn_timeout" || tr.StopReason != ams.StopError {
		t.Fatalf("turn %+v", tr)
	}
	wait.Eventually(t, "turn.failed", func() bool {
		p, err := db.ListEvents(ctx, u.ID, ams.EventFilter{Type: ams.EventTurnFailed}, ams.ListParams{Limit: 10})
		return err == nil && len(p.Data) == 1
	})
}

// TestRunnerTakesUpTurns: a running turn whose process died (its lease
// lapsed) is taken over by another process's runner and completed,
// resumed; one past its background deadline fails; a queued turn next in
// its conversation (its sender died) is started.
func TestRunnerTakesUpTurns(t *testing.T) {
	onBoth(t, func(t *testing.T, db ams.Store) {
		ctx := context.Background()
		e := &overlapEngine{}
		dead, live := services(t, db, e)
		u, a := account(t, db)
		// A "dead" process's turns, as stored: a conversation with an
		// abandoned background turn and a turn queued behind it.
		now := time.Now().UTC()
		abandoned := func(msg string, deadline time.Time) (*ams.Turn, string) {
			conv := &ams.Conversation{ID: ams.NewID(ams.PrefixConversation), UserID: u.ID, AssistantID: a.ID, Title: msg, CreatedAt: now, UpdatedAt: now, LastMessageAt: now}
			in := &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: u.ID, AssistantID: a.ID, ConversationID: conv.ID, Direction: ams.DirectionInbound,
				Content: msg, Metadata: ams.Metadata{}, CreatedAt: now, UpdatedAt: now}
			tr := &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: u.ID, AssistantID: a.ID, ConversationID: conv.ID, InboundMessageID: in.ID,
				Status: ams.TurnRunning, Background: true, Deadline: &deadline, LeaseUntil: now.Add(-time.Second), Attempt: 1, CreatedAt: now, UpdatedAt: now}
			if err := db.SaveExchange(ctx, &ams.Exchange{NewConversation: conv, ConversationID: conv.ID, Inbound: in, Turn: tr,
				Events: []*ams.Event{ams.MessageCreatedEvent(in)}}); err != nil {
				t.Fatal(err)
			}
			return tr, conv.ID
		}
		tr, conv := abandoned("first", now.Add(time.Hour))
		late, _ := abandoned("too late", now.Add(-time.Millisecond))
		queued, err := dead.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, ConversationID: conv, Message: "second", Background: true})
		if err != nil || queued.Turn.Status != ams.TurnQueued {
			t.Fatalf("queued behind the abandoned turn: %+v %v", queued.Turn, err)
		}
		// The live process's runner takes them up.
		wait.Eventually(t, "the turns to be taken up", func() bool {
			live.RunTurnsOnce(ctx)
			q, _ := db.FindTurn(ctx, u.ID, queued.Turn.ID)
			l, _ := db.FindTurn(ctx, u.ID, late.ID)
			return q != nil && q.Status == ams.TurnCompleted && l != nil && l.Status == ams.TurnFailed
		})
		got, _ := db.FindTurn(ctx, u.ID, tr.ID)
		if got.Status != ams.TurnCompleted || got.Attempt != 2 {
			t.Fatalf("taken-over turn: %+v", got)
		}
		if l, _ := db.FindTurn(ctx, u.ID, late.ID); l.Error == nil || l.Error.Code != "background_turn_timeout" {
			t.Fatalf("turn past its deadline: %+v", l)
		}
		evs, _ := db.TurnEvents(ctx, tr.ID, 0, 100)
		if len(evs) == 0 || evs[0].Type != messaging.EventTurnStarted || !strings.Contains(string(evs[0].Data), `"resumed":true`) ||
			evs[len(evs)-1].Type != messaging.EventTurnCompleted {
			t.Fatalf("stream of the taken-over turn: %v", evs)
		}
		msgs, _ := db.RecentMessages(ctx, u.ID, conv, 10)
		if len(msgs) != 4 || msgs[2].Content != "second" || msgs[3].Content != "re: second" {
			t.Fatalf("conversation after the runner: %v", msgs)
		}
		if e.max.Load() != 1 || e.bad.Load() != nil {
			t.Fatalf("overlap %d, history %v", e.max.Load(), e.bad.Load())
		}
	})
}

// TestQueuedStreamedTurnStreams: a turn sent with Stream that waits in
// the queue asks its engine to stream once it starts (the stream flag is
// stored with the turn: whoever starts it reads it), so that its stream
// carries the reply's deltas as produced, here and in another process,
// not the reply as one delta.
func TestQueuedStreamedTurnStreams(t *testing.T) {
	onBoth(t, func(t *testing.T, db ams.Store) {
		ctx := context.Background()
		started, release := make(chan string, 4), make(chan struct{})
		var asked atomic.Bool
		e := streamEngine(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
			msg := req.History[len(req.History)-1].Content
			if msg == "one" {
				started <- msg
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-release:
				}
				return &ams.Reply{Content: "re: one"}, nil
			}
			if req.Stream == nil {
				return &ams.Reply{Content: "re: " + msg}, nil
			}
			asked.Store(true)
			for _, p := range []string{"re: ", msg, "!"} {
				if err := req.Stream(p); err != nil {
					return nil, err
				}
			}
			return &ams.Reply{Content: "re: " + msg + "!"}, nil
		})
		s1, s2 := services(t, db, e)
		u, a := account(t, db)
		first, err := s1.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "one", Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		<-started
		second, err := s1.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, ConversationID: first.Turn.ConversationID, Message: "two", Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		if second.Turn.Status != ams.TurnQueued {
			t.Fatalf("second turn: %s", second.Turn.Status)
		}
		stored, err := db.FindTurn(ctx, u.ID, second.Turn.ID)
		if err != nil || !stored.Stream {
			t.Fatalf("the queued turn's stream flag is not stored: %+v %v", stored, err)
		}
		// Followed here (the send's own stream) and from another process.
		type seen struct {
			deltas []string
			err    error
		}
		follow := func(f func(send func(*ams.TurnEvent) error) error) <-chan seen {
			out := make(chan seen, 1)
			go func() {
				var got seen
				got.err = f(func(ev *ams.TurnEvent) error {
					if ev.Type == messaging.EventMessageDelta {
						var d messaging.DeltaData
						_ = json.Unmarshal(ev.Data, &d)
						got.deltas = append(got.deltas, d.Delta)
					}
					return nil
				})
				out <- got
			}()
			return out
		}
		here := follow(func(send func(*ams.TurnEvent) error) error { return second.Follow(ctx, 0, send) })
		there := follow(func(send func(*ams.TurnEvent) error) error {
			return s2.FollowStored(ctx, u.ID, second.Turn.ID, 0, 5*time.Millisecond, send)
		})
		close(release)
		reply, err := second.Result()
		if err != nil || reply.Content != "re: two!" {
			t.Fatalf("second reply %+v %v", reply, err)
		}
		if !asked.Load() {
			t.Fatal("the queued turn's engine was not asked to stream")
		}
		for name, c := range map[string]<-chan seen{"here": here, "in another process": there} {
			got := <-c
			if got.err != nil || strings.Join(got.deltas, "|") != "re: |two|!" {
				t.Fatalf("followed %s: deltas %q err %v", name, got.deltas, got.err)
			}
		}
	})
}
