package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlstore"
)

// The queue claims of SQLite: one writer at a time, so a claim in a write
// transaction sees every other claim committed and needs no row locks.

// dueWebhooksQuery lists the active webhooks that have a due, unleased
// job: one indexed probe per active webhook.
const dueWebhooksQuery = `
SELECT w.id, w.user_id, w.url, w.secret_sealed, w.previous_secret_sealed, w.previous_secret_expires_at, w.payload FROM webhooks w
WHERE w.active = 1 AND EXISTS (
  SELECT 1 FROM webhook_jobs q INDEXED BY webhook_jobs_webhook_due
  WHERE q.webhook_id = w.id AND q.state = 'pending' AND q.next_at <= ?1 AND q.lease_until <= ?1)`

// webhookJobsQuery reads one webhook's oldest due jobs through its index.
const webhookJobsQuery = `
SELECT q.seq, q.user_id, q.attempts, q.next_at, q.lease_until, e.id, e.type, e.data, e.created_at
FROM webhook_jobs q INDEXED BY webhook_jobs_webhook_due JOIN events e ON e.id = q.event_id
WHERE q.webhook_id = ?1 AND q.state = 'pending' AND q.next_at <= ?2 AND q.lease_until <= ?2
ORDER BY q.next_at, q.seq LIMIT ?3`

// ClaimJobs leases due jobs; see ams.DeliveryQueue. In one transaction it
// counts the deliveries in flight (sqlstore.InFlight), finds the webhooks
// with due work and free slots, takes from each its oldest due jobs up to
// its free slots, and leases of those, up to c.Limit, the accounts' oldest
// jobs in turn (sqlstore.Pick). Its cost grows with the number of active
// webhooks, not with the backlog of a slow one, nor with the jobs kept for
// 30 days.
func (db *DB) ClaimJobs(ctx context.Context, now time.Time, c ams.Claim) ([]*ams.Job, error) {
	if c.Limit <= 0 || c.PerWebhook <= 0 {
		return nil, nil
	}
	var jobs []*ams.Job
	err := db.group.run(ctx, func(cn sqlstore.Conn) error {
		var err error
		jobs, err = db.claimJobs(ctx, cn, now, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// claimJobs is ClaimJobs in the write transaction cn.
func (db *DB) claimJobs(ctx context.Context, cn sqlstore.Conn, now time.Time, c ams.Claim) ([]*ams.Job, error) {
	busy, err := sqlstore.ReadInFlight(ctx, cn, now)
	if err != nil {
		return nil, err
	}
	type hook struct {
		id, user, url, sealed string
		payload               string
		prevSealed            *string
		prevExpires           *int64
	}
	var hooks []hook
	rows, err := cn.Query(ctx, dueWebhooksQuery, sqlstore.MS(now))
	if err != nil {
		return nil, fmt.Errorf("find due webhooks: %w", err)
	}
	for rows.Next() {
		var h hook
		if err := rows.Scan(&h.id, &h.user, &h.url, &h.sealed, &h.prevSealed, &h.prevExpires, &h.payload); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan webhook: %w", err)
		}
		if busy.Free(c, h.id, h.user) > 0 {
			hooks = append(hooks, h)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find due webhooks: %w", err)
	}
	var cands []sqlstore.Candidate
	for _, h := range hooks {
		rows, err := cn.Query(ctx, webhookJobsQuery, h.id, sqlstore.MS(now), min(busy.Free(c, h.id, h.user), c.Limit))
		if err != nil {
			return nil, fmt.Errorf("claim jobs: %w", err)
		}
		for rows.Next() {
			j := &ams.Job{WebhookID: h.id, URL: h.url, Payload: h.payload, Event: &ams.Event{Object: "event"}}
			var next, lease, created int64
			var data string
			if err := rows.Scan(&j.Seq, &j.UserID, &j.Attempts, &next, &lease, &j.Event.ID, &j.Event.Type, &data, &created); err != nil {
				rows.Close()
				return nil, fmt.Errorf("scan job: %w", err)
			}
			j.Event.UserID, j.Event.CreatedAt = j.UserID, sqlstore.FromMS(created)
			j.LeaseExpired = lease > 0 // a record or a new job leaves 0
			if err := db.OpenJob(j, []byte(data), h.sealed); err != nil {
				rows.Close()
				return nil, err
			}
			if err := db.OpenPreviousSecret(j, h.prevSealed, h.prevExpires); err != nil {
				rows.Close()
				return nil, err
			}
			cands = append(cands, sqlstore.Candidate{Job: j, NextAt: next})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("claim jobs: %w", err)
		}
	}
	jobs := busy.Pick(c, cands)
	if len(jobs) == 0 {
		return nil, nil
	}
	until := now.Add(c.Lease)
	seqs := make([]int64, len(jobs))
	for i, j := range jobs {
		seqs[i], j.LeaseUntil = j.Seq, until
	}
	ids, _ := json.Marshal(seqs)
	if _, err := cn.Exec(ctx, `UPDATE webhook_jobs SET lease_until = ? WHERE seq IN (SELECT value FROM json_each(?))`,
		sqlstore.MS(until), string(ids)); err != nil {
		return nil, fmt.Errorf("lease jobs: %w", err)
	}
	return jobs, nil
}

// ClaimEmails leases due e-mails.
func (db *DB) ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*ams.Email, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	// The statements run prepared, from the write connection's cache (one
	// first seen here is prepared once the transaction has ended).
	defer db.ws.prepareNoted(context.WithoutCancel(ctx))
	defer tx.Rollback()
	c := conn{db: tx, stmts: db.ws, tx: tx}
	rows, err := c.on(ctx, dueEmailsQuery).QueryContext(ctx, dueEmailsQuery, sqlstore.MS(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claim e-mails: %w", err)
	}
	var out []*ams.Email
	for rows.Next() {
		e := &ams.Email{}
		if err := rows.Scan(&e.ID, &e.Kind, &e.To, &e.Subject, &e.Text, &e.Attempts); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan e-mail: %w", err)
		}
		out = append(out, e)
	}
	rows.Close()
	for _, e := range out {
		if _, err := c.on(ctx, leaseEmailQuery).ExecContext(ctx, leaseEmailQuery, sqlstore.MS(now.Add(lease)), e.ID); err != nil {
			return nil, fmt.Errorf("lease e-mail: %w", err)
		}
	}
	return out, tx.Commit()
}

// The statements of ClaimEmails.
const (
	dueEmailsQuery  = `SELECT id, kind, to_addr, subject, body, attempts FROM emails ` + sqlstore.EmailsDue + ` LIMIT $2`
	leaseEmailQuery = `UPDATE emails SET lease_until = ? WHERE id = ?`
)
