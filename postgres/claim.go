package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/sqlstore"
)

// The queue claims of PostgreSQL, where several processes claim at once:
// FOR UPDATE SKIP LOCKED makes their claims take disjoint jobs.

// claimQuery leases due jobs in one statement. For every active webhook it
// locks its oldest due jobs (through an index scan per webhook, usually
// webhook_jobs_webhook_due), at most as many as it has free slots ($4/$5:
// webhook ids with deliveries in flight and their free slots; others have
// $3, the per-webhook cap), skipping rows another process has locked, so a
// saturated webhook locks nothing; keeps the oldest $6 of them in all
// (row_number re-applies the per-webhook limit); sets their lease ($2) and
// returns them with their webhook and event, oldest first.
//
// SKIP LOCKED makes concurrent claims take disjoint jobs; a job another
// process leased and committed meanwhile is re-checked against the
// lease_until condition when its lock is taken, and left out. Its cost
// grows with the number of active webhooks, not with the backlog of a slow
// one.
const claimQuery = `
WITH cand AS (
  SELECT j.seq, j.next_at,
         row_number() OVER (PARTITION BY w.id ORDER BY j.next_at, j.seq) AS rn,
         coalesce(f.free, $3) AS free
  FROM webhooks w
  LEFT JOIN unnest($4::text[], $5::int[]) AS f(webhook_id, free) ON f.webhook_id = w.id
  CROSS JOIN LATERAL (
    SELECT q.seq, q.next_at FROM webhook_jobs q
    WHERE q.webhook_id = w.id AND q.state = 'pending' AND q.next_at <= $1 AND q.lease_until <= $1
    ORDER BY q.next_at, q.seq
    LIMIT least($3, coalesce(f.free, $3))
    FOR UPDATE OF q SKIP LOCKED
  ) j
  WHERE w.active
), pick AS (
  SELECT seq FROM cand WHERE rn <= free ORDER BY next_at, seq LIMIT $6
), leased AS (
  UPDATE webhook_jobs j SET lease_until = $2 FROM pick WHERE j.seq = pick.seq
  RETURNING j.seq, j.user_id, j.webhook_id, j.attempts, j.next_at, j.event_id
)
SELECT l.seq, l.user_id, l.webhook_id, l.attempts, w.url, w.secret_sealed, e.id, e.type, e.data, e.created_at,
  w.previous_secret_sealed, w.previous_secret_expires_at
FROM leased l JOIN webhooks w ON w.id = l.webhook_id JOIN events e ON e.id = l.event_id
ORDER BY l.next_at, l.seq`

// ClaimJobs leases due jobs; see ams.DeliveryQueue. Several processes may
// claim at once: each job is leased by one of them. The per-webhook cap
// applies to the caller's own deliveries in flight (inFlight), as in
// SQLite; with several processes a webhook may so have up to one cap per
// process in flight.
func (db *DB) ClaimJobs(ctx context.Context, now time.Time, lease time.Duration, limit, perWebhook int, inFlight map[string]int) ([]*ams.Job, error) {
	if limit <= 0 || perWebhook <= 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(inFlight))
	free := make([]int32, 0, len(inFlight))
	for id, n := range inFlight {
		ids = append(ids, id)
		free = append(free, int32(max(0, perWebhook-n)))
	}
	rows, err := db.pool.Query(ctx, claimQuery, sqlstore.MS(now), sqlstore.MS(now.Add(lease)), perWebhook, ids, free, limit)
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	defer rows.Close()
	var jobs []*ams.Job
	for rows.Next() {
		j := &ams.Job{Event: &ams.Event{Object: "event"}}
		var sealed string
		var data []byte
		var created int64
		var prevSealed *string
		var prevExpires *int64
		if err := rows.Scan(&j.Seq, &j.UserID, &j.WebhookID, &j.Attempts, &j.URL, &sealed, &j.Event.ID, &j.Event.Type, &data, &created,
			&prevSealed, &prevExpires); err != nil {
			return nil, fmt.Errorf("scan job: %w", err)
		}
		j.Event.UserID, j.Event.CreatedAt = j.UserID, sqlstore.FromMS(created)
		if err := db.OpenJob(j, data, sealed); err != nil {
			return nil, err
		}
		if err := db.OpenPreviousSecret(j, prevSealed, prevExpires); err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	return jobs, nil
}

// ClaimEmails leases up to limit due e-mails, oldest first. Rows another
// process is leasing are skipped (SKIP LOCKED), so each e-mail is leased
// by one process.
func (db *DB) ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*ams.Email, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, `WITH pick AS (
		  SELECT seq FROM emails WHERE state = 'pending' AND next_at <= $1 AND lease_until <= $1
		  ORDER BY next_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED
		), leased AS (
		  UPDATE emails m SET lease_until = $2 FROM pick WHERE m.seq = pick.seq
		  RETURNING m.seq, m.next_at, m.id, m.to_addr, m.subject, m.body, m.attempts
		)
		SELECT id, to_addr, subject, body, attempts FROM leased ORDER BY next_at, seq`, sqlstore.MS(now), sqlstore.MS(now.Add(lease)), limit)
	if err != nil {
		return nil, fmt.Errorf("claim e-mails: %w", err)
	}
	defer rows.Close()
	var out []*ams.Email
	for rows.Next() {
		e := &ams.Email{}
		if err := rows.Scan(&e.ID, &e.To, &e.Subject, &e.Text, &e.Attempts); err != nil {
			return nil, fmt.Errorf("scan e-mail: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim e-mails: %w", err)
	}
	return out, nil
}

// Purge deletes what is past its retention (sqlstore's rules) and the
// rate-limit state: the rate-limit rows whose day window has passed at
// now (they hold nothing a request can still count in) and the failed
// logins older than loginFailureRetention.
func (db *DB) Purge(ctx context.Context, now time.Time) (int64, error) {
	_, today := ratelimit.Starts(now)
	return db.PurgeWith(ctx, now,
		sqlstore.PurgeStmt{SQL: `DELETE FROM rate_limits WHERE day_start < $1`, Cutoff: today},
		sqlstore.PurgeStmt{SQL: `DELETE FROM login_failures WHERE at <= $1`, Cutoff: now.Add(-loginFailureRetention).UnixNano()})
}
