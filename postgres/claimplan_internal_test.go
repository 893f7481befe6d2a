package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlstore"
	"github.com/jackc/pgx/v5"
)

// TestClaimPlanUsesWebhookDueIndex: the claim reads each webhook's due
// jobs through webhook_jobs_webhook_due, in due order, without filtering
// other webhooks' jobs or sorting a backlog, even with the statistics of
// a queue analyzed while it held only delivered jobs and then given a
// backlog of which one webhook's jobs come last (migration 0020).
func TestClaimPlanUsesWebhookDueIndex(t *testing.T) {
	ctx := context.Background()
	db, exec := claimQueue(t)
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

	plan := explain(t, db.pool, `EXPLAIN (COSTS OFF) `+claimQuery, now.UnixMilli(), now.Add(15*time.Second).UnixMilli(), 8, 32, 64, 256, 4096)
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

// TestClaimCountsInFlightByIndexScan: with the settings claimLock gives
// the claim's transaction, the count of deliveries in flight reads
// webhook_jobs_leased by an index scan, which marks the entries of
// delivered jobs' dead versions so that later claims skip them, and the
// claim plans no bitmap scan, which would read them all again each time;
// in the custom plan and in the generic one. The queue holds what a drain
// leaves: jobs claimed until after now (leases of 15 s) and then
// delivered, a backlog, and 32 deliveries in flight. It is not analyzed,
// as a new queue is not (autovacuum looks once a minute): with the
// planner's defaults it picks the bitmap scan, as it did in the drains of
// bench/multi (docs/benchmarks.md); with statistics, an index scan.
func TestClaimCountsInFlightByIndexScan(t *testing.T) {
	db, exec := claimQueue(t)
	exec(`INSERT INTO events (id, user_id, type, data, created_at)
		SELECT 'e' || i, 'u1', 'message.created', '{}', i FROM generate_series(1, 20000) i`)
	// At now = 200,000: 20,000 jobs claimed with leases ending in the next
	// 15 s, then delivered; a backlog of 2,000 due jobs, of which 32 are
	// in flight.
	exec(`INSERT INTO webhook_jobs (user_id, webhook_id, event_id, state, next_at, lease_until, created_at, updated_at)
		SELECT 'u1', 'w' || (1 + i % 4), 'e' || i, 'pending', i, 200001 + (i * 7919) % 15000, i, i FROM generate_series(1, 20000) i`)
	exec(`UPDATE webhook_jobs SET state = 'succeeded', lease_until = 0`)
	exec(`INSERT INTO webhook_jobs (user_id, webhook_id, event_id, state, next_at, created_at, updated_at)
		SELECT 'u1', 'w' || (1 + i % 4), 'e' || i, 'pending', 100000 + i, i, i FROM generate_series(1, 2000) i`)
	exec(`UPDATE webhook_jobs SET lease_until = 215000 WHERE seq IN (SELECT seq FROM webhook_jobs WHERE state = 'pending' ORDER BY next_at LIMIT 32)`)

	// Both plans: the custom one, for the first runs of the statement,
	// and the generic one that PostgreSQL may switch to after five runs
	// of pgx's prepared statement, in which the planner cannot see now
	// and expects a third of the index.
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		t.Run(mode, func(t *testing.T) {
			plan := claimPlan(t, db, mode)
			var count string
			for _, line := range plan {
				if strings.Contains(line, "webhook_jobs_leased") {
					count = strings.TrimSpace(line)
				}
				if strings.Contains(line, "Bitmap") {
					t.Fatalf("the claim plans a bitmap scan: %q; plan:\n%s", strings.TrimSpace(line), strings.Join(plan, "\n"))
				}
			}
			if !strings.HasPrefix(strings.TrimPrefix(count, "->  "), "Index") {
				t.Fatalf("the in-flight count reads %q, want an index scan of webhook_jobs_leased; plan:\n%s", count, strings.Join(plan, "\n"))
			}
		})
	}
}

// claimPlan returns the claim's plan at now = 200,000 (leases until
// 215,000; 8 a webhook, 32 an account, 64 in all) in a transaction begun
// as a claim's (claimLock) after the statements before, which it rolls
// back, with plan_cache_mode mode: force_custom_plan, the plan of the
// statement's first runs, or force_generic_plan, the one PostgreSQL may
// switch to after five runs of pgx's prepared statement.
func claimPlan(t *testing.T, db *DB, mode string, before ...string) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, sql := range before {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := tx.Exec(ctx, claimLock, db.schema); err != nil {
		t.Fatal(err)
	}
	// A prepared statement outlives the transaction: one name per plan,
	// dropped after.
	for _, sql := range []string{`SET LOCAL plan_cache_mode = ` + mode, `PREPARE claim_` + mode + ` AS ` + claimQuery} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	plan := explain(t, tx, `EXPLAIN (COSTS OFF) EXECUTE claim_`+mode+`(200000, 215000, 8, 32, 64, 256, 4096)`)
	if _, err := tx.Exec(ctx, `DEALLOCATE claim_`+mode); err != nil {
		t.Fatal(err)
	}
	return plan
}

// claimQueue opens a handle on a new schema with an account (u1) and four
// active webhooks (w1 to w4) on message.created, and returns it with a
// function that runs SQL on it.
func claimQueue(t *testing.T) (*DB, func(sql string, args ...any)) {
	t.Helper()
	ctx := context.Background()
	open, _, _ := internalSchema(t)
	db := open()
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
	return db, func(sql string, args ...any) {
		t.Helper()
		if _, err := db.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// explain runs an EXPLAIN statement and returns its plan's lines.
func explain(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string, args ...any) []string {
	t.Helper()
	rows, err := q.Query(context.Background(), sql, args...)
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
	return plan
}

// TestUnorderedJobsNeverReadByHeadIndex: an unordered webhook's due jobs
// and next due time are never read from webhook_jobs_pending_seq, the
// ordered webhooks' index, which would read every pending job of the
// webhook and sort them; not even where the planner would rather, here
// without webhook_jobs_webhook_due, in the custom plan and the generic
// one. The ordered heads are still read from it. The two indexes hold
// the same rows, webhook_jobs_pending_seq in smaller entries: where the
// planner expects one row of each (a queue not yet analyzed) their costs
// tie but for their sizes, and before migration 0036 made its predicate
// one only the heads' lookups state, it took webhook_jobs_pending_seq in
// some of bench/multi's drains, which then ran at half speed.
// (webhook_jobs_webhook_seq, what the planner falls back to here, holds
// every job, finished ones too: never fewer entries than
// webhook_jobs_webhook_due.)
func TestUnorderedJobsNeverReadByHeadIndex(t *testing.T) {
	db, exec := claimQueue(t)
	exec(`INSERT INTO events (id, user_id, type, data, created_at)
		SELECT 'e' || i, 'u1', 'message.created', '{}', i FROM generate_series(1, 2000) i`)
	exec(`INSERT INTO webhook_jobs (user_id, webhook_id, event_id, state, next_at, created_at, updated_at)
		SELECT 'u1', 'w' || (1 + i % 4), 'e' || i, 'pending', 100000 + i, i, i FROM generate_series(1, 2000) i`)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		t.Run(mode, func(t *testing.T) {
			plan := claimPlan(t, db, mode, `DROP INDEX webhook_jobs_webhook_due`)
			heads := 0
			for _, line := range plan {
				if !strings.Contains(line, "webhook_jobs_pending_seq") {
					continue
				}
				if !strings.Contains(line, " on webhook_jobs h") {
					t.Errorf("an unordered webhook's jobs read from the heads' index: %s; plan:\n%s", strings.TrimSpace(line), strings.Join(plan, "\n"))
				}
				heads++
			}
			if heads == 0 {
				t.Errorf("the ordered heads are not read from webhook_jobs_pending_seq; plan:\n%s", strings.Join(plan, "\n"))
			}
		})
	}
}

// TestRecordPlanReadsJobsByKey: a record of attempts updates its jobs
// through the primary key in the generic plan PostgreSQL keeps of its
// statement, even one made while the queue was new and small (as in
// bench/multi, where autovacuum never analyzes it): that plan is kept as
// the queue grows. Joined to the attempts' VALUES alone, without the
// list of their seqs, the jobs were read whole by every record
// (BenchmarkClaimAndRecordBatch: 4.3 ms a cycle after 100 batches, 11.7
// ms after 1,500).
func TestRecordPlanReadsJobsByKey(t *testing.T) {
	ctx := context.Background()
	db, exec := claimQueue(t)
	exec(`INSERT INTO events (id, user_id, type, data, created_at)
		SELECT 'e' || i, 'u1', 'message.created', '{}', i FROM generate_series(1, 100) i`)
	exec(`INSERT INTO webhook_jobs (user_id, webhook_id, event_id, state, next_at, lease_until, created_at, updated_at)
		SELECT 'u1', 'w' || (1 + i % 4), 'e' || i, 'pending', i, 300000, i, i FROM generate_series(1, 100) i`)

	const n = 16
	args := []any{int64(200000)}
	for i := range n {
		args = append(args, int64(1+i), int64(300000), "succeeded", int64(0),
			fmt.Sprintf("whd_%d", i), "u1", "w1", "e1", "message.created", 1, "https://example.com/w1", true, 200, int64(3), nil, "ok", int64(200000))
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, sql := range []string{`SET LOCAL plan_cache_mode = force_generic_plan`, `PREPARE record AS ` + sqlstore.RecordAttemptsSQL(n)} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	defer tx.Exec(ctx, `DEALLOCATE record`)
	plan := strings.Join(explain(t, tx, `EXPLAIN (COSTS OFF) EXECUTE record(`+literals(args)+`)`), "\n")
	if strings.Contains(plan, "Seq Scan on webhook_jobs") || !strings.Contains(plan, "webhook_jobs_pkey") {
		t.Fatalf("the record does not read its jobs by the primary key; plan:\n%s", plan)
	}
}

// literals returns args as SQL literals, joined with commas (EXECUTE in
// EXPLAIN takes no parameters).
func literals(args []any) string {
	out := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case nil:
			out[i] = "NULL"
		case string:
			out[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		default:
			out[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(out, ", ")
}
