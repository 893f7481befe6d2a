package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
)

// BenchmarkClaimAndRecordBatch measures one delivery cycle of a busy
// worker on PostgreSQL: a claim of 24 due jobs (3 webhooks, 8 each) and
// the record of their 24 successful attempts in one batch (RecordAttempts,
// the path that key-share-locks the webhooks first).
func BenchmarkClaimAndRecordBatch(b *testing.B) {
	db := pgtest.Open(b)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "x@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0}
	if err := db.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	for range 3 {
		w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: "https://example.com/", Events: []string{ams.EventTaskCreated},
			Active: true, Status: ams.WebhookActive, Secret: "0123456789abcdef", CreatedAt: t0, UpdatedAt: t0}
		if err := db.CreateWebhook(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	emit := func(n int) {
		for range n {
			e := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskCreated,
				Data: map[string]any{"id": ams.NewID(ams.PrefixTask)}, CreatedAt: t0}
			if err := db.Emit(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
	}
	code := 200
	for b.Loop() {
		b.StopTimer()
		emit(8)
		b.StartTimer()
		now := time.Now()
		jobs, err := db.ClaimJobs(ctx, now, ams.Claim{Lease: time.Minute, Limit: 64, PerWebhook: 8})
		if err != nil || len(jobs) != 24 {
			b.Fatalf("claimed %d: %v", len(jobs), err)
		}
		rs := make([]*ams.AttemptResult, len(jobs))
		for i, j := range jobs {
			rs[i] = &ams.AttemptResult{Job: j, Outcome: ams.JobSucceeded, Delivery: &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery),
				UserID: j.UserID, WebhookID: j.WebhookID, EventID: j.Event.ID, EventType: j.Event.Type, Attempt: 1, URL: j.URL,
				Success: true, StatusCode: &code, DurationMS: 2, ResponseBody: "ok", CreatedAt: now}}
		}
		errs, err := db.RecordAttempts(ctx, rs, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range errs {
			if e != nil {
				b.Fatal(e)
			}
		}
	}
}
