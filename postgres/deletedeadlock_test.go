package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// TestRecordWhileWebhookDeleted: recording an attempt while its webhook is
// being deleted never deadlocks. DELETE /v1/webhooks/{id} locks the
// webhook, then (its cascade) the webhook's jobs; the record of an attempt
// locked its job, then (the delivery's foreign key) the webhook, and the
// two met in a deadlock (40P01): a 500 for the DELETE, or a batch of
// attempts not recorded. The test holds the webhook's lock as the DELETE
// does, lets the record wait for what it needs, then takes the jobs' locks
// as the cascade would: the record must wait on the webhook, holding no
// job, and the delete must go through.
func TestRecordWhileWebhookDeleted(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	u, hooks := taskWebhooks(t, db, 1)
	w := hooks[0]
	emitTasks(t, db, u, 3)
	jobs, err := db.ClaimJobs(ctx, time.Now(), ams.Claim{Lease: time.Hour, Limit: 10, PerWebhook: 10})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	rs := make([]*ams.AttemptResult, len(jobs))
	for i, j := range jobs {
		rs[i] = attempt(j, ams.JobSucceeded, time.Now())
	}

	// The delete's first half: the webhook's row, locked.
	del, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer del.Rollback(ctx)
	if _, err := del.Exec(ctx, `SELECT 1 FROM webhooks WHERE id = $1 FOR UPDATE`, w.ID); err != nil {
		t.Fatal(err)
	}
	type result struct {
		errs []error
		err  error
	}
	recorded := make(chan result, 1)
	go func() {
		errs, err := db.RecordAttempts(ctx, rs, time.Now())
		recorded <- result{errs, err}
	}()
	// Wait until the record waits for a lock.
	wait.Eventually(t, "the record to wait for a lock", func() bool {
		var waiting int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND a.datname = current_database() AND a.query LIKE '%webhook%' AND a.pid <> pg_backend_pid()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-recorded:
			t.Fatalf("the record did not wait for the webhook locked by a delete: %v %v", r.errs, r.err)
		default:
		}
		return waiting > 0
	})
	// The cascade's half: the jobs, then the webhook itself.
	if _, err := del.Exec(ctx, `DELETE FROM webhooks WHERE id = $1`, w.ID); err != nil {
		t.Fatalf("delete the webhook while its attempts are recorded: %v", err)
	}
	if err := del.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-recorded
	if r.err != nil {
		t.Fatalf("record attempts of a webhook deleted meanwhile: %v", r.err)
	}
	for i, err := range r.errs {
		if err != nil {
			t.Errorf("attempt %d: %v", i, err)
		}
	}
}
