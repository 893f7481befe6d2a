package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// TestClaimsRunPrepared: the claims' statements go through the write
// connection's statement cache like the shared store's: noted in the
// first claim's transaction, prepared after it, and run prepared from the
// next claim on, which claims as before.
func TestClaimsRunPrepared(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "ams.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "x@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "a", Model: ams.ModelBuiltin, CreatedAt: t0, UpdatedAt: t0}
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: "https://example.com/", Events: []string{ams.EventMessageCreated},
		Active: true, Status: ams.WebhookActive, Secret: "0123456789abcdef", CreatedAt: t0, UpdatedAt: t0}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateAssistant(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateWebhook(ctx, w); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c := ams.NewID(ams.PrefixConversation)
		msg := func(dir string) *ams.Message {
			return &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: u.ID, AssistantID: a.ID, ConversationID: c, Direction: dir, Content: "x", CreatedAt: t0, UpdatedAt: t0}
		}
		in, out := msg(ams.DirectionInbound), msg(ams.DirectionOutbound)
		x := &ams.Exchange{NewConversation: &ams.Conversation{ID: c, UserID: u.ID, AssistantID: a.ID, Title: "x", LastMessageAt: t0, CreatedAt: t0, UpdatedAt: t0},
			ConversationID: c, Inbound: in, Reply: out, Events: []*ams.Event{ams.MessageCreatedEvent(in), ams.MessageCreatedEvent(out)}}
		if err := db.SaveExchange(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(now time.Time, want int) {
		t.Helper()
		jobs, err := db.ClaimJobs(ctx, now, ams.Claim{Lease: time.Minute, Limit: 2, PerWebhook: 8})
		if err != nil || len(jobs) != want {
			t.Fatalf("claimed %d jobs (%v), want %d", len(jobs), err, want)
		}
		if _, err := db.ClaimEmails(ctx, now, time.Minute, 10); err != nil {
			t.Fatal(err)
		}
	}
	cached := func(q string) bool {
		db.ws.mu.Lock()
		defer db.ws.mu.Unlock()
		return db.ws.m[q] != nil
	}
	claim(t0.Add(time.Second), 2)
	for name, q := range map[string]string{"due webhooks": dueWebhooksQuery, "webhook jobs": webhookJobsQuery, "lease jobs": leaseJobsQuery,
		"due e-mails": dueEmailsQuery} {
		if !cached(q) {
			t.Errorf("the %s statement is not prepared after a claim", name)
		}
	}
	claim(t0.Add(2*time.Second), 2) // the other two, from the prepared statements
	claim(t0.Add(3*time.Second), 0) // all four leased
}
