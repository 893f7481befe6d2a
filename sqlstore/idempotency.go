package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/seal"
)

// BeginIdempotent claims (user, key) for a new request, or returns the
// record a previous request left, if it is younger than ams.IdempotencyTTL
// (or, while still running, than ams.IdempotencyAbandoned).
//
// The claim is one INSERT … ON CONFLICT that also replaces an expired
// record: of several requests with one key, in any processes, exactly one
// inserts; the others wait for its commit and see its row. Those then read
// the record; should it vanish in between (its request failed and
// released it), they try again.
func (q *Queries) BeginIdempotent(ctx context.Context, rec *ams.IdempotencyRecord) (*ams.IdempotencyRecord, error) {
	for range 5 {
		var claimed bool
		err := q.w.QueryRow(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, done, status, header, body, created_at)
			VALUES ($1, $2, $3, FALSE, 0, '{}', NULL, $4)
			ON CONFLICT (user_id, key) DO UPDATE SET request_hash = excluded.request_hash, done = FALSE, status = 0,
				header = '{}', body = NULL, created_at = excluded.created_at
			WHERE idempotency_keys.created_at <= $5 OR (NOT idempotency_keys.done AND idempotency_keys.created_at <= $6)
			RETURNING TRUE`, rec.UserID, rec.Key, rec.RequestHash, MS(rec.CreatedAt), MS(rec.CreatedAt.Add(-ams.IdempotencyTTL)),
			MS(rec.CreatedAt.Add(-ams.IdempotencyAbandoned))).Scan(&claimed)
		if err == nil {
			return nil, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, q.fail("insert idempotency key", err)
		}
		old := &ams.IdempotencyRecord{UserID: rec.UserID, Key: rec.Key}
		var created int64
		err = q.w.QueryRow(ctx, `SELECT request_hash, done, body, created_at FROM idempotency_keys
			WHERE user_id = $1 AND key = $2`, rec.UserID, rec.Key).Scan(&old.RequestHash, &old.Done, &old.Response, &created)
		if errors.Is(err, sql.ErrNoRows) {
			continue // released meanwhile: claim it
		}
		if err != nil {
			return nil, q.fail("find idempotency key", err)
		}
		old.CreatedAt = FromMS(created)
		old.Response = q.s.openAnswer(old.UserID, old.Key, old.Response)
		return old, nil
	}
	return nil, errors.New("claim idempotency key: the key keeps changing hands")
}

// FinishIdempotent stores the response of the request that claimed the
// key. The response goes in the body column; the status and header
// columns, which the caller's own encoding made redundant, keep their
// defaults (docs/operations.md, rolling upgrades).
func (q *Queries) FinishIdempotent(ctx context.Context, rec *ams.IdempotencyRecord) error {
	var body any // NULL without an answer
	if rec.Response != nil {
		body = q.s.sealAnswer(rec.UserID, rec.Key, rec.Response)
	}
	_, err := q.exec(ctx, "finish idempotency key", `UPDATE idempotency_keys SET done = TRUE, body = $1
		WHERE user_id = $2 AND key = $3 AND request_hash = $4`, body, rec.UserID, rec.Key, rec.RequestHash)
	return err
}

// Answers kept with idempotency keys are sealed at rest with the store's
// key (internal/seal), bound to their account and key: they may show a
// secret once (a new API key, an OAuth client's secret, a calendar feed's
// URL), which a retry with the key replays within ams.IdempotencyTTL.

// answerAAD is what a kept answer is bound to.
func answerAAD(userID, key string) string { return "idempotency:" + userID + ":" + key }

// sealAnswer seals an answer to keep.
func (s *Store) sealAnswer(userID, key string, answer []byte) []byte {
	return []byte(s.sealer.Seal(string(answer), answerAAD(userID, key)))
}

// openAnswer opens a kept answer; one stored before answers were sealed
// is returned as it is. One that does not open (the store was imported
// under another key) is lost: nil, as if its process had died before
// keeping it, so that a retry is told so (idempotency_key_answer_lost).
func (s *Store) openAnswer(userID, key string, body []byte) []byte {
	if body == nil || !seal.IsSealed(body) {
		return body
	}
	plain, err := s.sealer.Open(string(body), answerAAD(userID, key))
	if err != nil {
		return nil
	}
	return []byte(plain)
}

// ReleaseIdempotent forgets a key whose request did not finish, or whose
// answer is not kept, so that the client may retry it. A key with a
// stored answer stays.
func (q *Queries) ReleaseIdempotent(ctx context.Context, userID, key string) error {
	_, err := q.exec(ctx, "release idempotency key", `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2
		AND (NOT done OR body IS NULL)`, userID, key)
	return err
}
