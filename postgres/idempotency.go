package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/amsdev/ams"
	"github.com/jackc/pgx/v5"
)

// BeginIdempotent claims (user, key) for a new request, or returns the
// record a previous request left, if it is younger than ams.IdempotencyTTL
// (or, while still running, than ams.IdempotencyAbandoned).
//
// The claim is one INSERT … ON CONFLICT that also replaces an expired
// record: of several requests with one key, in any processes, exactly one
// inserts; PostgreSQL makes the others wait for its commit and see its
// row. Those then read the record; should it vanish in between (its
// request failed and released it), they try again.
func (db *DB) BeginIdempotent(ctx context.Context, rec *ams.IdempotencyRecord) (*ams.IdempotencyRecord, error) {
	for range 5 {
		var claimed bool
		err := db.pool.QueryRow(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, done, status, header, body, created_at)
			VALUES ($1, $2, $3, false, 0, '{}', NULL, $4)
			ON CONFLICT (user_id, key) DO UPDATE SET request_hash = excluded.request_hash, done = false, status = 0,
				header = '{}', body = NULL, created_at = excluded.created_at
			WHERE idempotency_keys.created_at <= $5 OR (NOT idempotency_keys.done AND idempotency_keys.created_at <= $6)
			RETURNING true`, rec.UserID, rec.Key, rec.RequestHash, ms(rec.CreatedAt), ms(rec.CreatedAt.Add(-ams.IdempotencyTTL)),
			ms(rec.CreatedAt.Add(-ams.IdempotencyAbandoned))).Scan(&claimed)
		if err == nil {
			return nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fail("insert idempotency key", err)
		}
		old := &ams.IdempotencyRecord{UserID: rec.UserID, Key: rec.Key}
		var header []byte
		var created int64
		err = db.pool.QueryRow(ctx, `SELECT request_hash, done, status, header, body, created_at FROM idempotency_keys
			WHERE user_id = $1 AND key = $2`, rec.UserID, rec.Key).Scan(&old.RequestHash, &old.Done, &old.Status, &header, &old.Body, &created)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released meanwhile: claim it
		}
		if err != nil {
			return nil, fmt.Errorf("find idempotency key: %w", err)
		}
		old.CreatedAt = fromMS(created)
		if err := json.Unmarshal(header, &old.Header); err != nil {
			return nil, fmt.Errorf("decode idempotent header: %w", err)
		}
		return old, nil
	}
	return nil, errors.New("claim idempotency key: the key keeps changing hands")
}

// FinishIdempotent stores the response of the request that claimed the key.
func (db *DB) FinishIdempotent(ctx context.Context, rec *ams.IdempotencyRecord) error {
	header, err := json.Marshal(rec.Header)
	if err != nil {
		return fmt.Errorf("encode idempotent header: %w", err)
	}
	_, err = db.pool.Exec(ctx, `UPDATE idempotency_keys SET done = true, status = $1, header = $2, body = $3
		WHERE user_id = $4 AND key = $5 AND request_hash = $6`, rec.Status, header, rec.Body, rec.UserID, rec.Key, rec.RequestHash)
	if err != nil {
		return fail("finish idempotency key", err)
	}
	return nil
}

// ReleaseIdempotent forgets a key whose request did not finish, so that the
// client may retry it.
func (db *DB) ReleaseIdempotent(ctx context.Context, userID, key string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND NOT done`, userID, key); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
