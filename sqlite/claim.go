package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlstore"
)

// The queue claims of SQLite: one writer at a time, so a claim in a write
// transaction sees every other claim committed and needs no row locks.

// dueWebhooksQuery lists the webhooks whose wake rows are due at ?1,
// earliest first: a range of webhook_wakes_at, what is due and nothing
// else (migration 0032).
const dueWebhooksQuery = `
SELECT w.id, w.user_id, w.url, w.secret_sealed, w.previous_secret_sealed, w.previous_secret_expires_at, w.active, w.ordered, w.payload
FROM (SELECT k.webhook_id, min(k.at) AS at FROM webhook_wakes k INDEXED BY webhook_wakes_at WHERE k.at <= ?1 GROUP BY k.webhook_id) d
JOIN webhooks w ON w.id = d.webhook_id
ORDER BY d.at, w.id`

// webhookJobsQuery reads one webhook's oldest due jobs through its index
// (it passes over the webhook's jobs in flight, as many as its cap at
// most), limit of them. Its LIMIT is a literal, one statement per limit
// (the write connection prepares each once and keeps it), not a bound
// parameter: SQLite plans with the value bound to a LIMIT, so it prepares
// such a statement again each time that value changes, as a claim's free
// slots do from one claim to the next (SQLite 3.54; a quarter of the
// claim's time in a drain went to it).
func webhookJobsQuery(limit int) string {
	return `
SELECT q.seq, q.user_id, q.attempts, q.next_at, q.lease_until, e.id, e.type, e.data, e.created_at
FROM webhook_jobs q INDEXED BY webhook_jobs_webhook_due JOIN events e ON e.id = q.event_id
WHERE q.webhook_id = ?1 AND q.state = 'pending' AND q.next_at <= ?2 AND q.lease_until <= ?2
ORDER BY q.next_at, q.seq LIMIT ` + strconv.Itoa(limit)
}

// headJobQuery reads an ordered webhook's head: its first pending job in
// queue order, due or not.
const headJobQuery = `
SELECT q.seq, q.user_id, q.attempts, q.next_at, q.lease_until, e.id, e.type, e.data, e.created_at
FROM webhook_jobs q INDEXED BY webhook_jobs_webhook JOIN events e ON e.id = q.event_id
WHERE q.webhook_id = ?1 AND q.state = 'pending'
ORDER BY q.seq LIMIT 1`

// The wake rows of a webhook a claim looked at are replaced by one at its
// next due time after the claim (none when nothing is pending), unless
// that time has come already: a wake row due now stays a true promise
// (nothing is due before a time already past), so a webhook that still
// has due work keeps its row and the claim writes nothing for it. A job
// is due at the later of next_at and lease_until. Of an unordered webhook
// with k jobs in flight, the next due time is that of its first k+1
// pending jobs in next_at order: jobs in flight were due when claimed, so
// they come before any job not due yet; when a job of these is due, the
// result is due too. Of an ordered webhook, it is its head's.
const (
	clearWakesQuery      = `DELETE FROM webhook_wakes WHERE webhook_id = ?1`
	nextOrderedWakeQuery = `SELECT max(q.next_at, q.lease_until) FROM webhook_jobs q INDEXED BY webhook_jobs_webhook
WHERE q.webhook_id = ?1 AND q.state = 'pending' ORDER BY q.seq LIMIT 1`
	wakeQuery = `INSERT INTO webhook_wakes (webhook_id, at) VALUES (?1, ?2)`
)

// nextWakeQuery reads the next due time of an unordered webhook's first
// n pending jobs (see above); its LIMIT is a literal, as webhookJobsQuery's.
func nextWakeQuery(n int) string {
	return `SELECT min(max(next_at, lease_until)) FROM (SELECT q.next_at, q.lease_until FROM webhook_jobs q INDEXED BY webhook_jobs_webhook_due
  WHERE q.webhook_id = ?1 AND q.state = 'pending' ORDER BY q.next_at, q.seq LIMIT ` + strconv.Itoa(n) + `)`
}

// ClaimJobs leases due jobs; see ams.DeliveryQueue. In one transaction it
// counts the deliveries in flight (sqlstore.InFlight), reads the webhooks
// whose wake rows are due (dueWebhooksQuery), takes from each of those
// with free slots, at most sqlstore.ProbedWebhooks of them, its oldest
// due jobs up to its free slots (an ordered webhook: its head, if due and
// nothing of it is in flight), leases of those, up to c.Limit, the
// accounts' oldest jobs in turn (sqlstore.Pick), and replaces the wake
// rows of the webhooks it looked at by their next due time. Its cost
// grows with the webhooks that have due work, not with the active
// webhooks, the backlog of a slow one, or the jobs kept for 30 days.
func (db *DB) ClaimJobs(ctx context.Context, now time.Time, c ams.Claim) ([]*ams.Job, error) {
	if c.Limit <= 0 || c.PerWebhook <= 0 {
		return nil, nil
	}
	var got *claimed
	err := db.group.run(ctx, func(cn sqlstore.Conn) error {
		var err error
		got, err = db.claimJobs(ctx, cn, now, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.open(got), nil
}

// RecordAttemptsAndClaim records attempts as RecordAttempts does and,
// in the same transaction, after them, claims as ClaimJobs does (the
// caps count the recorded jobs as no longer in flight): a worker whose
// deliveries end claims their successors in the one trip through the
// writer that records them, where a record and a claim took two, each
// queued behind the other writers. A failed claim (claimErr) undoes only
// its own writes: the records stay.
func (db *DB) RecordAttemptsAndClaim(ctx context.Context, rs []*ams.AttemptResult, now time.Time, c ams.Claim) (errs []error, jobs []*ams.Job, claimErr, err error) {
	var got *claimed
	claim := func(ctx context.Context, cn sqlstore.Conn) error {
		var err error
		got = nil
		if c.Limit > 0 && c.PerWebhook > 0 {
			got, err = db.claimJobs(ctx, cn, now, c)
		}
		return err
	}
	errs, claimErr, err = db.RecordAttemptsThen(ctx, rs, now, claim)
	if err != nil || claimErr != nil {
		return errs, nil, claimErr, err
	}
	return errs, db.open(got), nil, nil
}

// claimHook is a webhook whose wake row is due, as a claim reads it.
type claimHook struct {
	id, user, url, sealed string
	payload               string
	prevSealed            *string
	prevExpires           *int64
	active, ordered       bool
}

// claimJobs is ClaimJobs in the write transaction cn.
func (db *DB) claimJobs(ctx context.Context, cn sqlstore.Conn, now time.Time, c ams.Claim) (*claimed, error) {
	busy, err := sqlstore.ReadInFlight(ctx, cn, now)
	if err != nil {
		return nil, err
	}
	var hooks []claimHook
	rows, err := cn.Query(ctx, dueWebhooksQuery, sqlstore.MS(now))
	if err != nil {
		return nil, fmt.Errorf("find due webhooks: %w", err)
	}
	for rows.Next() {
		var h claimHook
		if err := rows.Scan(&h.id, &h.user, &h.url, &h.sealed, &h.prevSealed, &h.prevExpires, &h.active, &h.ordered, &h.payload); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan webhook: %w", err)
		}
		hooks = append(hooks, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find due webhooks: %w", err)
	}
	var cands []sqlstore.Candidate
	sealed := map[*ams.Job]sealedJob{}
	// looked, ordered: the webhooks whose wake rows this claim replaces;
	// inactive ones lose theirs (enabling a webhook wakes it again).
	var ordered, inactive []string
	looked := map[string]int{}
	for _, h := range hooks {
		if !h.active {
			inactive = append(inactive, h.id)
			continue
		}
		free := busy.Free(c, h.id, h.user, h.ordered)
		if free <= 0 {
			continue // its wake row stays: it has due work, or jobs in flight
		}
		if len(looked)+len(ordered) >= sqlstore.ProbedWebhooks(c) {
			break
		}
		if h.ordered {
			ordered = append(ordered, h.id)
		} else {
			looked[h.id] = busy.Webhook[h.id]
		}
		got, err := db.probeJobs(ctx, cn, h, now, min(free, c.Limit), sealed)
		if err != nil {
			return nil, err
		}
		cands = append(cands, got...)
	}
	jobs := busy.Pick(c, cands)
	if len(jobs) > 0 {
		until := now.Add(c.Lease)
		seqs := make([]int64, len(jobs))
		for i, j := range jobs {
			seqs[i], j.LeaseUntil = j.Seq, until
			if _, ok := looked[j.WebhookID]; ok {
				looked[j.WebhookID]++
			}
		}
		ids, _ := json.Marshal(seqs)
		if _, err := cn.Exec(ctx, `UPDATE webhook_jobs SET lease_until = ? WHERE seq IN (SELECT value FROM json_each(?))`,
			sqlstore.MS(until), string(ids)); err != nil {
			return nil, fmt.Errorf("lease jobs: %w", err)
		}
	}
	if err := wakeNext(ctx, cn, now, looked, ordered, inactive); err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	return &claimed{jobs: jobs, sealed: sealed}, nil
}

// sealedJob is what a claimed job still needs opened: its event's data
// as stored and its webhook's sealed secrets.
type sealedJob struct {
	data []byte
	hook *claimHook
}

// claimed is what a claim leased, not opened yet: decoding the events
// and unsealing the secrets waits until the claim's transaction has
// ended, so that the one writer is not held for it (a tenth of its time
// in a drain), and only the jobs leased are opened.
type claimed struct {
	jobs   []*ams.Job
	sealed map[*ams.Job]sealedJob
}

// open finishes the claimed jobs (sqlstore.Store's OpenClaimed): one that
// cannot be opened (a corrupt row, a secret sealed with another key)
// comes back with its OpenErr set, beside the others.
func (db *DB) open(c *claimed) []*ams.Job {
	if c == nil {
		return nil
	}
	for _, j := range c.jobs {
		s := c.sealed[j]
		db.OpenClaimed(j, s.data, s.hook.sealed, s.hook.prevSealed, s.hook.prevExpires)
	}
	return c.jobs
}

// probeJobs reads webhook h's due jobs (webhookJobsQuery), at most limit;
// of an ordered webhook, its head if due (headJobQuery). Their event data
// and secrets go to sealed, for open after the transaction.
func (db *DB) probeJobs(ctx context.Context, cn sqlstore.Conn, h claimHook, now time.Time, limit int, sealed map[*ams.Job]sealedJob) ([]sqlstore.Candidate, error) {
	query, args := webhookJobsQuery(limit), []any{h.id, sqlstore.MS(now)}
	if h.ordered {
		query, args = headJobQuery, []any{h.id}
	}
	rows, err := cn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	defer rows.Close()
	var cands []sqlstore.Candidate
	for rows.Next() {
		j := &ams.Job{WebhookID: h.id, URL: h.url, Payload: h.payload, Event: &ams.Event{Object: "event"}}
		var next, lease, created int64
		var data string
		if err := rows.Scan(&j.Seq, &j.UserID, &j.Attempts, &next, &lease, &j.Event.ID, &j.Event.Type, &data, &created); err != nil {
			return nil, fmt.Errorf("scan job: %w", err)
		}
		if max(next, lease) > sqlstore.MS(now) {
			continue // an ordered webhook's head, not due yet: it holds the rest
		}
		j.Event.UserID, j.Event.CreatedAt = j.UserID, sqlstore.FromMS(created)
		j.LeaseExpired = lease > 0 // a record or a new job leaves 0
		sealed[j] = sealedJob{data: []byte(data), hook: &h}
		cands = append(cands, sqlstore.Candidate{Job: j, NextAt: next})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	return cands, nil
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

// wakeNext replaces the wake rows of the webhooks a claim looked at by
// one at each one's next due time after the claim's leases, unless that
// time is at or before now (see nextWakeQuery): looked are unordered,
// with their jobs in flight now; ordered are ordered ones; inactive ones
// only lose theirs.
func wakeNext(ctx context.Context, cn sqlstore.Conn, now time.Time, looked map[string]int, ordered, inactive []string) error {
	next := func(query string, args ...any) (*int64, error) {
		var at *int64
		if err := cn.QueryRow(ctx, query, args...).Scan(&at); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("next wake: %w", err)
		}
		return at, nil
	}
	wake := func(id string, at *int64) error {
		if at != nil && *at <= sqlstore.MS(now) {
			return nil // due still: its row stays
		}
		if _, err := cn.Exec(ctx, clearWakesQuery, id); err != nil {
			return fmt.Errorf("clear wakes: %w", err)
		}
		if at == nil {
			return nil
		}
		if _, err := cn.Exec(ctx, wakeQuery, id, *at); err != nil {
			return fmt.Errorf("next wake: %w", err)
		}
		return nil
	}
	for id, k := range looked {
		at, err := next(nextWakeQuery(k+1), id)
		if err == nil {
			err = wake(id, at)
		}
		if err != nil {
			return err
		}
	}
	for _, id := range ordered {
		at, err := next(nextOrderedWakeQuery, id)
		if err == nil {
			err = wake(id, at)
		}
		if err != nil {
			return err
		}
	}
	for _, id := range inactive {
		if err := wake(id, nil); err != nil {
			return err
		}
	}
	return nil
}
