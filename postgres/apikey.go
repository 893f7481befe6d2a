package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
	"github.com/jackc/pgx/v5"
)

func readKey(s scanner) (*ams.APIKey, error) {
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
	k.CreatedAt = fromMS(created)
	k.LastUsedAt, k.ExpiresAt, k.RevokedAt = fromNullMS(used), fromNullMS(expires), fromNullMS(revoked)
	return k, nil
}

// CreateKey stores k (with its hash, never its secret).
func (db *DB) CreateKey(ctx context.Context, k *ams.APIKey) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO api_keys (id, user_id, name, hint, hash, permissions, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		k.ID, k.UserID, k.Name, k.Hint, k.Hash, k.Permissions.String(), ms(k.CreatedAt), nullMS(k.ExpiresAt))
	if err != nil {
		return fail("insert api key", err)
	}
	return nil
}

// ListKeys returns the user's keys, newest first, revoked ones included.
func (db *DB) ListKeys(ctx context.Context, userID string) ([]*ams.APIKey, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+sqlrow.KeyCols+` FROM api_keys k WHERE k.user_id = $1 ORDER BY k.seq DESC`, userID)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	defer rows.Close()
	var out []*ams.APIKey
	for rows.Next() {
		k, err := readKey(rows)
		if err != nil {
			return nil, fmt.Errorf("scan api key: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// FindKey returns the key with id; ENOTFOUND if none.
func (db *DB) FindKey(ctx context.Context, id string) (*ams.APIKey, error) {
	k, err := readKey(db.pool.QueryRow(ctx, `SELECT `+sqlrow.KeyCols+` FROM api_keys k WHERE k.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("api_key", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find api key: %w", err)
	}
	return k, nil
}

// RevokeKey marks the key revoked (keeping the first revocation time) and
// returns it. An empty userID matches any user (the operator's CLI);
// otherwise a key of another user is ENOTFOUND.
func (db *DB) RevokeKey(ctx context.Context, userID, id string, now time.Time) (*ams.APIKey, error) {
	k, err := readKey(db.pool.QueryRow(ctx, `UPDATE api_keys k SET revoked_at = coalesce(k.revoked_at, $1)
		WHERE k.id = $2 AND ($3 = '' OR k.user_id = $3) RETURNING `+sqlrow.KeyCols, ms(now), id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("api_key", id)
	}
	if err != nil {
		return nil, fmt.Errorf("revoke api key: %w", err)
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
func (db *DB) AuthenticateKey(ctx context.Context, hash string) (*ams.APIKey, *ams.User, error) {
	var k ams.APIKey
	var u ams.User
	var perms string
	var expires, revoked *int64
	err := db.pool.QueryRow(ctx, authQuery, hash).Scan(&k.ID, &perms, &expires, &revoked, &u.ID, &u.Email, &u.Plan, &u.RPM, &u.RPD, &u.Timezone)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, ams.NotFound("api_key", "")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("authenticate api key: %w", err)
	}
	if k.Permissions, err = ams.ParsePermissions(perms); err != nil {
		return nil, nil, fmt.Errorf("stored permissions of %s: %w", k.ID, err)
	}
	k.Object, k.UserID, k.Hash = "api_key", u.ID, hash
	k.ExpiresAt, k.RevokedAt = fromNullMS(expires), fromNullMS(revoked)
	return &k, &u, nil
}

// TouchKey records that the key was used at now.
func (db *DB) TouchKey(ctx context.Context, id string, now time.Time) error {
	if _, err := db.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = $1 WHERE id = $2`, ms(now), id); err != nil {
		return fmt.Errorf("touch api key: %w", err)
	}
	return nil
}
