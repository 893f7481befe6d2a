package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
)

const webhookCols = `id, user_id, url, secret_sealed, active, status, created_at, updated_at,
	(SELECT group_concat(s.event_type, ',') FROM webhook_subscriptions s WHERE s.webhook_id = webhooks.id)`

func (db *DB) scanWebhook(s scanner) (*ams.Webhook, error) {
	w := &ams.Webhook{Object: "webhook"}
	var sealed string
	var events sql.NullString
	var c, u int64
	if err := s.Scan(&w.ID, &w.UserID, &w.URL, &sealed, &w.Active, &w.Status, &c, &u, &events); err != nil {
		return nil, err
	}
	w.CreatedAt, w.UpdatedAt = fromMS(c), fromMS(u)
	w.Events = sqlrow.SortEvents(strings.Split(events.String, ","))
	secret, err := db.sealer.Open(sealed, w.ID)
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", w.ID, err)
	}
	w.Secret = secret
	return w, nil
}

// CreateWebhook stores w, its subscriptions, and its secret sealed.
func (db *DB) CreateWebhook(ctx context.Context, w *ams.Webhook) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO webhooks (id, user_id, url, secret_sealed, active, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, w.ID, w.UserID, w.URL, db.sealer.Seal(w.Secret, w.ID), w.Active, w.Status,
		ms(w.CreatedAt), ms(w.UpdatedAt)); err != nil {
		return fmt.Errorf("insert webhook: %w", err)
	}
	w.Events = sqlrow.SortEvents(w.Events)
	if err := setSubscriptions(ctx, tx, w); err != nil {
		return err
	}
	return tx.Commit()
}

func setSubscriptions(ctx context.Context, tx *sql.Tx, w *ams.Webhook) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_subscriptions WHERE webhook_id = ?`, w.ID); err != nil {
		return fmt.Errorf("clear subscriptions: %w", err)
	}
	for _, t := range w.Events {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_subscriptions (webhook_id, user_id, event_type) VALUES (?, ?, ?)`,
			w.ID, w.UserID, t); err != nil {
			return fmt.Errorf("insert subscription: %w", err)
		}
	}
	return nil
}

// FindWebhook returns the user's webhook; ENOTFOUND otherwise.
func (db *DB) FindWebhook(ctx context.Context, userID, id string) (*ams.Webhook, error) {
	return db.findWebhook(ctx, &db.rq, userID, id)
}

func (db *DB) findWebhook(ctx context.Context, q rowQuerier, userID, id string) (*ams.Webhook, error) {
	w, err := db.scanWebhook(q.QueryRowContext(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = ? AND user_id = ?`, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("webhook", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find webhook: %w", err)
	}
	return w, nil
}

// ListWebhooks returns a page of the user's webhooks.
func (db *DB) ListWebhooks(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Webhook], error) {
	return list(ctx, &db.rq, webhookCols, "webhooks", "user_id = ?", []any{userID}, p, db.scanWebhook)
}

// UpdateWebhook applies upd. Turning a webhook off cancels its pending
// deliveries; turning it on clears a failing status.
func (db *DB) UpdateWebhook(ctx context.Context, userID, id string, upd ams.WebhookUpdate, now time.Time) (*ams.Webhook, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	w, err := db.findWebhook(ctx, txQuerier{tx}, userID, id)
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
	if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET url = ?, secret_sealed = ?, active = ?, status = ?, updated_at = ? WHERE id = ?`,
		w.URL, db.sealer.Seal(w.Secret, w.ID), w.Active, w.Status, ms(now), w.ID); err != nil {
		return nil, fmt.Errorf("update webhook: %w", err)
	}
	return w, tx.Commit()
}

func cancelJobs(ctx context.Context, tx *sql.Tx, webhookID string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_jobs SET state = 'canceled', updated_at = ? WHERE webhook_id = ? AND state = 'pending'`,
		ms(now), webhookID); err != nil {
		return fmt.Errorf("cancel deliveries: %w", err)
	}
	return nil
}

// DeleteWebhook removes the webhook, its subscriptions, jobs and delivery
// log.
func (db *DB) DeleteWebhook(ctx context.Context, userID, id string) error {
	res, err := db.write.ExecContext(ctx, `DELETE FROM webhooks WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return fmt.Errorf("delete webhook: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ams.NotFound("webhook", id)
	}
	return nil
}

// activeWebhook checks within tx that the user's webhook exists and is
// active.
func (db *DB) activeWebhook(ctx context.Context, tx *sql.Tx, userID, id string) error {
	var active bool
	err := tx.QueryRowContext(ctx, `SELECT active FROM webhooks WHERE id = ? AND user_id = ?`, id, userID).Scan(&active)
	if errors.Is(err, sql.ErrNoRows) {
		return ams.NotFound("webhook", id)
	} else if err != nil {
		return fmt.Errorf("find webhook: %w", err)
	}
	if !active {
		return ams.Errorf(ams.ECONFLICT, "webhook_inactive", "Webhook '%s' is not active; enable it with PATCH {\"active\": true} first.", id)
	}
	return nil
}

func insertJob(ctx context.Context, tx *sql.Tx, userID, webhookID, eventID string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_jobs (user_id, webhook_id, event_id, next_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`, userID, webhookID, eventID, ms(now), ms(now), ms(now)); err != nil {
		return fmt.Errorf("queue delivery: %w", err)
	}
	return nil
}

// PingWebhook stores e (a webhook.ping event) and queues it for this webhook only.
func (db *DB) PingWebhook(ctx context.Context, userID, id string, e *ams.Event) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := db.activeWebhook(ctx, tx, userID, id); err != nil {
		return err
	}
	if err := insertEvent(ctx, tx, e); err != nil {
		return err
	}
	if err := insertJob(ctx, tx, userID, id, e.ID, e.CreatedAt); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit ping: %w", err)
	}
	db.signalJobs(1)
	return nil
}

// EnqueueDelivery queues the event for the webhook again.
func (db *DB) EnqueueDelivery(ctx context.Context, userID, webhookID, eventID string, now time.Time) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := db.activeWebhook(ctx, tx, userID, webhookID); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE id = ? AND user_id = ?`, eventID, userID).Scan(&n); err != nil {
		return fmt.Errorf("find event: %w", err)
	}
	if n == 0 {
		return ams.Errorf(ams.ECONFLICT, "event_expired", "Event '%s' is no longer kept (events are kept %d days).", eventID, int(ams.EventRetention.Hours()/24))
	}
	if err := insertJob(ctx, tx, userID, webhookID, eventID, now); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit redelivery: %w", err)
	}
	db.signalJobs(1)
	return nil
}

func scanDelivery(s scanner) (*ams.Delivery, error) {
	d := &ams.Delivery{Object: "webhook_delivery"}
	var code sql.NullInt64
	var errText sql.NullString
	var c int64
	if err := s.Scan(&d.ID, &d.UserID, &d.WebhookID, &d.EventID, &d.EventType, &d.Attempt, &d.URL, &d.Success, &code,
		&d.DurationMS, &errText, &d.ResponseBody, &c); err != nil {
		return nil, err
	}
	if code.Valid {
		v := int(code.Int64)
		d.StatusCode = &v
	}
	if errText.Valid {
		d.Error = &errText.String
	}
	d.CreatedAt = fromMS(c)
	return d, nil
}

// ListDeliveries returns a page of a webhook's delivery attempts, of one
// event when eventID is set.
func (db *DB) ListDeliveries(ctx context.Context, userID, webhookID, eventID string, p ams.ListParams) (*ams.Page[*ams.Delivery], error) {
	where, args := "webhook_id = ? AND user_id = ?", []any{webhookID, userID}
	if eventID != "" {
		where, args = where+" AND event_id = ?", append(args, eventID)
	}
	return list(ctx, &db.rq, sqlrow.DeliveryCols, "webhook_deliveries", where, args, p, scanDelivery)
}

// FindDelivery returns one attempt of the user's webhook; ENOTFOUND otherwise.
func (db *DB) FindDelivery(ctx context.Context, userID, webhookID, id string) (*ams.Delivery, error) {
	d, err := scanDelivery(db.rq.QueryRowContext(ctx, `SELECT `+sqlrow.DeliveryCols+` FROM webhook_deliveries WHERE id = ? AND webhook_id = ? AND user_id = ?`,
		id, webhookID, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("delivery", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find delivery: %w", err)
	}
	return d, nil
}

// dueWebhooksQuery lists the active webhooks that have a due, unleased
// job: one indexed probe per active webhook.
const dueWebhooksQuery = `
SELECT w.id, w.url, w.secret_sealed FROM webhooks w
WHERE w.active = 1 AND EXISTS (
  SELECT 1 FROM webhook_jobs q INDEXED BY webhook_jobs_webhook_due
  WHERE q.webhook_id = w.id AND q.state = 'pending' AND q.next_at <= ?1 AND q.lease_until <= ?1)`

// webhookJobsQuery reads one webhook's oldest due jobs through its index.
const webhookJobsQuery = `
SELECT q.seq, q.user_id, q.attempts, q.next_at, e.id, e.type, e.data, e.created_at
FROM webhook_jobs q INDEXED BY webhook_jobs_webhook_due JOIN events e ON e.id = q.event_id
WHERE q.webhook_id = ?1 AND q.state = 'pending' AND q.next_at <= ?2 AND q.lease_until <= ?2
ORDER BY q.next_at, q.seq LIMIT ?3`

// ClaimJobs leases due jobs; see ams.DeliveryQueue. It finds the webhooks
// with due work, takes from each its oldest due jobs up to its free slots,
// and leases the oldest of those up to limit, all in one transaction. Its
// cost grows with the number of active webhooks, not with the backlog of a
// slow one, nor with the jobs kept for 30 days.
func (db *DB) ClaimJobs(ctx context.Context, now time.Time, lease time.Duration, limit, perWebhook int, inFlight map[string]int) ([]*ams.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	type hook struct{ id, url, secret string }
	var hooks []hook
	rows, err := tx.QueryContext(ctx, dueWebhooksQuery, ms(now))
	if err != nil {
		return nil, fmt.Errorf("find due webhooks: %w", err)
	}
	for rows.Next() {
		var h hook
		var sealed string
		if err := rows.Scan(&h.id, &h.url, &sealed); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan webhook: %w", err)
		}
		if perWebhook-inFlight[h.id] <= 0 {
			continue
		}
		if h.secret, err = db.sealer.Open(sealed, h.id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("webhook %s: %w", h.id, err)
		}
		hooks = append(hooks, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find due webhooks: %w", err)
	}
	type due struct {
		job  *ams.Job
		next int64
	}
	var cands []due
	for _, h := range hooks {
		rows, err := tx.QueryContext(ctx, webhookJobsQuery, h.id, ms(now), min(perWebhook-inFlight[h.id], limit))
		if err != nil {
			return nil, fmt.Errorf("claim jobs: %w", err)
		}
		for rows.Next() {
			j := &ams.Job{WebhookID: h.id, URL: h.url, Secret: h.secret, Event: &ams.Event{Object: "event"}}
			var next, created int64
			var data string
			if err := rows.Scan(&j.Seq, &j.UserID, &j.Attempts, &next, &j.Event.ID, &j.Event.Type, &data, &created); err != nil {
				rows.Close()
				return nil, fmt.Errorf("scan job: %w", err)
			}
			j.Event.UserID, j.Event.CreatedAt = j.UserID, fromMS(created)
			if err := json.Unmarshal([]byte(data), &j.Event.Data); err != nil {
				rows.Close()
				return nil, fmt.Errorf("decode event %s: %w", j.Event.ID, err)
			}
			cands = append(cands, due{j, next})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("claim jobs: %w", err)
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	slices.SortFunc(cands, func(a, b due) int {
		if a.next != b.next {
			return cmp.Compare(a.next, b.next)
		}
		return cmp.Compare(a.job.Seq, b.job.Seq)
	})
	cands = cands[:min(len(cands), limit)]
	jobs := make([]*ams.Job, len(cands))
	seqs := make([]int64, len(cands))
	for i, c := range cands {
		jobs[i], seqs[i] = c.job, c.job.Seq
	}
	ids, _ := json.Marshal(seqs)
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_jobs SET lease_until = ? WHERE seq IN (SELECT value FROM json_each(?))`,
		ms(now.Add(lease)), string(ids)); err != nil {
		return nil, fmt.Errorf("lease jobs: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit claim: %w", err)
	}
	return jobs, nil
}

// RecordAttempt stores an attempt and its consequences; see
// ams.DeliveryQueue.
func (db *DB) RecordAttempt(ctx context.Context, r *ams.AttemptResult, now time.Time) (bool, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	d := r.Delivery
	var code any
	if d.StatusCode != nil {
		code = *d.StatusCode
	}
	var errText any
	if d.Error != nil {
		errText = *d.Error
	}
	// A webhook deleted while its delivery was in flight took its jobs and
	// log with it: then there is nothing to record.
	if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (`+sqlrow.DeliveryCols+`) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
		WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = ?)`,
		d.ID, d.UserID, d.WebhookID, d.EventID, d.EventType, d.Attempt, d.URL, d.Success, code, d.DurationMS, errText,
		d.ResponseBody, ms(d.CreatedAt), d.WebhookID); err != nil {
		return false, fmt.Errorf("insert delivery: %w", err)
	}
	state, next := "succeeded", int64(0)
	switch r.Outcome {
	case ams.JobRetry:
		state, next = "pending", ms(r.NextAt)
	case ams.JobFailed:
		state = "failed"
	}
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_jobs SET state = CASE WHEN state = 'pending' THEN ? ELSE state END,
		attempts = attempts + 1, next_at = CASE WHEN ? > 0 THEN ? ELSE next_at END, lease_until = 0, updated_at = ? WHERE seq = ?`,
		state, next, next, ms(now), r.Job.Seq); err != nil {
		return false, fmt.Errorf("update job: %w", err)
	}
	failed := false
	if r.Outcome == ams.JobFailed {
		res, err := tx.ExecContext(ctx, `UPDATE webhooks SET active = 0, status = 'failing', updated_at = ? WHERE id = ? AND active = 1`,
			ms(now), r.Job.WebhookID)
		if err != nil {
			return false, fmt.Errorf("mark webhook failing: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			failed = true
			if err := cancelJobs(ctx, tx, r.Job.WebhookID, now); err != nil {
				return false, err
			}
			if e := r.Email; e != nil {
				if _, err := tx.ExecContext(ctx, `INSERT INTO emails (id, to_addr, subject, body, next_at, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
					e.ID, e.To, e.Subject, e.Text, ms(now), ms(now)); err != nil {
					return false, fmt.Errorf("queue e-mail: %w", err)
				}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit attempt: %w", err)
	}
	return failed, nil
}

// ClaimEmails leases due e-mails.
func (db *DB) ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*ams.Email, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id, to_addr, subject, body, attempts FROM emails
		WHERE state = 'pending' AND next_at <= ? AND lease_until <= ? ORDER BY next_at LIMIT ?`, ms(now), ms(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claim e-mails: %w", err)
	}
	var out []*ams.Email
	for rows.Next() {
		e := &ams.Email{}
		if err := rows.Scan(&e.ID, &e.To, &e.Subject, &e.Text, &e.Attempts); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan e-mail: %w", err)
		}
		out = append(out, e)
	}
	rows.Close()
	for _, e := range out {
		if _, err := tx.ExecContext(ctx, `UPDATE emails SET lease_until = ? WHERE id = ?`, ms(now.Add(lease)), e.ID); err != nil {
			return nil, fmt.Errorf("lease e-mail: %w", err)
		}
	}
	return out, tx.Commit()
}

// FinishEmail records the outcome of sending an e-mail.
func (db *DB) FinishEmail(ctx context.Context, id string, sent bool, errText string, retryAt, now time.Time) error {
	var err error
	switch {
	case sent:
		_, err = db.write.ExecContext(ctx, `UPDATE emails SET state = 'sent', attempts = attempts + 1, sent_at = ?, lease_until = 0 WHERE id = ?`, ms(now), id)
	case retryAt.IsZero():
		_, err = db.write.ExecContext(ctx, `UPDATE emails SET state = 'failed', attempts = attempts + 1, last_error = ?, lease_until = 0 WHERE id = ?`, errText, id)
	default:
		_, err = db.write.ExecContext(ctx, `UPDATE emails SET attempts = attempts + 1, last_error = ?, next_at = ?, lease_until = 0 WHERE id = ?`, errText, ms(retryAt), id)
	}
	if err != nil {
		return fmt.Errorf("finish e-mail: %w", err)
	}
	return nil
}

// Purge deletes what is past its retention.
func (db *DB) Purge(ctx context.Context, now time.Time) (int64, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	cutoff := ms(now.Add(-ams.EventRetention))
	var total int64
	for _, q := range []struct {
		sql string
		arg int64
	}{
		{`DELETE FROM webhook_jobs WHERE event_id IN (SELECT id FROM events WHERE created_at < ?)`, cutoff},
		{`DELETE FROM webhook_deliveries WHERE created_at < ?`, cutoff},
		{`DELETE FROM events WHERE created_at < ?`, cutoff},
		{`DELETE FROM emails WHERE state != 'pending' AND created_at < ?`, cutoff},
		{`DELETE FROM idempotency_keys WHERE created_at < ?`, ms(now.Add(-ams.IdempotencyTTL))},
		{`DELETE FROM oauth_tokens WHERE expires_at < ?`, ms(now.Add(-24 * time.Hour))},
		{`DELETE FROM login_sessions WHERE expires_at < ?`, ms(now)},
		{`DELETE FROM oauth_locks WHERE expires_at < ?`, ms(now)},
		{`DELETE FROM usage_minutes WHERE minute_start < ?`, ms(now.Add(-ams.UsageRetention))},
	} {
		res, err := tx.ExecContext(ctx, q.sql, q.arg)
		if err != nil {
			return 0, fmt.Errorf("purge: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, tx.Commit()
}

// QueueStats reports the delivery queue for metrics.
func (db *DB) QueueStats(ctx context.Context, now time.Time) (int64, time.Duration, error) {
	var n int64
	var oldest sql.NullInt64
	err := db.rq.QueryRowContext(ctx, `SELECT count(*), min(CASE WHEN next_at <= ? THEN next_at END) FROM webhook_jobs WHERE state = 'pending'`,
		ms(now)).Scan(&n, &oldest)
	if err != nil {
		return 0, 0, fmt.Errorf("queue stats: %w", err)
	}
	var age time.Duration
	if oldest.Valid {
		age = now.Sub(fromMS(oldest.Int64))
	}
	return n, age, nil
}
