package ams

import (
	"context"
	"time"
)

// IdempotencyRecord is the stored outcome of a request made with an
// idempotency key.
type IdempotencyRecord struct {
	UserID      string
	Key         string
	RequestHash string // hash of what the request asked
	Done        bool   // false while the first request is still running
	// Response is the first request's outcome, encoded by the caller (the
	// HTTP layer keeps the status, headers and body it replays); the store
	// keeps it as it is.
	Response  []byte
	CreatedAt time.Time
}

// IdempotencyTTL is how long an idempotency key is remembered.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyAbandoned is how long a key may stay claimed by a request that
// never finished (its process died) before another request may take it
// over: longer than any request may run.
const IdempotencyAbandoned = 5 * time.Minute

// IdempotencyStore remembers the outcome of requests made with an
// idempotency key. BeginIdempotent stores a running record for (userID,
// key) and returns nil, or returns the record already stored (done or
// still running). Records older than IdempotencyTTL, and running ones
// older than IdempotencyAbandoned, are replaced.
type IdempotencyStore interface {
	BeginIdempotent(ctx context.Context, rec *IdempotencyRecord) (*IdempotencyRecord, error)
	FinishIdempotent(ctx context.Context, rec *IdempotencyRecord) error
	ReleaseIdempotent(ctx context.Context, userID, key string) error
}
