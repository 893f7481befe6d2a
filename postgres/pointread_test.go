package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/postgres"
	"github.com/jackc/pgx/v5"
)

// holdTracer holds the first combined read (sqlstore's pointread.go) it
// sees until release is closed, and records how many reads each
// combined statement carried.
type holdTracer struct{ holder }

func (h *holdTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "WITH ORDINALITY") || len(d.Args) == 0 {
		return ctx
	}
	ids, _ := d.Args[0].([]string)
	h.seen(len(ids))
	return ctx
}

func (h *holdTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// heldReads opens a store whose first combined read holdTracer holds,
// with a user (and another) whose exchange stored two messages: the
// question and its answer.
func heldReads(t *testing.T) (*postgres.DB, *holdTracer, *ams.User, *ams.User, *ams.Exchange) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	url := databaseURL(t)
	h := &holdTracer{}
	h.reset()
	db, err := postgres.Open(ctx, url, postgres.WithSecretKey(testKey), postgres.WithSchema(createSchema(t, url)), postgres.WithTracer(h))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "reads@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	other := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "reads2@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "a", Model: ams.ModelBuiltin, CreatedAt: now, UpdatedAt: now}
	for _, err := range []error{db.CreateUser(ctx, u), db.CreateUser(ctx, other), db.CreateAssistant(ctx, a)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	conv := ams.NewID(ams.PrefixConversation)
	msg := func(dir, content string) *ams.Message {
		return &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: u.ID, AssistantID: a.ID, ConversationID: conv, Direction: dir,
			Content: content, CreatedAt: now, UpdatedAt: now}
	}
	x := &ams.Exchange{ConversationID: conv, Inbound: msg(ams.DirectionInbound, "question"), Reply: msg(ams.DirectionOutbound, "answer"),
		NewConversation: &ams.Conversation{ID: conv, UserID: u.ID, AssistantID: a.ID, Title: "q", LastMessageAt: now, CreatedAt: now, UpdatedAt: now}}
	if err := db.SaveExchange(ctx, x); err != nil {
		t.Fatal(err)
	}
	return db, h, u, other, x
}

// TestCombinedReads: reads of one message made while another is in
// flight wait for it and then go together, in one statement; each gets
// its own answer (its record, a record of its own when two ask for one,
// not found for another account's or a missing one), and a read in a
// transaction is never combined.
func TestCombinedReads(t *testing.T) {
	ctx := context.Background()
	db, h, u, other, x := heldReads(t)

	// The first read is held in flight.
	first := make(chan error, 1)
	go func() {
		m, err := db.FindMessage(ctx, u.ID, x.Reply.ID)
		if err == nil && m.Content != "answer" {
			err = ams.Errorf(ams.EINTERNAL, "", "first read: %q", m.Content)
		}
		first <- err
	}()
	<-h.holding
	type ask struct{ user, id, want string } // want: the content, or "" for not found
	asks := []ask{{u.ID, x.Inbound.ID, "question"}, {u.ID, x.Reply.ID, "answer"}, {other.ID, x.Inbound.ID, ""}, {u.ID, "msg_missing", ""}}
	const each = 5
	got := make([][]*ams.Message, len(asks))
	errs := make([][]error, len(asks))
	var wg sync.WaitGroup
	for i, k := range asks {
		got[i], errs[i] = make([]*ams.Message, each), make([]error, each)
		for j := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i][j], errs[i][j] = db.FindMessage(ctx, k.user, k.id)
			}()
		}
	}
	wait.Eventually(t, "the reads to queue behind the one in flight", func() bool { return db.ReadsQueued() == len(asks)*each })
	close(h.release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	sizes := h.batches()
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != len(asks)*each {
		t.Fatalf("combined statements carried %v reads, want [1 %d]", sizes, len(asks)*each)
	}
	for i, k := range asks {
		seen := map[*ams.Message]bool{}
		for j := range each {
			m, err := got[i][j], errs[i][j]
			if k.want == "" {
				if ams.ErrorKindOf(err) != ams.ENOTFOUND {
					t.Errorf("read %d of %s by %s: %v %v, want not found", j, k.id, k.user, m, err)
				}
				continue
			}
			if err != nil || m.ID != k.id || m.Content != k.want || m.UserID != u.ID || !m.CreatedAt.Equal(x.Inbound.CreatedAt) {
				t.Errorf("read %d of %s: %+v %v", j, k.id, m, err)
				continue
			}
			if seen[m] {
				t.Errorf("two reads of %s share one record", k.id)
			}
			seen[m] = true
		}
	}

	// In a transaction a read locks its row and is never combined.
	if err := db.Update(ctx, func(tx ams.Tx) error {
		_, err := tx.FindMessage(ctx, u.ID, x.Inbound.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if sizes := h.batches(); len(sizes) != 2 {
		t.Fatalf("a read in a transaction was combined: %v", sizes)
	}
}

// TestCombinedReadGivesUp: a read queued behind a combined read in flight
// waits no longer than its context allows: it answers with its
// context's error at once, leaves the queue, and the read in flight
// ends as usual.
func TestCombinedReadGivesUp(t *testing.T) {
	db, h, u, _, x := heldReads(t)
	first := make(chan error, 1)
	go func() {
		_, err := db.FindMessage(context.Background(), u.ID, x.Reply.ID)
		first <- err
	}()
	<-h.holding
	leavesQueue(t, "read", db.ReadsQueued, func(ctx context.Context) error {
		_, err := db.FindMessage(ctx, u.ID, x.Inbound.ID)
		return err
	})
	close(h.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if m, err := db.FindMessage(context.Background(), u.ID, x.Inbound.ID); err != nil || m.Content != "question" {
		t.Fatalf("a read after: %v %v", m, err)
	}
}
