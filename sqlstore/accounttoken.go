package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/amsdev/ams"
)

const accountTokenCols = `hash, user_id, purpose, email, created_at, expires_at, used_at`

func scanAccountToken(s scanner) (*ams.AccountToken, error) {
	var t ams.AccountToken
	var created, expires int64
	var used *int64
	if err := s.Scan(&t.Hash, &t.UserID, &t.Purpose, &t.Email, &created, &expires, &used); err != nil {
		return nil, err
	}
	t.CreatedAt, t.ExpiresAt, t.UsedAt = FromMS(created), FromMS(expires), fromNullMS(used)
	return &t, nil
}

// IssueAccountToken stores t and queues e in one transaction, unless the
// account has max tokens of the purpose created after since or e's
// recipient has reached the cap of its kind. The account's row is locked
// while counting, so that concurrent requests cannot both pass the cap.
func (q *Queries) IssueAccountToken(ctx context.Context, t *ams.AccountToken, e *ams.Email, since time.Time, max int) (bool, error) {
	issued := false
	err := q.inTx(ctx, func(q *Queries) error {
		issued = false // a retried transaction starts afresh
		var id string
		err := q.r.QueryRow(ctx, `SELECT id FROM users WHERE id = $1`+q.lock("FOR NO KEY UPDATE"), t.UserID).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return ams.NotFound("user", t.UserID)
		} else if err != nil {
			return q.fail("lock user", err)
		}
		var n int
		if err := q.r.QueryRow(ctx, `SELECT count(*) FROM account_tokens WHERE user_id = $1 AND purpose = $2 AND created_at > $3`,
			t.UserID, string(t.Purpose), MS(since)).Scan(&n); err != nil {
			return q.fail("count account tokens", err)
		}
		if n >= max {
			return nil
		}
		if capped, err := q.emailCapped(ctx, e, t.CreatedAt); err != nil || capped {
			return err
		}
		if _, err := q.exec(ctx, "insert account token", `INSERT INTO account_tokens (`+accountTokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			t.Hash, t.UserID, string(t.Purpose), t.Email, MS(t.CreatedAt), MS(t.ExpiresAt), nullMS(t.UsedAt)); err != nil {
			return err
		}
		if err := q.insertEmail(ctx, e, t.CreatedAt); err != nil {
			return err
		}
		issued = true
		return nil
	})
	return issued, err
}

// FindAccountToken returns the token of purpose with the hash.
func (q *Queries) FindAccountToken(ctx context.Context, hash string, purpose ams.TokenPurpose) (*ams.AccountToken, error) {
	return findOne(ctx, q, scanAccountToken, "account token", "", `SELECT `+accountTokenCols+` FROM account_tokens WHERE hash = $1 AND purpose = $2`,
		hash, string(purpose))
}

// useToken marks the usable token of purpose with the hash used at now and
// returns it; ENOTFOUND when there is none (unknown, used or expired).
func (q *Queries) useToken(ctx context.Context, hash string, purpose ams.TokenPurpose, now time.Time) (*ams.AccountToken, error) {
	t, err := scanAccountToken(q.w.QueryRow(ctx, `UPDATE account_tokens SET used_at = $1
		WHERE hash = $2 AND purpose = $3 AND used_at IS NULL AND expires_at > $1 RETURNING `+accountTokenCols, MS(now), hash, string(purpose)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.Errorf(ams.ENOTFOUND, "token_invalid", "This link is not valid: it was used already, it has expired, or it was copied incompletely.")
	}
	if err != nil {
		return nil, q.fail("use account token", err)
	}
	return t, nil
}

// ResetPassword uses a password-reset token, sets the password, uses the
// account's other reset tokens and ends its login sessions, together; the
// address the link was sent to is verified by it too.
func (q *Queries) ResetPassword(ctx context.Context, hash, passwordHash string, now time.Time) (*ams.User, error) {
	var u *ams.User
	err := q.inTx(ctx, func(q *Queries) error {
		t, err := q.useToken(ctx, hash, ams.TokenPasswordReset, now)
		if err != nil {
			return err
		}
		// The link reached the address: it is verified too.
		if _, err := q.exec(ctx, "verify e-mail", `UPDATE users SET unverified_since = NULL WHERE id = $1 AND email = $2`, t.UserID, t.Email); err != nil {
			return err
		}
		if u, err = q.UpdateUser(ctx, t.UserID, ams.UserUpdate{PasswordHash: &passwordHash}, now); err != nil {
			return err
		}
		if _, err := q.exec(ctx, "use other reset tokens", `UPDATE account_tokens SET used_at = $1
			WHERE user_id = $2 AND purpose = $3 AND used_at IS NULL`, MS(now), t.UserID, string(ams.TokenPasswordReset)); err != nil {
			return err
		}
		_, err = q.exec(ctx, "end login sessions", `DELETE FROM login_sessions WHERE user_id = $1`, t.UserID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// VerifyEmail uses a verification token and marks the account verified
// when its address is still the one the token was sent to.
func (q *Queries) VerifyEmail(ctx context.Context, hash string, now time.Time) (*ams.User, error) {
	var u *ams.User
	err := q.inTx(ctx, func(q *Queries) error {
		t, err := q.useToken(ctx, hash, ams.TokenEmailVerification, now)
		if err != nil {
			return err
		}
		if _, err := q.exec(ctx, "verify e-mail", `UPDATE users SET unverified_since = NULL, updated_at = $1
			WHERE id = $2 AND email = $3 AND unverified_since IS NOT NULL`, MS(now), t.UserID, t.Email); err != nil {
			return err
		}
		u, err = q.FindUser(ctx, t.UserID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}
