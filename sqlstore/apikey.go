package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/amsdev/ams"
)

const keyCols = `id, user_id, name, hint, hash, permissions, created_at, last_used_at, expires_at, revoked_at`

func scanKey(s scanner) (*ams.APIKey, error) {
	k := &ams.APIKey{Object: "api_key"}
	var perms string
	var created int64
	var used, expires, revoked *int64
	if err := s.Scan(&k.ID, &k.UserID, &k.Name, &k.Hint, &k.Hash, &perms, &created, &used, &expires, &revoked); err != nil {
		return nil, err
	}
	ps, err := ams.ParsePermissions(perms)
	if err != nil {
		return nil, fmt.Errorf("stored permissions of %s: %w", k.ID, err)
	}
	k.Permissions = ps
	k.CreatedAt = FromMS(created)
	k.LastUsedAt, k.ExpiresAt, k.RevokedAt = fromNullMS(used), fromNullMS(expires), fromNullMS(revoked)
	return k, nil
}

// CreateKey stores k (with its hash, never its secret).
func (q *Queries) CreateKey(ctx context.Context, k *ams.APIKey) error {
	_, err := q.exec(ctx, "insert api key", `INSERT INTO api_keys (id, user_id, name, hint, hash, permissions, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		k.ID, k.UserID, k.Name, k.Hint, k.Hash, k.Permissions.String(), MS(k.CreatedAt), nullMS(k.ExpiresAt))
	return err
}

// ListKeys returns the user's keys, newest first, revoked ones included.
func (q *Queries) ListKeys(ctx context.Context, userID string) ([]*ams.APIKey, error) {
	return collect(ctx, q.r, "api keys", scanKey, `SELECT `+keyCols+` FROM api_keys WHERE user_id = $1 ORDER BY seq DESC`, userID)
}

// FindKey returns the key with id; ENOTFOUND if none.
func (q *Queries) FindKey(ctx context.Context, id string) (*ams.APIKey, error) {
	return findOne(ctx, q, scanKey, "api_key", id, `SELECT `+keyCols+` FROM api_keys WHERE id = $1`, id)
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
