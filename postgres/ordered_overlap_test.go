package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// TestOrderedOverlappingTransactions pins what an ordered webhook promises
// on PostgreSQL between overlapping transactions (docs/architecture.md,
// "Ordered webhooks"): queue order, which follows cause and effect, and
// which can differ from the event log's catch-up order (txid, seq).
//
// Transaction B begins and writes first (it takes the smaller txid), as
// a transaction of the store does: BEGIN with the claims' lock shared.
// Meanwhile A, a store transaction, emits event a and commits. B then
// reads a (it acts on what A made), emits b and commits. The log lists b
// before a (B's txid is smaller); the ordered webhook gets a, then b
// (A's job was queued before A committed, so before B read it).
func TestOrderedOverlappingTransactions(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	now := time.Now()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "overlap@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: "https://example.com/ordered", Events: []string{ams.EventTaskCreated},
		Active: true, Status: ams.WebhookActive, Secret: "a-very-secret-signing-key", Ordered: true, CreatedAt: now, UpdatedAt: now}
	if err := db.CreateWebhook(ctx, w); err != nil {
		t.Fatal(err)
	}

	b, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback(ctx)
	var bTxid int64
	if err := b.QueryRow(ctx, `SELECT pg_advisory_xact_lock_shared(hashtext('ams.claim'), hashtext(current_schema())) IS NULL,
		pg_current_xact_id()::text::bigint`).Scan(new(bool), &bTxid); err != nil {
		t.Fatal(err)
	}

	a := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskCreated,
		Data: map[string]any{"id": "task_a"}, CreatedAt: time.Now()}
	if err := db.Emit(ctx, a); err != nil {
		t.Fatal(err)
	}

	var seen string
	if err := b.QueryRow(ctx, `SELECT id FROM events WHERE id = $1`, a.ID).Scan(&seen); err != nil {
		t.Fatalf("B reads A's event: %v", err)
	}
	bID, at := ams.NewID(ams.PrefixEvent), time.Now().UnixMilli()
	if _, err := b.Exec(ctx, `INSERT INTO events (id, user_id, type, data, created_at) VALUES ($1, $2, 'task.created', '{"id":"task_b"}', $3)`,
		bID, u.ID, at); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(ctx, `INSERT INTO webhook_jobs (user_id, webhook_id, event_id, next_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $4, $4)`,
		u.ID, w.ID, bID, at); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	var listed []string
	wait.Eventually(t, "both events to be listed", func() bool {
		page, err := db.ListEvents(ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10, Order: ams.OrderAsc})
		if err != nil {
			t.Fatal(err)
		}
		listed = nil
		for _, e := range page.Data {
			listed = append(listed, e.ID)
		}
		return len(listed) == 2
	})
	if want := []string{bID, a.ID}; !slices.Equal(listed, want) {
		t.Fatalf("the log lists %v, want B's event first (its txid %d is the smaller) %v", listed, bTxid, want)
	}

	var delivered []string
	for range 2 {
		claimAt := time.Now().Add(time.Second)
		jobs, err := db.ClaimJobs(ctx, claimAt, ams.Claim{Limit: 10, PerWebhook: 8, Lease: time.Minute})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("after %v: %d jobs of the ordered webhook, %v; want 1", delivered, len(jobs), err)
		}
		j := jobs[0]
		delivered = append(delivered, j.Event.ID)
		code := 200
		r := &ams.AttemptResult{Job: j, Outcome: ams.JobSucceeded, Delivery: &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: u.ID,
			WebhookID: w.ID, EventID: j.Event.ID, EventType: j.Event.Type, Attempt: 1, URL: w.URL, Success: true, StatusCode: &code, CreatedAt: claimAt}}
		if _, err := db.RecordAttempt(ctx, r, claimAt); err != nil {
			t.Fatalf("record: %v", err)
		}
	}
	if want := []string{a.ID, bID}; !slices.Equal(delivered, want) {
		t.Fatalf("the ordered webhook got %v, want A's event, B's cause, first %v", delivered, want)
	}
}
