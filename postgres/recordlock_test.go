package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// TestRecordsAndTheClaimsLock: a record of successful attempts begins
// without the claims' lock (it queues no job and makes none due), so it
// neither waits for a claim that holds the lock nor, holding it shared,
// makes a claim wait. A record that retries (its job is due again) or
// that ends a webhook's failure streak (it may emit webhook.recovered,
// whose fan-out queues jobs) takes the lock as every transaction does,
// and waits for the claim; each is stored once the claim ends.
func TestRecordsAndTheClaimsLock(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	u, hooks := taskWebhooks(t, db, 2) // the second with a failure streak
	if _, err := db.Pool().Exec(ctx, `UPDATE webhooks SET failure_streak = 2 WHERE id = $1`, hooks[1].ID); err != nil {
		t.Fatal(err)
	}
	emitTasks(t, db, u, 2)
	t0 := time.Now()
	jobs, err := db.ClaimJobs(ctx, t0, ams.Claim{Lease: time.Minute, Limit: 64, PerWebhook: 8})
	if err != nil || len(jobs) != 4 {
		t.Fatalf("claimed %d jobs: %v", len(jobs), err)
	}
	var healthy, streak []*ams.Job
	for _, j := range jobs {
		if j.WebhookID == hooks[0].ID {
			healthy = append(healthy, j)
		} else {
			streak = append(streak, j)
		}
	}
	record := func(ctx context.Context, r *ams.AttemptResult) error {
		errs, err := db.RecordAttempts(ctx, []*ams.AttemptResult{r}, time.Now())
		if err == nil {
			err = errs[0]
		}
		return err
	}

	// A claim in progress: the claims' lock, held alone.
	claim, pid := openTx(t, db)
	if _, err := claim.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('ams.claim'), hashtext(current_schema()))`); err != nil {
		t.Fatal(err)
	}
	// A success on the healthy webhook is stored meanwhile (were it to
	// wait for the lock, the deadline would end it).
	short, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := record(short, attempt(healthy[0], ams.JobSucceeded, t0)); err != nil {
		t.Fatalf("a success recorded while a claim holds its lock: %v", err)
	}
	// A retry, and a success that ends a failure streak, wait for it.
	done := make(chan error, 2)
	go func() { done <- record(ctx, attempt(healthy[1], ams.JobRetry, t0)) }()
	go func() { done <- record(ctx, attempt(streak[0], ams.JobSucceeded, t0)) }()
	wait.Eventually(t, "the retry and the streak's end to wait for the claim", func() bool {
		var n int
		err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&n)
		return err == nil && n >= 2
	})
	select {
	case err := <-done:
		t.Fatalf("a record that needs the claims' lock ended while a claim held it: %v", err)
	default:
	}
	if err := claim.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("a record after the claim: %v", err)
		}
	}
	state := func(j *ams.Job) string {
		var s string
		if err := db.Pool().QueryRow(ctx, `SELECT state FROM webhook_jobs WHERE seq = $1`, j.Seq).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	states := []string{state(healthy[0]), state(healthy[1]), state(streak[0])}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT failure_streak FROM webhooks WHERE id = $1`, hooks[1].ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if states[0] != "succeeded" || states[1] != "pending" || states[2] != "succeeded" || n != 0 {
		t.Fatalf("jobs %v (want succeeded, pending, succeeded), the streak %d (want 0)", states, n)
	}
}
