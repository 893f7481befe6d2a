package sqlite

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlstore"
)

// The queue claims of SQLite: one writer at a time, so a claim in a write
// transaction sees every other claim committed and needs no row locks.

// dueWebhooksQuery lists the active webhooks that have a due, unleased
// job: one indexed probe per active webhook.
const dueWebhooksQuery = `
SELECT w.id, w.url, w.secret_sealed, w.previous_secret_sealed, w.previous_secret_expires_at FROM webhooks w
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
	type hook struct {
		id, url, sealed string
		prevSealed      *string
		prevExpires     *int64
	}
	var hooks []hook
	rows, err := tx.QueryContext(ctx, dueWebhooksQuery, sqlstore.MS(now))
	if err != nil {
		return nil, fmt.Errorf("find due webhooks: %w", err)
	}
	for rows.Next() {
		var h hook
		if err := rows.Scan(&h.id, &h.url, &h.sealed, &h.prevSealed, &h.prevExpires); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan webhook: %w", err)
		}
		if perWebhook-inFlight[h.id] <= 0 {
			continue
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
		rows, err := tx.QueryContext(ctx, webhookJobsQuery, h.id, sqlstore.MS(now), min(perWebhook-inFlight[h.id], limit))
		if err != nil {
			return nil, fmt.Errorf("claim jobs: %w", err)
		}
		for rows.Next() {
			j := &ams.Job{WebhookID: h.id, URL: h.url, Event: &ams.Event{Object: "event"}}
			var next, created int64
			var data string
			if err := rows.Scan(&j.Seq, &j.UserID, &j.Attempts, &next, &j.Event.ID, &j.Event.Type, &data, &created); err != nil {
				rows.Close()
				return nil, fmt.Errorf("scan job: %w", err)
			}
			j.Event.UserID, j.Event.CreatedAt = j.UserID, sqlstore.FromMS(created)
			if err := db.OpenJob(j, []byte(data), h.sealed); err != nil {
				rows.Close()
				return nil, err
			}
			if err := db.OpenPreviousSecret(j, h.prevSealed, h.prevExpires); err != nil {
				rows.Close()
				return nil, err
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
		sqlstore.MS(now.Add(lease)), string(ids)); err != nil {
		return nil, fmt.Errorf("lease jobs: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit claim: %w", err)
	}
	return jobs, nil
}

// ClaimEmails leases due e-mails.
func (db *DB) ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*ams.Email, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id, to_addr, subject, body, attempts FROM emails
		WHERE state = 'pending' AND next_at <= ? AND lease_until <= ? ORDER BY next_at LIMIT ?`, sqlstore.MS(now), sqlstore.MS(now), limit)
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
		if _, err := tx.ExecContext(ctx, `UPDATE emails SET lease_until = ? WHERE id = ?`, sqlstore.MS(now.Add(lease)), e.ID); err != nil {
			return nil, fmt.Errorf("lease e-mail: %w", err)
		}
	}
	return out, tx.Commit()
}
