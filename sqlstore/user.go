package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/amsdev/ams"
)

const userCols = `id, email, password_hash, plan, rpm, rpd, timezone, created_at, updated_at, approved_at, admin, max_webhooks,
	key_reminder_emails_off, webhook_failing_emails_off, unverified_since`

func scanUser(s scanner) (*ams.User, error) {
	var u ams.User
	var created, updated int64
	var approved, maxWebhooks, unverified *int64
	if err := s.Scan(&u.ID, &u.Email, &u.PasswordHash, &u.Plan, &u.RPM, &u.RPD, &u.Timezone, &created, &updated, &approved, &u.Admin,
		&maxWebhooks, &u.KeyReminderEmailsOff, &u.WebhookFailingEmailsOff, &unverified); err != nil {
		return nil, err
	}
	if maxWebhooks != nil {
		u.MaxWebhooks = int(*maxWebhooks)
	}
	u.CreatedAt, u.UpdatedAt, u.ApprovedAt = FromMS(created), FromMS(updated), fromNullMS(approved)
	u.UnverifiedSince = fromNullMS(unverified)
	return &u, nil
}

// CreateUser stores u. The e-mail is stored lower-cased, so it is compared
// case-insensitively; ECONFLICT if it is taken.
func (q *Queries) CreateUser(ctx context.Context, u *ams.User) error {
	_, err := q.w.Exec(ctx, `INSERT INTO users (`+userCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		u.ID, strings.ToLower(u.Email), u.PasswordHash, string(u.Plan), u.RPM, u.RPD, u.Timezone, MS(u.CreatedAt), MS(u.UpdatedAt),
		nullMS(u.ApprovedAt), u.Admin, nullCap(u.MaxWebhooks), u.KeyReminderEmailsOff, u.WebhookFailingEmailsOff, nullMS(u.UnverifiedSince))
	if q.isUnique(err) {
		return ams.Errorf(ams.ECONFLICT, "email_taken", "A user with e-mail %s already exists.", u.Email)
	}
	if err != nil {
		return q.fail("insert user", err)
	}
	return nil
}

// FindUser returns the user with id; ENOTFOUND if there is none. In a
// transaction it locks the row against other writers of the user (FOR
// NO KEY UPDATE), not against the rows that refer to it: a transaction
// that inserts an event or a job of the user holds its key share, and a
// FOR UPDATE here waited for it while holding what that transaction
// needed next (a webhook's row, in an attempt's record: 40P01 with a
// fan-out).
func (q *Queries) FindUser(ctx context.Context, id string) (*ams.User, error) {
	return findOne(ctx, q, scanUser, "user", id, `SELECT `+userCols+` FROM users WHERE id = $1`+q.lock("FOR NO KEY UPDATE"), id)
}

// FindUserByEmail returns the user with the e-mail; ENOTFOUND if none.
func (q *Queries) FindUserByEmail(ctx context.Context, email string) (*ams.User, error) {
	email = strings.ToLower(email)
	return findOne(ctx, q, scanUser, "user", email, `SELECT `+userCols+` FROM users WHERE email = $1`, email)
}

// UpdateUser changes the fields set in upd and returns the user;
// ENOTFOUND if there is none. It is one UPDATE … RETURNING: the fields not
// set keep their stored values, so concurrent updates of different fields
// from several processes are not lost.
func (q *Queries) UpdateUser(ctx context.Context, id string, upd ams.UserUpdate, now time.Time) (*ams.User, error) {
	var plan *string
	if upd.Plan != nil {
		p := string(*upd.Plan)
		plan = &p
	}
	u, err := scanUser(q.w.QueryRow(ctx, `UPDATE users SET plan = coalesce($2, plan), rpm = coalesce($3, rpm),
		rpd = coalesce($4, rpd), timezone = coalesce($5, timezone), password_hash = coalesce($6, password_hash), updated_at = $7,
		approved_at = coalesce(approved_at, $8), admin = coalesce($9, admin),
		max_webhooks = CASE WHEN CAST($10 AS BIGINT) IS NULL THEN max_webhooks WHEN CAST($10 AS BIGINT) = 0 THEN NULL ELSE CAST($10 AS BIGINT) END,
		key_reminder_emails_off = coalesce($11, key_reminder_emails_off), webhook_failing_emails_off = coalesce($12, webhook_failing_emails_off)
		WHERE id = $1 RETURNING `+userCols, id, plan, upd.RPM, upd.RPD, upd.Timezone, upd.PasswordHash, MS(now), nullMS(upd.ApprovedAt), upd.Admin,
		upd.MaxWebhooks, upd.KeyReminderEmailsOff, upd.WebhookFailingEmailsOff))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("user", id)
	}
	if err != nil {
		return nil, q.fail("update user", err)
	}
	q.authChanged()
	return u, nil
}

// nullCap stores a per-account cap: 0 (the server's default) is NULL.
func nullCap(n int) *int64 {
	if n <= 0 {
		return nil
	}
	v := int64(n)
	return &v
}

// ListUsers returns up to limit accounts in order of creation after the
// account with id after, and whether there are more.
func (q *Queries) ListUsers(ctx context.Context, after string, limit int) ([]*ams.User, bool, error) {
	query := `SELECT ` + userCols + ` FROM users ORDER BY seq LIMIT $1`
	args := []any{limit + 1}
	if after != "" {
		query = `SELECT ` + userCols + ` FROM users WHERE seq > (SELECT seq FROM users WHERE id = $2) ORDER BY seq LIMIT $1`
		args = append(args, after)
	}
	us, err := collect(ctx, q.r, "users", scanUser, query, args...)
	if err != nil {
		return nil, false, err
	}
	if len(us) > limit {
		return us[:limit], true, nil
	}
	return us, false, nil
}

// ListWaitlist returns up to limit accounts that are not approved, oldest
// first, and whether there are more.
func (q *Queries) ListWaitlist(ctx context.Context, limit int) ([]*ams.User, bool, error) {
	us, err := collect(ctx, q.r, "waitlist", scanUser, `SELECT `+userCols+` FROM users WHERE approved_at IS NULL ORDER BY seq LIMIT $1`, limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(us) > limit {
		return us[:limit], true, nil
	}
	return us, false, nil
}
