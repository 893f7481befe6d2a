package postgres

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/sqlstore"
	"github.com/jackc/pgx/v5"
)

// The queue claims of PostgreSQL, where several processes claim at once.
// Job claims take a transaction-level advisory lock first (one per
// schema), so that they run one at a time across all processes: each counts the deliveries in
// flight after the previous claim committed, and the per-webhook and
// per-account caps hold across the cluster. A claim is one round trip and
// a few milliseconds; the lock is held only for it.

// claimQuery leases due jobs in one statement. It counts the deliveries in
// flight by webhook and account (sqlstore.InFlightQuery), free slots being
// $3 (per webhook; 1 for an ordered webhook) and $4 (per account) less
// those; reads the webhooks whose wake rows are due at $1 (webhook_wakes,
// migration 0032: a range of what is due, never every active webhook; $7
// rows at most, earliest first; each webhook then read by its key, LIMIT
// 1 keeping the planner from joining all webhooks);
// of those that are active and have free slots, $6 at most, earliest
// wake first, locks the oldest due jobs up to the free slots (an index
// scan of webhook_jobs_webhook_due per webhook), or of an ordered
// webhook its head (its first pending job in queue order, through
// webhook_jobs_pending_seq, whose predicate only the heads' lookups
// state: next_at >= 0, migration 0036) if due; ranks
// each account's candidates oldest first and keeps those within the
// account's free slots; takes $5 of them, every account's first before
// any account's second (as sqlstore.InFlight.Pick does for SQLite); sets
// their lease ($2); replaces the wake rows of the webhooks it looked at
// by one at each one's next due time unless it has come already (see
// sqlite/claim.go's nextWakeQuery: of an unordered webhook with k jobs in
// flight after the claim, the earliest due time of its first k+1 pending
// jobs in next_at order, the claimed ones counting as due at $2; of an
// ordered one, its head's), dropping those of inactive webhooks; and returns the jobs
// with their webhook and event, and whether an earlier lease of theirs
// ran out unrecorded (it was not 0: see ams.Job's LeaseExpired).
//
// Its cost grows with the webhooks that have due work, not with the
// active webhooks, the backlog of a slow one, or the finished jobs.
const claimQuery = `
WITH busy AS (` + sqlstore.InFlightQuery + `
), hook_busy AS (
  SELECT webhook_id, sum(count)::int AS n FROM busy GROUP BY webhook_id
), account_busy AS (
  SELECT user_id, sum(count)::int AS n FROM busy GROUP BY user_id
), due AS (
  SELECT k.webhook_id, min(k.at) AS at
  FROM (SELECT k.webhook_id, k.at FROM webhook_wakes k WHERE k.at <= $1 ORDER BY k.at LIMIT $7) k
  GROUP BY k.webhook_id
), probe AS (
  SELECT w.id, w.user_id, w.ordered, coalesce(hb.n, 0) AS flying,
         CASE WHEN w.ordered THEN 1 ELSE $3 END - coalesce(hb.n, 0) AS hook_free, $4 - coalesce(ab.n, 0) AS account_free
  FROM due d
  CROSS JOIN LATERAL (SELECT w.id, w.user_id, w.ordered FROM webhooks w WHERE w.id = d.webhook_id AND w.active LIMIT 1) w
  LEFT JOIN hook_busy hb ON hb.webhook_id = w.id
  LEFT JOIN account_busy ab ON ab.user_id = w.user_id
  WHERE CASE WHEN w.ordered THEN 1 ELSE $3 END - coalesce(hb.n, 0) > 0 AND $4 - coalesce(ab.n, 0) > 0
  ORDER BY d.at, w.id LIMIT $6
), cand AS (
  SELECT j.seq, j.next_at, j.lease_until, p.user_id
  FROM probe p CROSS JOIN LATERAL (
    SELECT q.seq, q.next_at, q.lease_until FROM webhook_jobs q
    WHERE q.webhook_id = p.id AND q.state = 'pending' AND q.next_at <= $1 AND q.lease_until <= $1
    ORDER BY q.next_at, q.seq
    LIMIT least(p.hook_free, p.account_free, $5)
    FOR UPDATE OF q SKIP LOCKED
  ) j
  WHERE NOT p.ordered
  UNION ALL
  SELECT j.seq, j.next_at, j.lease_until, p.user_id
  FROM probe p CROSS JOIN LATERAL (
    SELECT q.seq, q.next_at, q.lease_until FROM webhook_jobs q
    WHERE q.seq = (SELECT h.seq FROM webhook_jobs h WHERE h.webhook_id = p.id AND h.state = 'pending' AND h.next_at >= 0 ORDER BY h.seq LIMIT 1)
      AND q.state = 'pending' AND q.next_at <= $1 AND q.lease_until <= $1
    FOR UPDATE OF q SKIP LOCKED
  ) j
  WHERE p.ordered
), ranked AS (
  SELECT c.seq, c.next_at, c.lease_until,
         row_number() OVER (PARTITION BY c.user_id ORDER BY c.next_at, c.seq) AS rank,
         $4 - coalesce(ab.n, 0) AS free
  FROM cand c LEFT JOIN account_busy ab ON ab.user_id = c.user_id
), pick AS (
  SELECT seq, lease_until FROM ranked WHERE rank <= free ORDER BY rank, next_at, seq LIMIT $5
), leased AS (
  UPDATE webhook_jobs j SET lease_until = $2 FROM pick WHERE j.seq = pick.seq
  RETURNING j.seq, j.user_id, j.webhook_id, j.attempts, j.next_at, j.event_id, pick.lease_until > 0 AS expired
), picked AS (
  SELECT webhook_id, count(*)::int AS n, array_agg(seq) AS seqs FROM leased GROUP BY webhook_id
), nextwake AS (
  SELECT p.id, x.at FROM probe p LEFT JOIN picked pk ON pk.webhook_id = p.id
  CROSS JOIN LATERAL (SELECT CASE WHEN p.ordered THEN (
      SELECT CASE WHEN h.seq = ANY(coalesce(pk.seqs, '{}')) THEN $2 ELSE greatest(h.next_at, h.lease_until) END
      FROM webhook_jobs h WHERE h.webhook_id = p.id AND h.state = 'pending' AND h.next_at >= 0 ORDER BY h.seq LIMIT 1)
    ELSE (
      SELECT min(CASE WHEN f.seq = ANY(coalesce(pk.seqs, '{}')) THEN $2 ELSE greatest(f.next_at, f.lease_until) END)
      FROM (SELECT q.seq, q.next_at, q.lease_until FROM webhook_jobs q WHERE q.webhook_id = p.id AND q.state = 'pending'
            ORDER BY q.next_at, q.seq LIMIT p.flying + coalesce(pk.n, 0) + 1) f)
    END AS at) x
), cleared AS (
  DELETE FROM webhook_wakes k WHERE k.webhook_id IN (
    SELECT id FROM nextwake WHERE at IS NULL OR at > $1
    UNION ALL
    SELECT d.webhook_id FROM due d WHERE (SELECT w.active FROM webhooks w WHERE w.id = d.webhook_id LIMIT 1) IS NOT TRUE)
), woken AS (
  INSERT INTO webhook_wakes (webhook_id, at) SELECT id, at FROM nextwake WHERE at > $1
)
SELECT l.seq, l.user_id, l.webhook_id, l.attempts, w.url, w.secret_sealed, e.id, e.type, e.data, e.created_at,
  w.previous_secret_sealed, w.previous_secret_expires_at, l.expired, w.payload
FROM leased l JOIN webhooks w ON w.id = l.webhook_id JOIN events e ON e.id = l.event_id
ORDER BY l.next_at, l.seq`

// wakesRead bounds the wake rows one claim reads, in units of the
// webhooks it may look at: room for the rows of webhooks at their caps
// (which keep theirs) and for duplicates (rows queued at once by
// concurrent transactions).
const wakesRead = 16

// claimLock starts a claim: it takes the claims' advisory lock ($1 is the
// schema) and, for the claim's transaction only, turns bitmap scans off.
// Every statement that queues jobs, and every retry, takes the same lock
// shared (the triggers of migration 0032), so a claim runs while none is
// open and sees every job queued before it.
//
// The in-flight count reads webhook_jobs_leased for leases that end after
// now. Every claim adds entries to that index, and the job's later
// versions (delivered, retried) leave the claim's entry behind until a
// vacuum. Those leases end up to the lease length (15 s by default)
// after the claim, so the count's range holds every job claimed in the
// last 15 s: tens of thousands while a backlog drains. A plain index
// scan marks the entries of dead versions as it passes them, and later
// scans skip them without reading the table; a bitmap scan, which the
// planner otherwise prefers for the few rows it expects, marks nothing
// and reads every one again.
// Measured while draining (docs/benchmarks.md, issue 17, fourth session):
// a claim took 2.2 ms at the median with bitmap scans and 0.3 ms without.
// Claims run one at a time across every process, so their length bounds
// the whole cluster's claims.
const claimLock = `SELECT pg_advisory_xact_lock(hashtext('ams.claim'), hashtext($1)), set_config('enable_bitmapscan', 'off', true)`

// ClaimJobs leases due jobs; see ams.DeliveryQueue. The advisory lock and
// the claim go in one batch, which pgx runs as one implicit transaction:
// the claim's snapshot is taken after the lock is granted, so it sees
// every earlier claim's leases.
func (db *DB) ClaimJobs(ctx context.Context, now time.Time, c ams.Claim) ([]*ams.Job, error) {
	if c.Limit <= 0 || c.PerWebhook <= 0 {
		return nil, nil
	}
	perAccount := c.PerAccount
	if perAccount <= 0 {
		perAccount = math.MaxInt32
	}
	until := now.Add(c.Lease)
	b := &pgx.Batch{}
	b.Queue(claimLock, db.schema)
	b.Queue(claimQuery, sqlstore.MS(now), sqlstore.MS(until), c.PerWebhook, perAccount, c.Limit, sqlstore.ProbedWebhooks(c),
		wakesRead*sqlstore.ProbedWebhooks(c))
	br := db.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("claim jobs: lock: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	defer rows.Close()
	var jobs []*ams.Job
	for rows.Next() {
		j := &ams.Job{Event: &ams.Event{Object: "event"}, LeaseUntil: until}
		var sealed string
		var data []byte
		var created int64
		var prevSealed *string
		var prevExpires *int64
		if err := rows.Scan(&j.Seq, &j.UserID, &j.WebhookID, &j.Attempts, &j.URL, &sealed, &j.Event.ID, &j.Event.Type, &data, &created,
			&prevSealed, &prevExpires, &j.LeaseExpired, &j.Payload); err != nil {
			return nil, fmt.Errorf("scan job: %w", err)
		}
		j.Event.UserID, j.Event.CreatedAt = j.UserID, sqlstore.FromMS(created)
		db.OpenClaimed(j, data, sealed, prevSealed, prevExpires)
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	rows.Close()
	if err := br.Close(); err != nil {
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
		  SELECT seq FROM emails `+sqlstore.EmailsDue+` LIMIT $3 FOR UPDATE SKIP LOCKED
		), leased AS (
		  UPDATE emails m SET lease_until = $2 FROM pick WHERE m.seq = pick.seq
		  RETURNING m.seq, m.next_at, m.id, m.kind, m.to_addr, m.subject, m.body, m.attempts
		)
		SELECT id, kind, to_addr, subject, body, attempts FROM leased ORDER BY next_at, seq`, sqlstore.MS(now), sqlstore.MS(now.Add(lease)), limit)
	if err != nil {
		return nil, fmt.Errorf("claim e-mails: %w", err)
	}
	defer rows.Close()
	var out []*ams.Email
	for rows.Next() {
		e := &ams.Email{}
		if err := rows.Scan(&e.ID, &e.Kind, &e.To, &e.Subject, &e.Text, &e.Attempts); err != nil {
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
// rate-limit state: the rate-limit rows with nothing left in either
// window at now (ratelimit.State.Expired) and the failed
// logins older than loginFailureRetention.
//
// The partitioned history (deliveries, turn events) is kept by
// day: MaintainPartitions drops the days wholly past the retention and
// makes the days ahead first; the row deletes then find only the oldest
// day's remainder and the DEFAULT partition's rows to delete.
func (db *DB) Purge(ctx context.Context, now time.Time) (int64, error) {
	dropped, err := db.MaintainPartitions(ctx, now, now.Add(-ams.EventRetention))
	if err != nil {
		return dropped, err
	}
	_, day := ratelimit.Slots(now)
	n, err := db.PurgeWith(ctx, now,
		sqlstore.PurgeStmt{SQL: `DELETE FROM rate_windows WHERE day_last <= $1`, Cutoff: day - int64(ratelimit.DaySlots)},
		sqlstore.PurgeStmt{SQL: `DELETE FROM login_failures WHERE at <= $1`, Cutoff: now.Add(-loginFailureRetention).UnixNano()})
	return dropped + n, err
}
