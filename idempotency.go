package ams

import (
	"context"
	"time"
)

// IdempotencyRecord is the stored outcome of a request made with an
// Idempotency-Key.
type IdempotencyRecord struct {
	UserID      string
	Key         string
	RequestHash string // hash of method, path and body
	Done        bool   // false while the first request is still running
	Status      int
	Header      map[string]string
	Body        []byte
	CreatedAt   time.Time
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
