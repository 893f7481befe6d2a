package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// TestClaimPlanUsesWebhookDueIndex: the claim reads each webhook's due
// jobs through webhook_jobs_webhook_due, in due order, without filtering
// other webhooks' jobs or sorting a backlog, even with the statistics of
// a queue analyzed while it held only delivered jobs and then given a
// backlog of which one webhook's jobs come last (migration 0020).
func TestClaimPlanUsesWebhookDueIndex(t *testing.T) {
	ctx := context.Background()
	open, _, _ := internalSchema(t)
	db := open()
	exec := func(sql string) {
		t.Helper()
		if _, err := db.pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	at := time.UnixMilli(0)
	if err := db.CreateUser(ctx, &ams.User{ID: "u1", Email: "u1@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"w1", "w2", "w3", "w4"} {
		if err := db.CreateWebhook(ctx, &ams.Webhook{ID: id, UserID: "u1", URL: "https://example.com/" + id, Events: []string{ams.EventMessageCreated},
			Active: true, Status: ams.WebhookActive, Secret: "secret-" + id, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO events (id, user_id, type, data, created_at)
		SELECT 'e' || i, 'u1', 'message.created', '{}', i FROM generate_series(1, 10000) i`)
	// Delivered jobs, analyzed while nothing was pending.
	exec(`INSERT INTO webhook_jobs (user_id, webhook_id, event_id, state, next_at, created_at, updated_at)
		SELECT 'u1', 'w' || (1 + i % 4), 'e' || (1 + i % 4000), 'succeeded', i, i, i FROM generate_series(1, 12000) i`)
	exec(`ANALYZE webhook_jobs`)
	// Then a backlog: three webhooks' jobs interleaved, the fourth's after
	// them all; four of each webhook's jobs are in flight.
	exec(`INSERT INTO webhook_jobs (user_id, webhook_id, event_id, state, next_at, created_at, updated_at)
		SELECT 'u1', CASE WHEN i <= 4500 THEN 'w' || (1 + i % 3) ELSE 'w4' END, 'e' || (4000 + i), 'pending', 100000 + i, i, i
		FROM generate_series(1, 6000) i`)
	now := time.UnixMilli(200000)
	exec(`UPDATE webhook_jobs SET lease_until = 300000 WHERE seq IN (
		SELECT seq FROM (SELECT seq, row_number() OVER (PARTITION BY webhook_id ORDER BY next_at) AS n FROM webhook_jobs WHERE state = 'pending') r WHERE n <= 4)`)

	rows, err := db.pool.Query(ctx, `EXPLAIN (COSTS OFF) `+claimQuery, now.UnixMilli(), now.Add(15*time.Second).UnixMilli(), 8, 32, 64)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var scan string
	for i, line := range plan {
		if strings.Contains(line, " on webhook_jobs q") {
			scan = line
			if i+1 < len(plan) && strings.Contains(plan[i+1], "Sort") {
				scan += " / " + plan[i+1]
			}
		}
	}
	if !strings.Contains(scan, "Index Scan using webhook_jobs_webhook_due on webhook_jobs q") {
		t.Fatalf("the claim scans each webhook's jobs by %q, want webhook_jobs_webhook_due; plan:\n%s", scan, strings.Join(plan, "\n"))
	}

	// And it claims the oldest due jobs of every webhook, four each (the
	// other four slots of each are in flight).
	jobs, err := db.ClaimJobs(ctx, now, ams.Claim{Lease: 15 * time.Second, Limit: 64, PerWebhook: 8, PerAccount: 64})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, j := range jobs {
		per[j.WebhookID]++
	}
	if len(jobs) != 16 || per["w1"] != 4 || per["w4"] != 4 {
		t.Fatalf("claimed %d jobs, by webhook %v; want 4 of each of the 4 webhooks", len(jobs), per)
	}
}
