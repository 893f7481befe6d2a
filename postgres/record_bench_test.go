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
	u, _ := taskWebhooks(b, db, 3)
	for b.Loop() {
		b.StopTimer()
		emitTasks(b, db, u, 8)
		b.StartTimer()
		now := time.Now()
		jobs, err := db.ClaimJobs(ctx, now, ams.Claim{Lease: time.Minute, Limit: 64, PerWebhook: 8})
		if err != nil || len(jobs) != 24 {
			b.Fatalf("claimed %d: %v", len(jobs), err)
		}
		rs := make([]*ams.AttemptResult, len(jobs))
		for i, j := range jobs {
			rs[i] = attempt(j, ams.JobSucceeded, now)
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
