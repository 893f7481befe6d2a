package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlite"
)

// BenchmarkClaimJobsWithBacklog claims from a queue of 30,000 jobs (three
// webhooks, 10,000 events): the claim must not scan the backlog.
func BenchmarkClaimJobsWithBacklog(b *testing.B) {
	db, err := sqlite.Open(context.Background(), b.TempDir()+"/ams.db")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "x@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "a", Model: ams.ModelBuiltin, CreatedAt: t0, UpdatedAt: t0}
	if err := db.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	if err := db.CreateAssistant(ctx, a); err != nil {
		b.Fatal(err)
	}
	for range 3 {
		w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: "https://example.com/", Events: []string{ams.EventMessageCreated},
			Active: true, Status: ams.WebhookActive, Secret: "0123456789abcdef", CreatedAt: t0, UpdatedAt: t0}
		if err := db.CreateWebhook(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	for range 5000 {
		c := ams.NewID(ams.PrefixConversation)
		msg := func(dir string) *ams.Message {
			return &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: u.ID, AssistantID: a.ID, ConversationID: c, Direction: dir, Content: "x", CreatedAt: t0, UpdatedAt: t0}
		}
		in, out := msg(ams.DirectionInbound), msg(ams.DirectionOutbound)
		x := &ams.Exchange{NewConversation: &ams.Conversation{ID: c, UserID: u.ID, AssistantID: a.ID, Title: "x", LastMessageAt: t0, CreatedAt: t0, UpdatedAt: t0},
			ConversationID: c, Inbound: in, Reply: out, Events: []*ams.Event{ams.MessageCreatedEvent(in), ams.MessageCreatedEvent(out)}}
		if err := db.SaveExchange(ctx, x); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	now := t0
	for b.Loop() {
		// A fresh lease window each time, so every claim finds due jobs.
		now = now.Add(2 * time.Minute)
		jobs, err := db.ClaimJobs(ctx, now, ams.Claim{Lease: time.Minute, Limit: 64, PerWebhook: 8})
		if err != nil || len(jobs) != 24 {
			b.Fatalf("claimed %d: %v", len(jobs), err)
		}
	}
}
