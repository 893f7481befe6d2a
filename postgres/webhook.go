package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
	"github.com/jackc/pgx/v5"
)

const webhookCols = `id, user_id, url, secret_sealed, active, status, created_at, updated_at,
	(SELECT array_agg(s.event_type) FROM webhook_subscriptions s WHERE s.webhook_id = webhooks.id)`

func (db *DB) scanWebhook(s scanner) (*ams.Webhook, error) {
	w := &ams.Webhook{Object: "webhook"}
	var sealed string
	var events []string
	var c, u int64
	if err := s.Scan(&w.ID, &w.UserID, &w.URL, &sealed, &w.Active, &w.Status, &c, &u, &events); err != nil {
		return nil, err
	}
	w.CreatedAt, w.UpdatedAt = fromMS(c), fromMS(u)
	w.Events = sqlrow.SortEvents(events)
	secret, err := db.sealer.Open(sealed, w.ID)
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", w.ID, err)
	}
	w.Secret = secret
	return w, nil
}

// CreateWebhook stores w, its subscriptions, and its secret sealed.
func (db *DB) CreateWebhook(ctx context.Context, w *ams.Webhook) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO webhooks (id, user_id, url, secret_sealed, active, status, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, w.ID, w.UserID, w.URL, db.sealer.Seal(w.Secret, w.ID), w.Active, w.Status,
		ms(w.CreatedAt), ms(w.UpdatedAt)); err != nil {
		return fail("insert webhook", err)
	}
	w.Events = sqlrow.SortEvents(w.Events)
	if err := setSubscriptions(ctx, tx, w); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit webhook: %w", err)
	}
	return nil
}

func setSubscriptions(ctx context.Context, tx pgx.Tx, w *ams.Webhook) error {
	if _, err := tx.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE webhook_id = $1`, w.ID); err != nil {
		return fmt.Errorf("clear subscriptions: %w", err)
	}
	if len(w.Events) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_subscriptions (webhook_id, user_id, event_type)
		SELECT $1, $2, t FROM unnest($3::text[]) AS t`, w.ID, w.UserID, w.Events); err != nil {
		return fmt.Errorf("insert subscription: %w", err)
	}
	return nil
}

// FindWebhook returns the user's webhook; ENOTFOUND otherwise.
func (db *DB) FindWebhook(ctx context.Context, userID, id string) (*ams.Webhook, error) {
	return db.findWebhook(ctx, db.pool, userID, id, "")
}

// findWebhook reads the user's webhook; lock, if set, is a locking clause.
func (db *DB) findWebhook(ctx context.Context, q querier, userID, id, lock string) (*ams.Webhook, error) {
	w, err := db.scanWebhook(q.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1 AND user_id = $2 `+lock, id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("webhook", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find webhook: %w", err)
	}
	return w, nil
}

// ListWebhooks returns a page of the user's webhooks.
func (db *DB) ListWebhooks(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Webhook], error) {
	return list(ctx, db.pool, webhookCols, "webhooks", "user_id = $1", []any{userID}, p, db.scanWebhook)
}

// UpdateWebhook applies upd. Turning a webhook off cancels its pending
// deliveries; turning it on clears a failing status. The webhook's row is
// locked (FOR NO KEY UPDATE, which lets deliveries and jobs referencing it
// be inserted meanwhile) from the read to the commit, so concurrent
// updates from several processes apply one after the other.
func (db *DB) UpdateWebhook(ctx context.Context, userID, id string, upd ams.WebhookUpdate, now time.Time) (*ams.Webhook, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	w, err := db.findWebhook(ctx, tx, userID, id, "FOR NO KEY UPDATE")
	if err != nil {
		return nil, err
	}
	if upd.URL != nil {
		w.URL = *upd.URL
	}
	if upd.Secret != nil {
		w.Secret = *upd.Secret
	}
	if upd.Events != nil {
		w.Events = sqlrow.SortEvents(upd.Events)
		if err := setSubscriptions(ctx, tx, w); err != nil {
			return nil, err
		}
	}
	if upd.Active != nil {
		if *upd.Active {
			w.Status = ams.WebhookActive
		} else if w.Active {
			if err := cancelJobs(ctx, tx, w.ID, now); err != nil {
				return nil, err
			}
		}
		w.Active = *upd.Active
	}
	w.UpdatedAt = now
	if _, err := tx.Exec(ctx, `UPDATE webhooks SET url = $1, secret_sealed = $2, active = $3, status = $4, updated_at = $5 WHERE id = $6`,
		w.URL, db.sealer.Seal(w.Secret, w.ID), w.Active, w.Status, ms(now), w.ID); err != nil {
		return nil, fail("update webhook", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit webhook: %w", err)
	}
	return w, nil
}

func cancelJobs(ctx context.Context, tx pgx.Tx, webhookID string, now time.Time) error {
	if _, err := tx.Exec(ctx, `UPDATE webhook_jobs SET state = 'canceled', updated_at = $1 WHERE webhook_id = $2 AND state = 'pending'`,
		ms(now), webhookID); err != nil {
		return fmt.Errorf("cancel deliveries: %w", err)
	}
	return nil
}

// DeleteWebhook removes the webhook, its subscriptions, jobs and delivery
// log.
func (db *DB) DeleteWebhook(ctx context.Context, userID, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return fmt.Errorf("delete webhook: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ams.NotFound("webhook", id)
	}
	return nil
}

// activeWebhook checks within tx that the user's webhook exists and is
// active, and share-locks it until the commit so that it stays active
// (as the fan-out does).
func (db *DB) activeWebhook(ctx context.Context, tx pgx.Tx, userID, id string) error {
	var active bool
	err := tx.QueryRow(ctx, `SELECT active FROM webhooks WHERE id = $1 AND user_id = $2 FOR SHARE`, id, userID).Scan(&active)
	if errors.Is(err, pgx.ErrNoRows) {
		return ams.NotFound("webhook", id)
	} else if err != nil {
		return fmt.Errorf("find webhook: %w", err)
	}
	if !active {
		return ams.Errorf(ams.ECONFLICT, "webhook_inactive", "Webhook '%s' is not active; enable it with PATCH {\"active\": true} first.", id)
	}
	return nil
}

func insertJob(ctx context.Context, tx pgx.Tx, userID, webhookID, eventID string, now time.Time) error {
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_jobs (user_id, webhook_id, event_id, next_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $4, $4)`, userID, webhookID, eventID, ms(now)); err != nil {
		return fmt.Errorf("queue delivery: %w", err)
	}
	return nil
}

// PingWebhook stores e (a webhook.ping event) and queues it for this webhook only.
func (db *DB) PingWebhook(ctx context.Context, userID, id string, e *ams.Event) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	if err := db.activeWebhook(ctx, tx, userID, id); err != nil {
		return err
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Errorf("encode event data: %w", err)
	}
	if _, err := tx.Exec(ctx, insertEventSQL, e.ID, e.UserID, e.Type, data, ms(e.CreatedAt)); err != nil {
		return fail("insert event", err)
	}
	if err := insertJob(ctx, tx, userID, id, e.ID, e.CreatedAt); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit ping: %w", err)
	}
	db.signalJobs(1)
	return nil
}

// EnqueueDelivery queues the event for the webhook again.
func (db *DB) EnqueueDelivery(ctx context.Context, userID, webhookID, eventID string, now time.Time) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	if err := db.activeWebhook(ctx, tx, userID, webhookID); err != nil {
		return err
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1 AND user_id = $2)`, eventID, userID).Scan(&exists); err != nil {
		return fmt.Errorf("find event: %w", err)
	}
	if !exists {
		return ams.Errorf(ams.ECONFLICT, "event_expired", "Event '%s' is no longer kept (events are kept %d days).", eventID, int(ams.EventRetention.Hours()/24))
	}
	if err := insertJob(ctx, tx, userID, webhookID, eventID, now); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit redelivery: %w", err)
	}
	db.signalJobs(1)
	return nil
}

func scanDelivery(s scanner) (*ams.Delivery, error) {
	d := &ams.Delivery{Object: "webhook_delivery"}
	var c int64
	if err := s.Scan(&d.ID, &d.UserID, &d.WebhookID, &d.EventID, &d.EventType, &d.Attempt, &d.URL, &d.Success, &d.StatusCode,
		&d.DurationMS, &d.Error, &d.ResponseBody, &c); err != nil {
		return nil, err
	}
	d.CreatedAt = fromMS(c)
	return d, nil
}

// ListDeliveries returns a page of a webhook's delivery attempts, of one
// event when eventID is set.
func (db *DB) ListDeliveries(ctx context.Context, userID, webhookID, eventID string, p ams.ListParams) (*ams.Page[*ams.Delivery], error) {
	where, args := "webhook_id = $1 AND user_id = $2", []any{webhookID, userID}
	if eventID != "" {
		where, args = where+" AND event_id = $3", append(args, eventID)
	}
	return list(ctx, db.pool, sqlrow.DeliveryCols, "webhook_deliveries", where, args, p, scanDelivery)
}

// FindDelivery returns one attempt of the user's webhook; ENOTFOUND otherwise.
func (db *DB) FindDelivery(ctx context.Context, userID, webhookID, id string) (*ams.Delivery, error) {
	d, err := scanDelivery(db.pool.QueryRow(ctx, `SELECT `+sqlrow.DeliveryCols+` FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2 AND user_id = $3`,
		id, webhookID, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("delivery", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find delivery: %w", err)
	}
	return d, nil
}

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
SELECT l.seq, l.user_id, l.webhook_id, l.attempts, w.url, w.secret_sealed, e.id, e.type, e.data, e.created_at
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
	rows, err := db.pool.Query(ctx, claimQuery, ms(now), ms(now.Add(lease)), perWebhook, ids, free, limit)
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
		if err := rows.Scan(&j.Seq, &j.UserID, &j.WebhookID, &j.Attempts, &j.URL, &sealed, &j.Event.ID, &j.Event.Type, &data, &created); err != nil {
			return nil, fmt.Errorf("scan job: %w", err)
		}
		j.Event.UserID, j.Event.CreatedAt = j.UserID, fromMS(created)
		if err := json.Unmarshal(data, &j.Event.Data); err != nil {
			return nil, fmt.Errorf("decode event %s: %w", j.Event.ID, err)
		}
		if j.Secret, err = db.sealer.Open(sealed, j.WebhookID); err != nil {
			return nil, fmt.Errorf("webhook %s: %w", j.WebhookID, err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	return jobs, nil
}

// RecordAttempt stores an attempt and its consequences; see
// ams.DeliveryQueue. For a final failure it first locks the webhook, so
// that it takes its locks in the order UpdateWebhook does (webhook, then
// jobs) and the two cannot deadlock; of two final failures of one webhook
// recorded at once, the second waits for the first and finds the webhook
// no longer active, so the owner gets one e-mail.
func (db *DB) RecordAttempt(ctx context.Context, r *ams.AttemptResult, now time.Time) (bool, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	if r.Outcome == ams.JobFailed {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM webhooks WHERE id = $1 FOR NO KEY UPDATE`, r.Job.WebhookID); err != nil {
			return false, fmt.Errorf("lock webhook: %w", err)
		}
	}
	d := r.Delivery
	// A webhook deleted while its delivery was in flight took its jobs and
	// log with it: then there is nothing to record.
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (`+sqlrow.DeliveryCols+`)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = $3)`,
		d.ID, d.UserID, d.WebhookID, d.EventID, d.EventType, d.Attempt, d.URL, d.Success, d.StatusCode, d.DurationMS, d.Error,
		d.ResponseBody, ms(d.CreatedAt)); err != nil {
		return false, fail("insert delivery", err)
	}
	state, next := "succeeded", int64(0)
	switch r.Outcome {
	case ams.JobRetry:
		state, next = "pending", ms(r.NextAt)
	case ams.JobFailed:
		state = "failed"
	}
	if _, err := tx.Exec(ctx, `UPDATE webhook_jobs SET state = CASE WHEN state = 'pending' THEN $1 ELSE state END,
		attempts = attempts + 1, next_at = CASE WHEN $2::bigint > 0 THEN $2 ELSE next_at END, lease_until = 0, updated_at = $3 WHERE seq = $4`,
		state, next, ms(now), r.Job.Seq); err != nil {
		return false, fmt.Errorf("update job: %w", err)
	}
	failed := false
	if r.Outcome == ams.JobFailed {
		tag, err := tx.Exec(ctx, `UPDATE webhooks SET active = false, status = 'failing', updated_at = $1 WHERE id = $2 AND active`,
			ms(now), r.Job.WebhookID)
		if err != nil {
			return false, fmt.Errorf("mark webhook failing: %w", err)
		}
		if tag.RowsAffected() == 1 {
			failed = true
			if err := cancelJobs(ctx, tx, r.Job.WebhookID, now); err != nil {
				return false, err
			}
			if e := r.Email; e != nil {
				if _, err := tx.Exec(ctx, `INSERT INTO emails (id, to_addr, subject, body, next_at, created_at) VALUES ($1, $2, $3, $4, $5, $5)`,
					e.ID, e.To, e.Subject, e.Text, ms(now)); err != nil {
					return false, fail("queue e-mail", err)
				}
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("commit attempt: %w", err)
	}
	return failed, nil
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
		SELECT id, to_addr, subject, body, attempts FROM leased ORDER BY next_at, seq`, ms(now), ms(now.Add(lease)), limit)
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

// FinishEmail records the outcome of sending an e-mail.
func (db *DB) FinishEmail(ctx context.Context, id string, sent bool, errText string, retryAt, now time.Time) error {
	var err error
	switch {
	case sent:
		_, err = db.pool.Exec(ctx, `UPDATE emails SET state = 'sent', attempts = attempts + 1, sent_at = $1, lease_until = 0 WHERE id = $2`, ms(now), id)
	case retryAt.IsZero():
		_, err = db.pool.Exec(ctx, `UPDATE emails SET state = 'failed', attempts = attempts + 1, last_error = $1, lease_until = 0 WHERE id = $2`, errText, id)
	default:
		_, err = db.pool.Exec(ctx, `UPDATE emails SET attempts = attempts + 1, last_error = $1, next_at = $2, lease_until = 0 WHERE id = $3`, errText, ms(retryAt), id)
	}
	if err != nil {
		return fail("finish e-mail", err)
	}
	return nil
}

// Purge deletes what is past its retention.
func (db *DB) Purge(ctx context.Context, now time.Time) (int64, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	cutoff := ms(now.Add(-ams.EventRetention))
	var total int64
	for _, q := range []struct {
		sql string
		arg int64
	}{
		{`DELETE FROM webhook_jobs WHERE event_id IN (SELECT id FROM events WHERE created_at < $1)`, cutoff},
		{`DELETE FROM webhook_deliveries WHERE created_at < $1`, cutoff},
		{`DELETE FROM events WHERE created_at < $1`, cutoff},
		{`DELETE FROM emails WHERE state != 'pending' AND created_at < $1`, cutoff},
		{`DELETE FROM idempotency_keys WHERE created_at < $1`, ms(now.Add(-ams.IdempotencyTTL))},
		{`DELETE FROM oauth_tokens WHERE expires_at < $1`, ms(now.Add(-24 * time.Hour))},
		{`DELETE FROM login_sessions WHERE expires_at < $1`, ms(now)},
		{`DELETE FROM oauth_locks WHERE expires_at < $1`, ms(now)},
		{`DELETE FROM usage_minutes WHERE minute_start < $1`, ms(now.Add(-ams.UsageRetention))},
	} {
		tag, err := tx.Exec(ctx, q.sql, q.arg)
		if err != nil {
			return 0, fmt.Errorf("purge: %w", err)
		}
		total += tag.RowsAffected()
	}
	n, err := purgeRateState(ctx, tx, now)
	if err != nil {
		return 0, err
	}
	total += n
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit purge: %w", err)
	}
	return total, nil
}

var _ ams.QueueStatter = (*DB)(nil)

// QueueStats reports the delivery queue for metrics: how many jobs are
// pending, and how long the oldest due one has waited at now.
func (db *DB) QueueStats(ctx context.Context, now time.Time) (int64, time.Duration, error) {
	var n int64
	var oldest *int64
	err := db.pool.QueryRow(ctx, `SELECT count(*), min(CASE WHEN next_at <= $1 THEN next_at END) FROM webhook_jobs WHERE state = 'pending'`,
		ms(now)).Scan(&n, &oldest)
	if err != nil {
		return 0, 0, fmt.Errorf("queue stats: %w", err)
	}
	var age time.Duration
	if oldest != nil {
		age = now.Sub(fromMS(*oldest))
	}
	return n, age, nil
}
