package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/amsdev/ams"
)

// The mail queue (table emails), written once for both engines: an
// e-mail is queued under its kind's per-recipient cap, claimed by the
// engine's ClaimEmails while due (EmailsDue), and finished (FinishEmail).

// EmailsDue is the WHERE and ORDER BY of the e-mails a claim at $1 may
// lease, in the order it leases them: pending, due (next_at) and not
// leased (a lease that ran out, its process gone, is due again); oldest
// first. Both engines' ClaimEmails read through it.
const EmailsDue = `WHERE state = 'pending' AND next_at <= $1 AND lease_until <= $1 ORDER BY next_at, seq`

// emailCap returns the per-recipient cap of e's kind (ams.EmailCaps); an
// e-mail of a kind without one is a programming error, refused so that
// no e-mail escapes the caps.
func emailCap(e *ams.Email) (ams.EmailCap, error) {
	c, ok := ams.EmailCaps[e.Kind]
	if !ok || c.Max < 1 {
		return c, fmt.Errorf("queue e-mail %s: kind %q has no per-recipient cap (ams.EmailCaps)", e.ID, e.Kind)
	}
	return c, nil
}

// emailCapped reports whether e's recipient has had the cap of e's kind
// of e-mails within its window before now. It first takes the dialect's
// lock on the recipient and kind, held until q's transaction ends, so
// that transactions queueing to one recipient in several processes take
// their turns: each counts the others' committed e-mails.
func (q *Queries) emailCapped(ctx context.Context, e *ams.Email, now time.Time) (bool, error) {
	c, err := emailCap(e)
	if err != nil {
		return false, err
	}
	if err := q.lockKey(ctx, "email "+string(e.Kind)+" "+e.To); err != nil {
		return false, err
	}
	var n int
	if err := q.r.QueryRow(ctx, `SELECT count(*) FROM emails WHERE to_addr = $1 AND kind = $2 AND created_at > $3`,
		e.To, string(e.Kind), MS(now.Add(-c.Window))).Scan(&n); err != nil {
		return false, q.fail("count e-mails", err)
	}
	return n >= c.Max, nil
}

// insertEmail inserts e into the mail queue, due at now.
func (q *Queries) insertEmail(ctx context.Context, e *ams.Email, now time.Time) error {
	_, err := q.exec(ctx, "queue e-mail", `INSERT INTO emails (id, kind, to_addr, subject, body, next_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $6)`,
		e.ID, string(e.Kind), e.To, e.Subject, e.Text, MS(now))
	return err
}

// queueEmail inserts e into the mail queue, due at now, unless its
// recipient has reached the cap of its kind (emailCapped); it reports
// whether it queued e. It runs in q's transaction, or its own.
func (q *Queries) queueEmail(ctx context.Context, e *ams.Email, now time.Time) (bool, error) {
	queued := false
	err := q.inTx(ctx, func(q *Queries) error {
		queued = false // a retried transaction starts afresh
		capped, err := q.emailCapped(ctx, e, now)
		if err != nil || capped {
			return err
		}
		if err := q.insertEmail(ctx, e, now); err != nil {
			return err
		}
		queued = true
		return nil
	})
	return queued, err
}

// QueueEmail queues e, due at now, unless its recipient has reached the
// cap of its kind.
func (q *Queries) QueueEmail(ctx context.Context, e *ams.Email, now time.Time) error {
	_, err := q.queueEmail(ctx, e, now)
	return err
}

// FinishEmail records the outcome of sending an e-mail.
func (q *Queries) FinishEmail(ctx context.Context, id string, sent bool, errText string, retryAt, now time.Time) error {
	var err error
	switch {
	case sent:
		_, err = q.exec(ctx, "finish e-mail", `UPDATE emails SET state = 'sent', attempts = attempts + 1, sent_at = $1, lease_until = 0 WHERE id = $2`, MS(now), id)
	case retryAt.IsZero():
		_, err = q.exec(ctx, "finish e-mail", `UPDATE emails SET state = 'failed', attempts = attempts + 1, last_error = $1, lease_until = 0 WHERE id = $2`, errText, id)
	default:
		_, err = q.exec(ctx, "finish e-mail", `UPDATE emails SET attempts = attempts + 1, last_error = $1, next_at = $2, lease_until = 0 WHERE id = $3`, errText, MS(retryAt), id)
	}
	return err
}
