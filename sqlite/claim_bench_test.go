package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlite"
)

// backlog opens a store whose queue holds 30,000 jobs: three webhooks of
// one account, 10,000 message.created events.
func backlog(b *testing.B) (*sqlite.DB, time.Time) {
	db, err := sqlite.Open(context.Background(), b.TempDir()+"/ams.db")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
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
	return db, t0
}

// BenchmarkClaimJobsWithBacklog claims from a queue of 30,000 jobs: the
// claim must not scan the backlog.
func BenchmarkClaimJobsWithBacklog(b *testing.B) {
	db, t0 := backlog(b)
	ctx := context.Background()
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

// BenchmarkDeliveryCycle is the database work of one delivery on the
// single writer, as the worker drains a backlog: its share of a claim of
// 24 jobs and the record of its successful attempt. ns/op is per delivery.
func BenchmarkDeliveryCycle(b *testing.B) {
	db, t0 := backlog(b)
	ctx := context.Background()
	now := t0.Add(time.Second)
	var jobs []*ams.Job
	code := 200
	for b.Loop() {
		if len(jobs) == 0 {
			var err error
			if jobs, err = db.ClaimJobs(ctx, now, ams.Claim{Lease: time.Minute, Limit: 64, PerWebhook: 8}); err != nil || len(jobs) == 0 {
				b.Fatalf("claimed %d: %v", len(jobs), err)
			}
		}
		j := jobs[0]
		jobs = jobs[1:]
		d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: j.UserID, WebhookID: j.WebhookID, EventID: j.Event.ID, EventType: j.Event.Type,
			Attempt: 1, URL: j.URL, Success: true, StatusCode: &code, DurationMS: 2, ResponseBody: "ok", CreatedAt: now}
		if _, err := db.RecordAttempt(ctx, &ams.AttemptResult{Job: j, Delivery: d, Outcome: ams.JobSucceeded}, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordAndClaim is the writer's work of a drain as the worker
// does it on SQLite: batches of 1 to 8 ended deliveries (as many as end
// while the previous batch commits) recorded in the transaction that
// claims their successors, 24 deliveries in flight under the caps of 8
// per webhook. ns/delivery is the writer's time per delivery.
func BenchmarkRecordAndClaim(b *testing.B) {
	db, t0 := backlog(b)
	ctx := context.Background()
	now := t0.Add(time.Second)
	claim := ams.Claim{Lease: time.Minute, Limit: 64, PerWebhook: 8}
	flight, err := db.ClaimJobs(ctx, now, claim)
	if err != nil || len(flight) != 24 {
		b.Fatalf("claimed %d: %v", len(flight), err)
	}
	code, n, delivered := 200, 0, 0
	for b.Loop() {
		n++
		k := 1 + n%8
		rs := make([]*ams.AttemptResult, k)
		for i, j := range flight[:k] {
			d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: j.UserID, WebhookID: j.WebhookID, EventID: j.Event.ID, EventType: j.Event.Type,
				Attempt: 1, URL: j.URL, Success: true, StatusCode: &code, DurationMS: 2, ResponseBody: "ok", CreatedAt: now}
			rs[i] = &ams.AttemptResult{Job: j, Delivery: d, Outcome: ams.JobSucceeded}
		}
		claim.Limit = k
		errs, next, claimErr, err := db.RecordAttemptsAndClaim(ctx, rs, now, claim)
		if err != nil || claimErr != nil || len(next) != k {
			b.Fatalf("recorded %d (%v), claimed %d of %d: %v", len(rs), err, len(next), k, claimErr)
		}
		for _, e := range errs {
			if e != nil {
				b.Fatal(e)
			}
		}
		flight = append(flight[k:], next...)
		delivered += k
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(delivered), "ns/delivery")
}
