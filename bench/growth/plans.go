package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlstore"
)

// The SQLite statements whose plans are printed, copied from the store
// at commit cac35f2 (sqlite/claim.go, sqlstore/list.go's listOf for
// events and messages, sqlstore/webhook.go's purge): SQLite has no
// statement tracer to take them from as they run, as PostgreSQL's are.
// Copy them again when the store changes.
var sqlitePlans = []struct{ name, sql string }{
	{"claim 1/3: deliveries in flight (sqlstore.InFlightQuery)", sqlstore.InFlightQuery},
	{"claim 2/3: webhooks with due work (sqlite/claim.go dueWebhooksQuery)", `
SELECT w.id, w.user_id, w.url, w.secret_sealed, w.previous_secret_sealed, w.previous_secret_expires_at FROM webhooks w
WHERE w.active = 1 AND EXISTS (
  SELECT 1 FROM webhook_jobs q INDEXED BY webhook_jobs_webhook_due
  WHERE q.webhook_id = w.id AND q.state = 'pending' AND q.next_at <= ?1 AND q.lease_until <= ?1)`},
	{"claim 3/3: one webhook's due jobs, per webhook found (webhookJobsQuery)", `
SELECT q.seq, q.user_id, q.attempts, q.next_at, q.lease_until, e.id, e.type, e.data, e.created_at
FROM webhook_jobs q INDEXED BY webhook_jobs_webhook_due JOIN events e ON e.id = q.event_id
WHERE q.webhook_id = ?1 AND q.state = 'pending' AND q.next_at <= ?2 AND q.lease_until <= ?2
ORDER BY q.next_at, q.seq LIMIT ?3`},
	{"catch-up: the cursor", `SELECT txid, seq FROM events WHERE user_id = ?1 AND id = ?2`},
	{"catch-up: the page (GET /v1/events?order=asc&after=)", `SELECT id, user_id, type, data, created_at FROM events
WHERE user_id = ?1 AND (txid, seq) > (?2, ?3) ORDER BY txid ASC, seq ASC LIMIT 101`},
	{"conversation history (GET /v1/conversations/{id}/messages)", `SELECT id, user_id, assistant_id, conversation_id, direction, content, created_at, updated_at, metadata
FROM messages WHERE conversation_id = ?1 AND user_id = ?2 ORDER BY seq DESC LIMIT 21`},
}

// sqlitePurge are the purge's batched statements on the history
// (sqlstore.Queries.purge): each deletes up to ?2 rows, oldest first.
var sqlitePurge = []string{
	`DELETE FROM webhook_jobs WHERE event_id IN (SELECT id FROM events WHERE seq IN (SELECT seq FROM events WHERE created_at < ?1 ORDER BY created_at LIMIT ?2))`,
	`DELETE FROM events WHERE (seq) IN (SELECT seq FROM events WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)`,
	`DELETE FROM webhook_deliveries WHERE (seq) IN (SELECT seq FROM webhook_deliveries WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)`,
	`DELETE FROM turn_events WHERE (turn_id, seq) IN (SELECT turn_id, seq FROM turn_events WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)`,
}

// plans prints the query plans of the claim and of the lists that grow,
// with due work queued (8 events for each drain account, left for the
// drain). On PostgreSQL they are the statements the store ran, with
// EXPLAIN (ANALYZE, BUFFERS) in a transaction rolled back.
func plans(ctx context.Context, s *store, hooks []hook, userID, midEvent string, convs []string) error {
	fmt.Printf("#### Query plans (%s)\n\n", s.engine)
	if s.engine == "sqlite" {
		if err := emit(ctx, s, hooks, 8, time.Now().Add(-time.Hour)); err != nil {
			return err
		}
		db, err := s.rawSQLite(ctx)
		if err != nil {
			return err
		}
		defer db.Close()
		var active int
		db.QueryRowContext(ctx, `SELECT count(*) FROM webhooks WHERE active = 1`).Scan(&active)
		now := time.Now().UnixMilli()
		args := map[string][]any{
			sqlitePlans[0].name: {now}, sqlitePlans[1].name: {now}, sqlitePlans[2].name: {hooks[0].id, now, 8},
			sqlitePlans[3].name: {userID, midEvent}, sqlitePlans[4].name: {userID, 0, 0}, sqlitePlans[5].name: {convs[0], userID},
		}
		for _, p := range sqlitePlans {
			fmt.Printf("%s:\n\n```\n%s```\n\n", p.name, eqp(ctx, db, p.sql, args[p.name]...))
			if p.name == sqlitePlans[1].name {
				t0 := time.Now()
				n := 0
				rows, err := db.QueryContext(ctx, p.sql, now)
				if err == nil {
					for rows.Next() {
						n++
					}
					rows.Close()
				}
				fmt.Printf("It probes each of the %d active webhooks: alone it took %s and found %d webhooks with due work.\n\n",
					active, time.Since(t0).Round(time.Microsecond), n)
			}
		}
		return nil
	}
	// PostgreSQL: the statements of a claim, with due work queued.
	if err := emit(ctx, s, hooks, 8, time.Now().Add(-time.Hour)); err != nil {
		return err
	}
	s.trace.start()
	_, err := s.db.ClaimJobs(ctx, time.Now(), claim)
	claimStmts := s.trace.stop()
	if err != nil {
		return err
	}
	conn, err := s.rawPG(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// Replay the claim on jobs due again: put the jobs it leased back.
	fmt.Printf("The claim (ClaimJobs, as the store ran it, replayed on the same due jobs):\n\n")
	const unlease = `UPDATE webhook_jobs SET lease_until = 0 WHERE state = 'pending' AND lease_until > 0`
	explainAll(ctx, conn, claimStmts, true, unlease)
	// The drain delivers them: not 15 s later, when their lease runs out.
	if _, err := conn.Exec(ctx, unlease); err != nil {
		return err
	}
	s.trace.start()
	_, err = s.db.ListEvents(ctx, userID, ams.EventFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc, After: midEvent})
	listStmts := s.trace.stop()
	if err != nil {
		return err
	}
	fmt.Printf("The catch-up page (ListEvents, order asc, after an event):\n\n")
	explainAll(ctx, conn, listStmts, true, "")
	s.trace.start()
	_, err = s.db.ListMessages(ctx, userID, convs[0], ams.ListParams{Limit: 20})
	msgStmts := s.trace.stop()
	if err != nil {
		return err
	}
	fmt.Printf("The conversation history (ListMessages):\n\n")
	explainAll(ctx, conn, msgStmts, true, "")
	return nil
}

// purgePlans prints the plans of the purge's statements that grow with
// the history (after the purge ran: the plans, not the deletions).
func purgePlans(ctx context.Context, s *store, stmts []traced) {
	fmt.Printf("#### Purge plans (%s)\n\nThe purge's statements on the history:\n\n", s.engine)
	cutoff := time.Now().Add(-ams.EventRetention).UnixMilli()
	if s.engine == "sqlite" {
		db, err := s.rawSQLite(ctx)
		if err != nil {
			fmt.Printf("(%v)\n", err)
			return
		}
		defer db.Close()
		for _, q := range sqlitePurge {
			fmt.Printf("`%s`:\n\n```\n%s```\n\n", q, eqp(ctx, db, q, cutoff, sqlstore.PurgeBatch))
		}
		return
	}
	conn, err := s.rawPG(ctx)
	if err != nil {
		fmt.Printf("(%v)\n", err)
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var keep []traced
	for _, t := range stmts {
		for _, table := range []string{"webhook_jobs ", "webhook_deliveries ", "events ", "turn_events "} {
			if strings.HasPrefix(t.sql, "DELETE FROM "+table) {
				keep = append(keep, t)
			}
		}
	}
	explainAll(ctx, conn, keep, false, "")
}

// eqp is SQLite's EXPLAIN QUERY PLAN of q, as an indented tree.
func eqp(ctx context.Context, db *sql.DB, q string, args ...any) string {
	rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	defer rows.Close()
	depth := map[int]int{0: -1}
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return fmt.Sprintf("(%v)\n", err)
		}
		depth[id] = depth[parent] + 1
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth[id]), detail)
	}
	return b.String()
}

// explainAll prints the plan of each statement in one transaction rolled
// back afterwards: SET statements run, the others are explained (and run,
// with analyze); reset runs first.
func explainAll(ctx context.Context, conn *pgx.Conn, stmts []traced, analyze bool, reset string) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		fmt.Printf("(%v)\n\n", err)
		return
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if reset != "" {
		if _, err := tx.Exec(ctx, reset); err != nil {
			fmt.Printf("(%v)\n\n", err)
			return
		}
	}
	opts := "(COSTS OFF)"
	if analyze {
		opts = "(ANALYZE, BUFFERS, COSTS OFF)"
	}
	for _, t := range stmts {
		q := strings.TrimSpace(t.sql)
		head := strings.ToUpper(strings.Fields(q + " x")[0])
		var args []any
		for _, a := range t.args {
			if _, mode := a.(pgx.QueryExecMode); !mode {
				args = append(args, a)
			}
		}
		switch head {
		case "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE":
			continue
		case "SET":
			tx.Exec(ctx, q, args...)
			fmt.Printf("`%s`\n\n", oneLine(q))
			continue
		}
		rows, err := tx.Query(ctx, "EXPLAIN "+opts+" "+q, args...)
		fmt.Printf("`%s`\n\n```\n", clip(oneLine(q), 400))
		if err != nil {
			fmt.Printf("(%v)\n```\n\n", err)
			return
		}
		for rows.Next() {
			var line string
			rows.Scan(&line)
			fmt.Println(line)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			fmt.Printf("(%v)\n```\n\n", err)
			return
		}
		fmt.Printf("```\n\n")
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + " …"
}
