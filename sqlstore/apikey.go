package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/amsdev/ams"
)

const keyCols = `id, user_id, name, hint, hash, permissions, created_at, last_used_at, expires_at, revoked_at, oauth_client_id, oauth_grant_id`

func scanKey(s scanner) (*ams.APIKey, error) {
	k := &ams.APIKey{Object: "api_key"}
	var perms string
	var created int64
	var used, expires, revoked *int64
	var client, grant *string
	if err := s.Scan(&k.ID, &k.UserID, &k.Name, &k.Hint, &k.Hash, &perms, &created, &used, &expires, &revoked, &client, &grant); err != nil {
		return nil, err
	}
	k.OAuthClientID, k.OAuthGrantID = deref(client), deref(grant)
	ps, err := ams.ParsePermissions(perms)
	if err != nil {
		return nil, fmt.Errorf("stored permissions of %s: %w", k.ID, err)
	}
	k.Permissions = ps
	k.CreatedAt = FromMS(created)
	k.LastUsedAt, k.ExpiresAt, k.RevokedAt = fromNullMS(used), fromNullMS(expires), fromNullMS(revoked)
	return k, nil
}

// CreateKey stores k (with its hash, never its secret). A key an OAuth
// grant makes (k.OAuthGrantID) is stored only while the grant holds a
// live token (an active access or refresh token), which the insert's
// transaction locks: a revocation of the grant either came first (and
// the key is refused, EFORBIDDEN grant_revoked) or waits for this
// transaction and then revokes the key with the grant's others
// (revokeGrantKeys).
func (q *Queries) CreateKey(ctx context.Context, k *ams.APIKey) error {
	return q.inTx(ctx, func(q *Queries) error {
		if k.OAuthGrantID != "" {
			live, err := collect(ctx, q.w, "oauth grant", func(s scanner) (string, error) {
				var sig string
				return sig, s.Scan(&sig)
			}, `SELECT signature FROM oauth_tokens WHERE request_id = $1 AND user_id = $2 AND kind IN ('access', 'refresh') AND active`+
				q.lock("FOR SHARE"), k.OAuthGrantID, k.UserID)
			if err != nil {
				return err
			}
			if len(live) == 0 {
				return ams.Errorf(ams.EFORBIDDEN, "grant_revoked",
					"The OAuth grant of this credential has been revoked: it can no longer create keys.")
			}
		}
		_, err := q.exec(ctx, "insert api key", `INSERT INTO api_keys (id, user_id, name, hint, hash, permissions, created_at, expires_at,
				oauth_client_id, oauth_grant_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			k.ID, k.UserID, k.Name, k.Hint, k.Hash, k.Permissions.String(), MS(k.CreatedAt), nullMS(k.ExpiresAt),
			nullText(k.OAuthClientID), nullText(k.OAuthGrantID))
		return err
	})
}

// revokeGrantKeys revokes, at now, the live keys that OAuth grants made
// and that cond (a condition on api_keys with its args) selects, and
// emits api_key.revoked for each, in q's transaction. The revocation
// moves the authentication generation (migration 0019's trigger), so no
// process serves these keys from its cache past the commit.
func (q *Queries) revokeGrantKeys(ctx context.Context, now time.Time, cond string, args ...any) error {
	n := len(args)
	keys, err := collect(ctx, q.w, "revoke grant keys", scanKey, `UPDATE api_keys SET revoked_at = $`+fmt.Sprint(n+1)+`
		WHERE `+cond+` AND oauth_grant_id IS NOT NULL AND revoked_at IS NULL RETURNING `+keyCols, append(args, MS(now))...)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	events := make([]*ams.Event, len(keys))
	for i, k := range keys {
		events[i] = ams.APIKeyEvent(ams.EventAPIKeyRevoked, k, now)
	}
	q.authChanged()
	return q.Emit(ctx, events...)
}

// ListKeys returns the user's keys, newest first, revoked ones included.
func (q *Queries) ListKeys(ctx context.Context, userID string) ([]*ams.APIKey, error) {
	return collect(ctx, q.r, "api keys", scanKey, `SELECT `+keyCols+` FROM api_keys WHERE user_id = $1 ORDER BY seq DESC`, userID)
}

// ListKeyPage returns a page of the user's keys, revoked ones included.
func (q *Queries) ListKeyPage(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.APIKey], error) {
	return list(ctx, q, keyCols, "api_keys", where("user_id = $1", userID), p, scanKey)
}

// FindKey returns the key with id; ENOTFOUND if none. In a transaction it
// locks the row.
func (q *Queries) FindKey(ctx context.Context, id string) (*ams.APIKey, error) {
	return findOne(ctx, q, scanKey, "api_key", id, `SELECT `+keyCols+` FROM api_keys WHERE id = $1`+q.lock("FOR UPDATE"), id)
}

// RevokeKey marks the key revoked (keeping the first revocation time) and
// returns it. An empty userID matches any user (the operator's CLI);
// otherwise a key of another user is ENOTFOUND.
func (q *Queries) RevokeKey(ctx context.Context, userID, id string, now time.Time) (*ams.APIKey, error) {
	k, err := scanKey(q.w.QueryRow(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1)
		WHERE id = $2 AND ($3 = '' OR user_id = $3) RETURNING `+keyCols, MS(now), id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("api_key", id)
	}
	if err != nil {
		return nil, q.fail("revoke api key", err)
	}
	q.authChanged()
	return k, nil
}

// authQuery reads what authenticating a request needs, and no more: this
// query runs on every API request.
const authQuery = `SELECT k.id, k.permissions, k.expires_at, k.revoked_at, u.id, u.email, u.plan, u.rpm, u.rpd, u.timezone
	FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.hash = $1`

// AuthenticateKey finds the key whose secret hashes to hash, with its
// user; ENOTFOUND if there is none. The key has the fields authentication
// needs: id, user id, permissions, expiry and revocation; the user has id,
// e-mail, plan, limits and time zone.
func (q *Queries) AuthenticateKey(ctx context.Context, hash string) (*ams.APIKey, *ams.User, error) {
	var k ams.APIKey
	var u ams.User
	var perms string
	var expires, revoked *int64
	err := q.r.QueryRow(ctx, authQuery, hash).Scan(&k.ID, &perms, &expires, &revoked, &u.ID, &u.Email, &u.Plan, &u.RPM, &u.RPD, &u.Timezone)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, ams.NotFound("api_key", "")
	}
	if err != nil {
		return nil, nil, q.fail("authenticate api key", err)
	}
	if k.Permissions, err = ams.ParsePermissions(perms); err != nil {
		return nil, nil, fmt.Errorf("stored permissions of %s: %w", k.ID, err)
	}
	k.Object, k.UserID, k.Hash = "api_key", u.ID, hash
	k.ExpiresAt, k.RevokedAt = fromNullMS(expires), fromNullMS(revoked)
	return &k, &u, nil
}

// TouchKey records that the key was used at now.
func (q *Queries) TouchKey(ctx context.Context, id string, now time.Time) error {
	_, err := q.exec(ctx, "touch api key", `UPDATE api_keys SET last_used_at = $1 WHERE id = $2`, MS(now), id)
	return err
}

// keyReminderCols are the columns recording each reminder reason. The
// reason picks one of them; no other text reaches the query.
var keyReminderCols = map[ams.KeyReminderReason]string{
	ams.KeyReminderExpiry: "expiry_reminded_at",
	ams.KeyReminderAge:    "age_reminded_at",
}

// dueRemindersQuery: $1 now, $2 now + the lead, $3 the rotation age, $4
// the limit. An account that turned the reminders off
// (key_reminder_emails_off) has none due. An age reminder is not due for a key that expires by the time
// it turns the rotation age: the expiry reminder covers it.
const dueRemindersQuery = `SELECT * FROM (
	SELECT k.seq, 'expiry' AS reason, k.expires_at AS due_at, k.id, k.user_id, k.name, k.hint, k.permissions, k.created_at, k.expires_at, u.email, u.timezone
		FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.revoked_at IS NULL AND k.expiry_reminded_at IS NULL AND k.expires_at > $1 AND k.expires_at <= $2
			AND NOT u.key_reminder_emails_off
	UNION ALL
	SELECT k.seq, 'age' AS reason, k.created_at + $3 AS due_at, k.id, k.user_id, k.name, k.hint, k.permissions, k.created_at, k.expires_at, u.email, u.timezone
		FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.revoked_at IS NULL AND k.age_reminded_at IS NULL AND k.created_at + $3 <= $2 AND NOT u.key_reminder_emails_off
			AND (k.expires_at IS NULL OR (k.expires_at > $1 AND k.expires_at > k.created_at + $3))
) due ORDER BY seq, reason LIMIT $4`

// DueKeyReminders returns the reminders due at now, oldest key first.
func (q *Queries) DueKeyReminders(ctx context.Context, now time.Time, limit int) ([]*ams.KeyReminder, error) {
	age := ams.KeyRotationAge.Milliseconds()
	return collect(ctx, q.r, "due key reminders", func(s scanner) (*ams.KeyReminder, error) {
		r := &ams.KeyReminder{Key: &ams.APIKey{Object: "api_key"}, User: &ams.User{}}
		var seq, at, created int64
		var reason, perms string
		var expires *int64
		if err := s.Scan(&seq, &reason, &at, &r.Key.ID, &r.Key.UserID, &r.Key.Name, &r.Key.Hint, &perms, &created, &expires,
			&r.User.Email, &r.User.Timezone); err != nil {
			return nil, err
		}
		ps, err := ams.ParsePermissions(perms)
		if err != nil {
			return nil, fmt.Errorf("stored permissions of %s: %w", r.Key.ID, err)
		}
		r.Key.Permissions, r.Key.CreatedAt, r.Key.ExpiresAt = ps, FromMS(created), fromNullMS(expires)
		r.User.ID, r.Reason, r.At = r.Key.UserID, ams.KeyReminderReason(reason), FromMS(at)
		return r, nil
	}, dueRemindersQuery, MS(now), MS(now.Add(ams.KeyReminderLead)), age, limit)
}

// RemindKey marks the key reminded for reason and queues e, in one
// transaction; the conditional UPDATE lets one caller of several do it.
func (q *Queries) RemindKey(ctx context.Context, keyID string, reason ams.KeyReminderReason, e *ams.Email, now time.Time) (bool, error) {
	col, ok := keyReminderCols[reason]
	if !ok {
		return false, fmt.Errorf("remind key %s: unknown reason %q", keyID, reason)
	}
	done := false
	err := q.inTx(ctx, func(q *Queries) error {
		done = false // a retried transaction starts afresh
		n, err := q.exec(ctx, "mark key reminded", `UPDATE api_keys SET `+col+` = $1
			WHERE id = $2 AND `+col+` IS NULL AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)`, MS(now), keyID)
		if err != nil || n != 1 {
			return err
		}
		// Over the recipient's cap the reminder is dropped, not retried.
		done, err = q.queueEmail(ctx, e, now)
		return err
	})
	if err != nil {
		return false, err
	}
	return done, nil
}

// CountActiveKeys counts the user's keys neither revoked nor expired at
// now, after locking the user's row (lockUser) in a transaction.
func (q *Queries) CountActiveKeys(ctx context.Context, userID string, now time.Time) (int, error) {
	if err := q.lockUser(ctx, userID); err != nil {
		return 0, err
	}
	var n int
	if err := q.r.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL
		AND (expires_at IS NULL OR expires_at > $2)`, userID, MS(now)).Scan(&n); err != nil {
		return 0, q.fail("count api keys", err)
	}
	return n, nil
}
