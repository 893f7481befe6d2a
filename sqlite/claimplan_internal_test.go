package sqlite

import (
	"context"
	"strings"
	"testing"
)

// TestClaimPlans: every statement of a claim reads by index what it needs
// (the due wake rows' range, a webhook by key, one webhook's jobs), never
// a scan of webhooks or jobs, nor a sort of a webhook's jobs (issue 33,
// point 1). Their plans are fixed by INDEXED BY, so they do not depend on
// statistics.
func TestClaimPlans(t *testing.T) {
	db := tempDB(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, sql string
		args      []any
		want      []string
	}{
		{"due webhooks", dueWebhooksQuery, []any{1}, []string{"SEARCH k USING INDEX webhook_wakes_at (at<?)", "SEARCH w USING INDEX sqlite_autoindex_webhooks_1 (id=?)"}},
		{"due jobs", webhookJobsQuery(8), []any{"w", 1}, []string{"SEARCH q USING INDEX webhook_jobs_webhook_due (webhook_id=? AND next_at<?)"}},
		{"ordered head", headJobQuery, []any{"w"}, []string{"SEARCH q USING INDEX webhook_jobs_webhook (webhook_id=? AND state=?)"}},
		{"next wake", nextWakeQuery(9), []any{"w"}, []string{"SEARCH q USING INDEX webhook_jobs_webhook_due (webhook_id=?)"}},
		{"ordered next wake", nextOrderedWakeQuery, []any{"w"}, []string{"SEARCH q USING INDEX webhook_jobs_webhook (webhook_id=? AND state=?)"}},
	} {
		rows, err := db.write.QueryContext(ctx, "EXPLAIN QUERY PLAN "+c.sql, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		all := strings.Join(plan, "\n")
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: plan lacks %q:\n%s", c.name, w, all)
			}
		}
		for _, line := range plan {
			if strings.HasPrefix(line, "SCAN w") || strings.HasPrefix(line, "SCAN q") || strings.HasPrefix(line, "SCAN webhook") ||
				(c.name != "due webhooks" && strings.Contains(line, "TEMP B-TREE")) {
				t.Errorf("%s: %q in plan:\n%s", c.name, line, all)
			}
		}
	}
}
