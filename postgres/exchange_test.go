package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/postgres"
	"github.com/jackc/pgx/v5"
)

// writeTracer holds, once armed, the first batch that inserts
// conversations (a whole turn's write: sqlstore's exchange.go) until
// release is closed, and records how many conversations each such
// batch inserted.
type writeTracer struct {
	armed atomic.Bool
	holder
}

func (h *writeTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (h *writeTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (h *writeTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	if !h.armed.Load() {
		return ctx
	}
	for _, q := range d.Batch.QueuedQueries {
		if !strings.HasPrefix(q.SQL, "INSERT INTO conversations") {
			continue
		}
		h.seen(len(q.Arguments) / 9)
	}
	return ctx
}
func (h *writeTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (h *writeTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (h *writeTracer) arm() {
	h.reset()
	h.armed.Store(true)
}

// heldWrites opens a store whose whole-turn writes writeTracer can
// hold, with two accounts, an assistant each, and a webhook of the first
// subscribed to message.created.
func heldWrites(t *testing.T) (*postgres.DB, *writeTracer, []*ams.User, []*ams.Assistant, *ams.Webhook) {
	t.Helper()
	ctx := context.Background()
	url := databaseURL(t)
	h := &writeTracer{}
	db, err := postgres.Open(ctx, url, postgres.WithSecretKey(testKey), postgres.WithSchema(createSchema(t, url)), postgres.WithTracer(h))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var us []*ams.User
	var as []*ams.Assistant
	for i := range 2 {
		u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: fmt.Sprintf("writes%d@example.com", i), Plan: ams.PlanStandard, Timezone: "UTC",
			CreatedAt: exchangeT0, UpdatedAt: exchangeT0}
		a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "a", Model: ams.ModelBuiltin, CreatedAt: exchangeT0, UpdatedAt: exchangeT0}
		if err := db.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateAssistant(ctx, a); err != nil {
			t.Fatal(err)
		}
		us, as = append(us, u), append(as, a)
	}
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: us[0].ID, URL: "https://example.com/hook",
		Events: []string{ams.EventMessageCreated}, Active: true, Status: ams.WebhookActive, Secret: "whsec_test", CreatedAt: exchangeT0, UpdatedAt: exchangeT0}
	if err := db.CreateWebhook(ctx, w); err != nil {
		t.Fatal(err)
	}
	return db, h, us, as, w
}

var exchangeT0 = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

// newExchange is a whole turn of u's in a new conversation: the
// question, the answer, their message.created events.
func newExchange(u *ams.User, a *ams.Assistant, text string) *ams.Exchange {
	conv := ams.NewID(ams.PrefixConversation)
	msg := func(dir, content string) *ams.Message {
		return &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: u.ID, AssistantID: a.ID, ConversationID: conv, Direction: dir,
			Content: content, CreatedAt: exchangeT0, UpdatedAt: exchangeT0}
	}
	x := &ams.Exchange{ConversationID: conv, Inbound: msg(ams.DirectionInbound, text), Reply: msg(ams.DirectionOutbound, "re: "+text),
		NewConversation: &ams.Conversation{ID: conv, UserID: u.ID, AssistantID: a.ID, Title: text, LastMessageAt: exchangeT0, CreatedAt: exchangeT0, UpdatedAt: exchangeT0}}
	x.Events = []*ams.Event{ams.MessageCreatedEvent(x.Inbound), ams.MessageCreatedEvent(x.Reply)}
	return x
}

// TestCombinedExchanges: whole turns stored while another is in flight
// wait for it, then go together in one transaction whose statements
// carry all their rows; each is stored as alone (its account's
// conversation, messages and events, a job for each event a webhook of
// its account is subscribed to). When one of them cannot be stored (its
// conversation id is taken) the transaction fails and each runs again
// alone: that one fails, the others are stored.
func TestCombinedExchanges(t *testing.T) {
	ctx := context.Background()
	db, h, us, as, w := heldWrites(t)
	taken := newExchange(us[0], as[0], "taken")
	if err := db.SaveExchange(ctx, taken); err != nil {
		t.Fatal(err)
	}
	var stored []*ams.Exchange
	for _, bad := range []bool{false, true} {
		h.arm()
		first := make(chan error, 1)
		held := newExchange(us[0], as[0], "held")
		go func() { first <- db.SaveExchange(ctx, held) }()
		<-h.holding
		const n = 10
		xs := make([]*ams.Exchange, n)
		for i := range xs {
			xs[i] = newExchange(us[i%2], as[i%2], fmt.Sprintf("bad=%v %d", bad, i))
		}
		if bad {
			x := xs[n-1]
			x.ConversationID, x.NewConversation.ID, x.Inbound.ConversationID, x.Reply.ConversationID =
				taken.ConversationID, taken.ConversationID, taken.ConversationID, taken.ConversationID
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, x := range xs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = db.SaveExchange(ctx, x) }()
		}
		wait.Eventually(t, "the writes to queue behind the one in flight", func() bool { return db.ExchangesQueued() == n })
		close(h.release)
		wg.Wait()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		stored = append(stored, held)
		want := []int{1, n}
		if bad {
			// The combined transaction failed; each ran again alone.
			want = append(want, slices.Repeat([]int{1}, n)...)
		}
		if got := h.batches(); !slices.Equal(got, want) {
			t.Fatalf("bad=%v: conversations per write %v, want %v", bad, got, want)
		}
		for i, x := range xs {
			if bad && i == n-1 {
				if errs[i] == nil {
					t.Fatal("an exchange into a taken conversation id was stored")
				}
				if _, err := db.FindMessage(ctx, x.Inbound.UserID, x.Inbound.ID); ams.ErrorKindOf(err) != ams.ENOTFOUND {
					t.Fatalf("the failed exchange's message: %v", err)
				}
				continue
			}
			if errs[i] != nil {
				t.Fatalf("bad=%v: exchange %d: %v", bad, i, errs[i])
			}
			stored = append(stored, x)
		}
	}
	h.armed.Store(false)

	// Each stored as alone, in its own account only.
	var uEvents []string
	for _, x := range append(stored, taken) {
		user := x.Inbound.UserID
		c, err := db.FindConversation(ctx, user, x.ConversationID)
		if err != nil || c.UserID != user || c.MessageCount != 2 || c.Title != x.Inbound.Content {
			t.Fatalf("conversation of %q: %+v %v", x.Inbound.Content, c, err)
		}
		pg, err := db.ListMessages(ctx, user, x.ConversationID, ams.ListParams{Limit: 10, Order: ams.OrderAsc})
		if err != nil || len(pg.Data) != 2 || pg.Data[0].ID != x.Inbound.ID || pg.Data[1].Content != x.Reply.Content {
			t.Fatalf("messages of %q: %+v %v", x.Inbound.Content, pg, err)
		}
		for _, o := range us {
			if o.ID == user {
				continue
			}
			if _, err := db.FindConversation(ctx, o.ID, x.ConversationID); ams.ErrorKindOf(err) != ams.ENOTFOUND {
				t.Fatalf("another account's conversation: %v", err)
			}
			if _, err := db.FindEvent(ctx, o.ID, x.Events[0].ID); ams.ErrorKindOf(err) != ams.ENOTFOUND {
				t.Fatalf("another account's event: %v", err)
			}
		}
		for _, e := range x.Events {
			if got, err := db.FindEvent(ctx, user, e.ID); err != nil || got.Type != ams.EventMessageCreated {
				t.Fatalf("event %s: %+v %v", e.ID, got, err)
			}
			if user == us[0].ID {
				uEvents = append(uEvents, e.ID)
			}
		}
	}
	jobs, err := db.ClaimJobs(ctx, exchangeT0.Add(time.Hour), ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jobs {
		if j.WebhookID != w.ID || j.UserID != us[0].ID {
			t.Fatalf("job %+v: not the first account's webhook", j)
		}
		got = append(got, j.Event.ID)
	}
	slices.Sort(got)
	slices.Sort(uEvents)
	if !slices.Equal(got, uEvents) {
		t.Fatalf("jobs for %d events, want the %d of the first account", len(got), len(uEvents))
	}
}

// TestCombinedExchangeGivesUp: a write queued behind one in flight whose
// caller goes away leaves the queue with its context's error and stores
// nothing; the write in flight ends as usual.
func TestCombinedExchangeGivesUp(t *testing.T) {
	ctx := context.Background()
	db, h, us, as, _ := heldWrites(t)
	h.arm()
	first := make(chan error, 1)
	held := newExchange(us[0], as[0], "held")
	go func() { first <- db.SaveExchange(ctx, held) }()
	<-h.holding
	gone := newExchange(us[0], as[0], "gone")
	leavesQueue(t, "write", db.ExchangesQueued, func(ctx context.Context) error { return db.SaveExchange(ctx, gone) })
	close(h.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, err := db.FindConversation(ctx, us[0].ID, held.ConversationID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FindConversation(ctx, us[0].ID, gone.ConversationID); ams.ErrorKindOf(err) != ams.ENOTFOUND {
		t.Fatalf("the abandoned write's conversation: %v", err)
	}
	if got := h.batches(); !slices.Equal(got, []int{1}) {
		t.Fatalf("conversations per write %v, want [1]", got)
	}
}
