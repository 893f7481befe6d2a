package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
)

func keyScanTargets(k *ams.APIKey, perms *string, created *int64, used, expires, revoked *sql.NullInt64) []any {
	return []any{&k.ID, &k.UserID, &k.Name, &k.Hint, &k.Hash, perms, created, used, expires, revoked}
}

func finishKey(k *ams.APIKey, perms string, created int64, used, expires, revoked sql.NullInt64) error {
	ps, err := ams.ParsePermissions(perms)
	if err != nil {
		return fmt.Errorf("stored permissions of %s: %w", k.ID, err)
	}
	k.Object = "api_key"
	k.Permissions = ps
	k.CreatedAt = fromMS(created)
	k.LastUsedAt, k.ExpiresAt, k.RevokedAt = fromNullMS(used), fromNullMS(expires), fromNullMS(revoked)
	return nil
}

func readKey(s scanner, extra ...any) (*ams.APIKey, error) {
	var k ams.APIKey
	var perms string
	var created int64
	var used, expires, revoked sql.NullInt64
	if err := s.Scan(append(keyScanTargets(&k, &perms, &created, &used, &expires, &revoked), extra...)...); err != nil {
		return nil, err
	}
	return &k, finishKey(&k, perms, created, used, expires, revoked)
}

// CreateKey stores k (with its hash, never its secret).
func (db *DB) CreateKey(ctx context.Context, k *ams.APIKey) error {
	_, err := db.write.ExecContext(ctx, `INSERT INTO api_keys (id, user_id, name, hint, hash, permissions, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.UserID, k.Name, k.Hint, k.Hash, k.Permissions.String(), ms(k.CreatedAt), nullMS(k.ExpiresAt))
	if err != nil {
		return fmt.Errorf("insert api key: %w", err)
	}
	return nil
}

// ListKeys returns the user's keys, newest first, revoked ones included.
func (db *DB) ListKeys(ctx context.Context, userID string) ([]*ams.APIKey, error) {
	rows, err := db.rq.QueryContext(ctx, `SELECT `+sqlrow.KeyCols+` FROM api_keys k WHERE k.user_id = ? ORDER BY k.seq DESC`, userID)
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
	k, err := readKey(db.rq.QueryRowContext(ctx, `SELECT `+sqlrow.KeyCols+` FROM api_keys k WHERE k.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("api_key", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find api key: %w", err)
	}
	return k, nil
}

// RevokeKey marks the key revoked (keeping the first revocation time). An
// empty userID matches any user (the operator's CLI); otherwise a key of
// another user is ENOTFOUND.
func (db *DB) RevokeKey(ctx context.Context, userID, id string, now time.Time) (*ams.APIKey, error) {
	cond, args := "id = ?", []any{ms(now), id}
	if userID != "" {
		cond += " AND user_id = ?"
		args = append(args, userID)
	}
	res, err := db.write.ExecContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE `+cond, args...)
	if err != nil {
		return nil, fmt.Errorf("revoke api key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, ams.NotFound("api_key", id)
	}
	return db.FindKeyFresh(ctx, id)
}

// FindKeyFresh reads the key through the write connection, so it sees the
// connection's own latest write.
func (db *DB) FindKeyFresh(ctx context.Context, id string) (*ams.APIKey, error) {
	k, err := readKey(db.write.QueryRowContext(ctx, `SELECT `+sqlrow.KeyCols+` FROM api_keys k WHERE k.id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("find api key: %w", err)
	}
	return k, nil
}

// authQuery reads what authenticating a request needs, and no more: this
// query runs on every API request.
const authQuery = `SELECT k.id, k.permissions, k.expires_at, k.revoked_at, u.id, u.email, u.plan, u.rpm, u.rpd, u.timezone
	FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.hash = ?`

// AuthenticateKey finds the key whose secret hashes to hash, with its
// user. The key has the fields authentication needs: id, user id,
// permissions, expiry and revocation; the user has id, e-mail, plan,
// limits and time zone.
func (db *DB) AuthenticateKey(ctx context.Context, hash string) (*ams.APIKey, *ams.User, error) {
	var k ams.APIKey
	var u ams.User
	var perms string
	var expires, revoked sql.NullInt64
	err := db.rq.QueryRowContext(ctx, authQuery, hash).Scan(&k.ID, &perms, &expires, &revoked, &u.ID, &u.Email, &u.Plan, &u.RPM, &u.RPD, &u.Timezone)
	if errors.Is(err, sql.ErrNoRows) {
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
	if _, err := db.write.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ? WHERE id = ?`, ms(now), id); err != nil {
		return fmt.Errorf("touch api key: %w", err)
	}
	return nil
}
