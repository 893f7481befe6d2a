package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/amsdev/ams"
)

// BeginIdempotent claims (user, key) for a new request, or returns the
// record a previous request left, if it is younger than ams.IdempotencyTTL.
func (db *DB) BeginIdempotent(ctx context.Context, rec *ams.IdempotencyRecord) (*ams.IdempotencyRecord, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	old := &ams.IdempotencyRecord{UserID: rec.UserID, Key: rec.Key}
	var header string
	var created int64
	err = tx.QueryRowContext(ctx, `SELECT request_hash, done, status, header, body, created_at FROM idempotency_keys
		WHERE user_id = ? AND key = ?`, rec.UserID, rec.Key).Scan(&old.RequestHash, &old.Done, &old.Status, &header, &old.Body, &created)
	switch {
	case err == nil && rec.CreatedAt.Sub(fromMS(created)) < ams.IdempotencyTTL &&
		(old.Done || rec.CreatedAt.Sub(fromMS(created)) < ams.IdempotencyAbandoned):
		old.CreatedAt = fromMS(created)
		if err := json.Unmarshal([]byte(header), &old.Header); err != nil {
			return nil, fmt.Errorf("decode idempotent header: %w", err)
		}
		return old, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("find idempotency key: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO idempotency_keys (user_id, key, request_hash, done, status, header, body, created_at)
		VALUES (?, ?, ?, 0, 0, '{}', NULL, ?)`, rec.UserID, rec.Key, rec.RequestHash, ms(rec.CreatedAt)); err != nil {
		return nil, fmt.Errorf("insert idempotency key: %w", err)
	}
	return nil, tx.Commit()
}

// FinishIdempotent stores the response of the request that claimed the key.
func (db *DB) FinishIdempotent(ctx context.Context, rec *ams.IdempotencyRecord) error {
	header, err := json.Marshal(rec.Header)
	if err != nil {
		return fmt.Errorf("encode idempotent header: %w", err)
	}
	_, err = db.write.ExecContext(ctx, `UPDATE idempotency_keys SET done = 1, status = ?, header = ?, body = ?
		WHERE user_id = ? AND key = ? AND request_hash = ?`, rec.Status, string(header), rec.Body, rec.UserID, rec.Key, rec.RequestHash)
	if err != nil {
		return fmt.Errorf("finish idempotency key: %w", err)
	}
	return nil
}

// ReleaseIdempotent forgets a key whose request did not finish, so that the
// client may retry it.
func (db *DB) ReleaseIdempotent(ctx context.Context, userID, key string) error {
	if _, err := db.write.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE user_id = ? AND key = ? AND done = 0`, userID, key); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
