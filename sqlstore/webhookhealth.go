package sqlstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/amsdev/ams"
)

// A webhook's health (DESIGN.md, "Early warning"): its failure streak,
// the failed attempts in a row as they are recorded, is kept in its row
// (failure_streak). Every failed attempt raises it; a success resets it
// only when it is not 0, so the deliveries of a healthy webhook never
// lock or rewrite its row. The attempt that brings it to
// ams.WebhookDegradedAfter emits webhook.degraded, the success that
// resets it from there webhook.recovered, each with an e-mail to the
// owner, in the transaction that records the attempt.

// streaks reads the failure streaks of the webhooks ids (sorted, without
// duplicates), locking their rows with lock where the engine takes row
// locks ("" where it does not).
func (q *Queries) streaks(ctx context.Context, ids []string, lock string) (map[string]int, error) {
	out := make(map[string]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.w.Query(ctx, `SELECT id, failure_streak FROM webhooks WHERE id IN (`+placeholders(1, len(ids))+`) ORDER BY id`+lock, args...)
	if err != nil {
		return nil, q.fail("read failure streaks", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, q.fail("read failure streaks", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, q.fail("read failure streaks", err)
	}
	return out, nil
}

// lockAttempts takes, before the attempts' jobs are touched, what
// recording rs needs, in an order none of the transactions that change
// webhooks can deadlock with, and returns the failure streaks of the
// webhooks whose health rs may change (the others are absent).
//
// First it reads the streaks of every webhook of rs, key-share-locking
// them (what the insert of an attempt would take through its foreign key,
// but before the attempt's job is locked: a transaction that deletes or
// changes a webhook locks the webhook before its jobs, and an attempt's
// record that locked its job first and then waited for the webhook could
// deadlock with it, PostgreSQL's 40P01). On the common path, successes to
// webhooks whose streak is 0, that is all.
//
// The webhooks with a failed attempt, or a success while their streak is
// not 0, will be written: their accounts are locked first (lockUser: the
// health events fan out to the account's other webhooks, as a final
// failure's webhook.failing does), then the webhooks themselves (FOR NO
// KEY UPDATE), reading their streaks again under that lock. Of two final
// failures of one webhook recorded at once, the second waits for the
// first and finds the webhook no longer active, so the owner gets one
// e-mail.
func (q *Queries) lockAttempts(ctx context.Context, rs []*ams.AttemptResult) (map[string]int, error) {
	var all []string
	failed := map[string]bool{}
	for _, r := range rs {
		all = append(all, r.Job.WebhookID)
		if r.Outcome != ams.JobSucceeded {
			failed[r.Job.WebhookID] = true
		}
	}
	all = slices.Compact(slices.Sorted(slices.Values(all)))
	streaks, err := q.streaks(ctx, all, q.lock("FOR KEY SHARE"))
	if err != nil {
		return nil, err
	}
	var hooks, users []string
	for _, r := range rs {
		if id := r.Job.WebhookID; failed[id] || streaks[id] != 0 {
			hooks, users = append(hooks, id), append(users, r.Job.UserID)
		}
	}
	if len(hooks) == 0 {
		return nil, nil
	}
	hooks = slices.Compact(slices.Sorted(slices.Values(hooks)))
	if q.lock("FOR NO KEY UPDATE") == "" {
		// No row locks (SQLite): the writer is this transaction's alone,
		// and the streaks read are the ones it writes over.
		held := make(map[string]int, len(hooks))
		for _, id := range hooks {
			if n, ok := streaks[id]; ok {
				held[id] = n
			}
		}
		return held, nil
	}
	for _, u := range slices.Compact(slices.Sorted(slices.Values(users))) {
		if err := q.lockUser(ctx, u); err != nil { // before the webhook: see lockUser
			return nil, err
		}
	}
	return q.streaks(ctx, hooks, q.lock("FOR NO KEY UPDATE"))
}

// recordHealth applies the recorded attempts of rs (matched[i]) to the
// failure streaks of their webhooks, held (read by lockAttempts under
// its lock), in the order of rs: it writes each changed streak once, and
// for each webhook that crossed ams.WebhookDegradedAfter it emits
// webhook.degraded or webhook.recovered and queues the owner's e-mail
// (the attempt's Notices; under the kind's cap, and unless the owner
// turned webhook e-mails off).
func (q *Queries) recordHealth(ctx context.Context, rs []*ams.AttemptResult, matched func(i int) bool, held map[string]int, now time.Time) error {
	if len(held) == 0 {
		return nil
	}
	streak := make(map[string]int, len(held))
	var order []string
	var events []*ams.Event
	notices := map[*ams.Event]*ams.AttemptResult{}
	for i, r := range rs {
		id := r.Job.WebhookID
		n, ok := held[id]
		if !ok || !matched(i) {
			continue
		}
		if s, seen := streak[id]; seen {
			n = s
		} else {
			order = append(order, id)
		}
		d := r.Delivery
		var e *ams.Event
		if r.Outcome == ams.JobSucceeded {
			if n >= ams.WebhookDegradedAfter {
				e = ams.WebhookHealthEvent(ams.EventWebhookRecovered, r.Job.UserID, id, d.URL, d.StatusCode, nil, n, now)
			}
			n = 0
		} else {
			n++
			if n == ams.WebhookDegradedAfter {
				e = ams.WebhookHealthEvent(ams.EventWebhookDegraded, r.Job.UserID, id, d.URL, d.StatusCode, d.Error, n, now)
			}
		}
		streak[id] = n
		if e != nil {
			events = append(events, e)
			notices[e] = r
		}
	}
	for _, id := range order {
		if streak[id] == held[id] {
			continue
		}
		if _, err := q.exec(ctx, "record failure streak", `UPDATE webhooks SET failure_streak = $1 WHERE id = $2`, streak[id], id); err != nil {
			return err
		}
	}
	if len(events) == 0 {
		return nil
	}
	if err := q.emit(ctx, nil, events); err != nil {
		return err
	}
	for _, e := range events {
		r := notices[e]
		if r.Notices == nil {
			continue
		}
		u, err := q.FindUser(ctx, e.UserID)
		if err != nil {
			return err
		}
		if u.WebhookFailingEmailsOff {
			continue
		}
		if m := r.Notices.HealthEmail(u, e); m != nil {
			if _, err := q.queueEmail(ctx, m, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// SummarizeWebhook returns the summary of the attempts to the user's
// webhook made at or after since: how many, how many succeeded, the
// success rate (rounded to 4 places) and the 95th percentile of their
// durations (nearest rank), read through webhook_deliveries_webhook_created.
func (q *Queries) SummarizeWebhook(ctx context.Context, userID, webhookID string, since time.Time) (*ams.WebhookSummary, error) {
	s := &ams.WebhookSummary{WindowHours: int(ams.SummaryWindow / time.Hour)}
	err := q.r.QueryRow(ctx, `SELECT count(*), coalesce(sum(CASE WHEN success THEN 1 ELSE 0 END), 0) FROM webhook_deliveries
		WHERE webhook_id = $1 AND user_id = $2 AND created_at >= $3`, webhookID, userID, MS(since)).Scan(&s.Attempts, &s.Succeeded)
	if err != nil {
		return nil, q.fail("summarize webhook", err)
	}
	if s.Attempts == 0 {
		return s, nil
	}
	rate := math.Round(float64(s.Succeeded)/float64(s.Attempts)*1e4) / 1e4
	s.SuccessRate = &rate
	rank := int64(math.Ceil(0.95 * float64(s.Attempts)))
	var p95 int64
	err = q.r.QueryRow(ctx, `SELECT duration_ms FROM webhook_deliveries WHERE webhook_id = $1 AND user_id = $2 AND created_at >= $3
		ORDER BY duration_ms LIMIT 1 OFFSET $4`, webhookID, userID, MS(since), rank-1).Scan(&p95)
	if err != nil {
		return nil, q.fail(fmt.Sprintf("summarize webhook: rank %d", rank), err)
	}
	s.P95DurationMS = &p95
	return s, nil
}
