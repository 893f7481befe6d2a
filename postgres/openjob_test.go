package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
)

// TestClaimOpensEachJobAlone: a claimed job that cannot be opened (its
// webhook's secret sealed with a key the store was not given) comes
// back with its OpenErr set, beside the claim's other jobs, which open
// as ever; the claim does not fail whole.
func TestClaimOpensEachJobAlone(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	u, hooks := taskWebhooks(t, db, 2)
	if _, err := db.Pool().Exec(ctx, `UPDATE webhooks SET secret_sealed = 'v1:c2VhbGVkIHdpdGggYW5vdGhlciBrZXk' WHERE id = $1`, hooks[1].ID); err != nil {
		t.Fatal(err)
	}
	emitTasks(t, db, u, 1)
	jobs, err := db.ClaimJobs(ctx, time.Now(), ams.Claim{Lease: time.Minute, Limit: 64, PerWebhook: 8})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claimed %d jobs: %v; want both", len(jobs), err)
	}
	for _, j := range jobs {
		switch j.WebhookID {
		case hooks[0].ID:
			if j.OpenErr != nil || j.Secret != "a-very-secret-signing-key" || j.Event.Data["task_id"] == nil {
				t.Fatalf("the good job: open error %v, secret %q, data %v", j.OpenErr, j.Secret, j.Event.Data)
			}
		default:
			if j.OpenErr == nil || j.Secret != "" {
				t.Fatalf("the job whose secret does not unseal: open error %v, secret %q", j.OpenErr, j.Secret)
			}
		}
	}
}
