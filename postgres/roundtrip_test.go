package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/postgres"
	"github.com/amsdev/ams/world"
	"github.com/jackc/pgx/v5"
)

// tripCounter counts what a store sends: single statements (BEGIN and
// COMMIT among them) and batches, each one round trip.
type tripCounter struct {
	mu      sync.Mutex
	on      bool
	queries []string
	batches int
	batched []string // the statements the batches carried
	sql     []string // every statement's text, single or batched
}

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	// The wake-up of other processes (pg_notify) is sent after the commit
	// by the store's notifier goroutine, not by the turn: not counted.
	if c.on && !strings.Contains(d.SQL, "pg_notify") {
		c.queries = append(c.queries, strings.Fields(d.SQL)[0])
		c.sql = append(c.sql, d.SQL)
	}
	c.mu.Unlock()
	return ctx
}

func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.mu.Lock()
	if c.on {
		c.batches++
	}
	c.mu.Unlock()
	return ctx
}

func (c *tripCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.mu.Lock()
	if c.on {
		c.batched = append(c.batched, strings.Fields(d.SQL)[0])
		c.sql = append(c.sql, d.SQL)
	}
	c.mu.Unlock()
}
func (c *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// tripsStore opens a store on a schema of its own whose statements tc
// counts, with a user and an assistant made at now.
func tripsStore(t *testing.T, now time.Time) (*postgres.DB, *tripCounter, *ams.User, *ams.Assistant) {
	t.Helper()
	url := databaseURL(t)
	tc := &tripCounter{}
	db, err := postgres.Open(context.Background(), url, postgres.WithSecretKey(testKey), postgres.WithSchema(createSchema(t, url)), postgres.WithTracer(tc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "trips@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "a", Model: ams.ModelBuiltin, CreatedAt: now, UpdatedAt: now}
	if err := db.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateAssistant(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return db, tc, u, a
}

// TestTurnRoundTrips: a short conversation turn stored whole (new
// conversation, two messages, two events fanned out to a webhook, the
// turn and its stream) costs PostgreSQL one pipelined batch carrying BEGIN
// (lazyTx) and COMMIT (BatchCommit): one round trip, however many
// statements it carries. In an existing conversation, which is updated
// (and so found) first, it is one batch more. A batch that fails commits
// nothing, and the store goes on.
func TestTurnRoundTrips(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	db, tc, u, a := tripsStore(t, now)
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: "https://example.com/h", Events: []string{ams.EventMessageCreated},
		Active: true, Status: ams.WebhookActive, Secret: "s", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateWebhook(ctx, w); err != nil {
		t.Fatal(err)
	}
	conv := ams.NewID(ams.PrefixConversation)
	msg := func(dir string, at time.Time) *ams.Message {
		return &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: u.ID, AssistantID: a.ID, ConversationID: conv, Direction: dir,
			Content: "hi", CreatedAt: at, UpdatedAt: at}
	}
	x := &ams.Exchange{ConversationID: conv, Inbound: msg(ams.DirectionInbound, now), Reply: msg(ams.DirectionOutbound, now.Add(time.Millisecond)),
		NewConversation: &ams.Conversation{ID: conv, UserID: u.ID, AssistantID: a.ID, Title: "hi", LastMessageAt: now, CreatedAt: now, UpdatedAt: now}}
	x.Events = []*ams.Event{ams.MessageCreatedEvent(x.Inbound), ams.MessageCreatedEvent(x.Reply)}
	whole := func(x *ams.Exchange) {
		done := now.Add(time.Millisecond)
		x.Turn = &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: u.ID, AssistantID: a.ID, ConversationID: conv,
			InboundMessageID: x.Inbound.ID, ReplyMessageID: x.Reply.ID, Status: ams.TurnCompleted, Attempt: 1, CreatedAt: now, UpdatedAt: done, CompletedAt: &done}
		for i, typ := range []string{"turn.started", "message.delta", "message.completed"} {
			x.Stream = append(x.Stream, &ams.TurnEvent{TurnID: x.Turn.ID, Seq: int64(i + 1), Type: typ, Data: []byte(`{}`), CreatedAt: now})
		}
	}
	whole(x)
	trips := func(x *ams.Exchange) ([]string, int) {
		t.Helper()
		tc.mu.Lock()
		tc.on, tc.queries, tc.batches = true, nil, 0
		tc.mu.Unlock()
		if err := db.SaveExchange(ctx, x); err != nil {
			t.Fatal(err)
		}
		tc.mu.Lock()
		defer tc.mu.Unlock()
		tc.on = false
		return tc.queries, tc.batches
	}
	if queries, batches := trips(x); batches != 1 || len(queries) != 0 {
		t.Fatalf("a turn sent statements %v and %d batches; want 1 batch (BEGIN and COMMIT in it)", queries, batches)
	}
	if jobs, err := db.ClaimJobs(ctx, now.Add(time.Second), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 10}); err != nil || len(jobs) != 2 {
		t.Fatalf("the turn queued %d jobs (%v), want 2", len(jobs), err)
	}
	if c, err := db.FindConversation(ctx, u.ID, conv); err != nil || c.MessageCount != 2 || !c.LastMessageAt.Equal(x.Reply.CreatedAt) {
		t.Fatalf("conversation: %+v %v", c, err)
	}

	y := &ams.Exchange{ConversationID: conv, Inbound: msg(ams.DirectionInbound, now), Reply: msg(ams.DirectionOutbound, now.Add(time.Millisecond))}
	y.Events = []*ams.Event{ams.MessageCreatedEvent(y.Inbound), ams.MessageCreatedEvent(y.Reply)}
	whole(y)
	if queries, batches := trips(y); batches != 2 || len(queries) != 0 {
		t.Fatalf("a turn in an existing conversation sent statements %v and %d batches; want 2 batches (BEGIN with the update, COMMIT with the rest)", queries, batches)
	}

	// A new conversation whose reply reuses a stored message's ID: the
	// batch fails at the messages' INSERT, and its COMMIT never runs.
	conv2 := ams.NewID(ams.PrefixConversation)
	bad := &ams.Exchange{ConversationID: conv2, Inbound: msg(ams.DirectionInbound, now), Reply: y.Reply,
		NewConversation: &ams.Conversation{ID: conv2, UserID: u.ID, AssistantID: a.ID, Title: "hi", LastMessageAt: now, CreatedAt: now, UpdatedAt: now}}
	bad.Inbound.ConversationID = conv2
	bad.Events = []*ams.Event{ams.MessageCreatedEvent(bad.Inbound)}
	if err := db.SaveExchange(ctx, bad); err == nil {
		t.Fatal("an exchange reusing a message's ID was stored")
	}
	if _, err := db.FindConversation(ctx, u.ID, conv2); !ams.IsNotFound(err) {
		t.Errorf("the failed exchange's conversation: %v, want not found (nothing committed)", err)
	}
	if _, err := db.FindMessage(ctx, u.ID, bad.Inbound.ID); !ams.IsNotFound(err) {
		t.Errorf("the failed exchange's inbound message: %v, want not found", err)
	}
	z := &ams.Exchange{ConversationID: conv, Inbound: msg(ams.DirectionInbound, now), Reply: msg(ams.DirectionOutbound, now.Add(time.Millisecond))}
	whole(z)
	if err := db.SaveExchange(ctx, z); err != nil {
		t.Fatalf("a turn after the failed one: %v", err)
	}
	if c, err := db.FindConversation(ctx, u.ID, conv); err != nil || c.MessageCount != 6 {
		t.Fatalf("conversation after three turns: %+v %v, want 6 messages", c, err)
	}
}

// TestToolActionRoundTrips: a tool's action that makes a record
// (create_task through world.Service.RunAction) reads its assistant once,
// locked, in the transaction that makes the task, emits task.created and
// stores the action: the two ownership checks that followed (the task's,
// the action's) no longer cost a query each, 5 round trips instead of 7.
func TestToolActionRoundTrips(t *testing.T) {
	ctx := context.Background()
	db, tc, u, a := tripsStore(t, time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	svc := &world.Service{Store: db}
	tc.mu.Lock()
	tc.on, tc.queries, tc.batches, tc.batched, tc.sql = true, nil, 0, nil, nil
	tc.mu.Unlock()
	act, err := svc.RunAction(ctx, u.ID, a, "", world.ToolCreateTask, []byte(`{"title":"Buy milk"}`))
	tc.mu.Lock()
	tc.on = false
	queries, batches, batched, sqls := tc.queries, tc.batches, tc.batched, tc.sql
	tc.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	var reads int
	for _, q := range sqls {
		if strings.Contains(q, "FROM assistants") {
			reads++
		}
	}
	if reads != 1 {
		t.Fatalf("the action read its assistant %d times (%v, and %d batches of %v), want once", reads, queries, batches, batched)
	}
	// BEGIN with the assistant's read; the task; the event with its
	// fan-out; the action; COMMIT (7 when the task and the action each
	// checked the assistant again).
	if trips := len(queries) + batches; trips != 5 {
		t.Fatalf("the action cost %d round trips (%v, and %d batches of %v), want 5", trips, queries, batches, batched)
	}
	if p, err := db.ListTasks(ctx, u.ID, ams.TaskFilter{}, ams.ListParams{Limit: 10}); err != nil || len(p.Data) != 1 || p.Data[0].Title != "Buy milk" {
		t.Fatalf("tasks after the action: %+v %v", p, err)
	}
	if got, err := db.FindAction(ctx, u.ID, act.ID); err != nil || got.Status != ams.ActionSucceeded {
		t.Fatalf("the action: %+v %v", got, err)
	}
}
