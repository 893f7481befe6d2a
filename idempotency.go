package ams

import (
	"context"
	"sync/atomic"
	"time"
)

// IdempotencyRecord is the stored outcome of a request made with an
// idempotency key.
type IdempotencyRecord struct {
	UserID      string
	Key         string
	RequestHash string // hash of what the request asked
	// Done is false while the first request is still running and its
	// change (if any) not committed; true once it committed (with the
	// change, see IdempotentRequest) or answered.
	Done bool
	// Response is the first request's outcome, encoded by the caller (the
	// HTTP layer keeps the status, headers and body it replays); the store
	// keeps it as it is. nil in a done record: the request committed its
	// change but its answer was not kept (its process died before, or the
	// answer held a secret shown once).
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
//
// ReleaseIdempotent forgets a record that is running or done without an
// answer; a record with its answer stays.
type IdempotencyStore interface {
	BeginIdempotent(ctx context.Context, rec *IdempotencyRecord) (*IdempotencyRecord, error)
	FinishIdempotent(ctx context.Context, rec *IdempotencyRecord) error
	ReleaseIdempotent(ctx context.Context, userID, key string) error
}

// IdempotentRequest is a request made with an Idempotency-Key while it
// runs. The HTTP layer claims the key (BeginIdempotent) and puts the
// request in its context (WithIdempotentRequest); every write transaction
// the store commits in that context marks the key's record done in the
// same transaction (package sqlstore), so the change and the record of
// the key that asked for it commit together: whenever the process dies, a
// retry with the key either finds the change not made (and makes it) or
// finds the record done (and never makes it again). The answer is stored
// after the commit (FinishIdempotent), over the one made in the
// transaction from the change's event or the record its service kept
// (Answer, KeepAnswer), if any; a record done
// without one (the process died in between) answers a retry 409
// idempotency_key_answer_lost.
type IdempotentRequest struct {
	UserID      string
	Key         string
	RequestHash string
	// Answer, when set, returns the answer to store with the key in the
	// transaction of the change, made from v: an event the change emits
	// (*Event, its data the record as the API shows it) or the value a
	// service keeps as its answer (KeepAnswer); nil for a value it does
	// not answer with. A retry after a crash between the commit and the
	// storing of the answer then replays it. The store calls it with each
	// event the transaction emits until one answers, then, when none did,
	// with the value kept.
	Answer    func(v any) []byte
	committed atomic.Bool
	kept      atomic.Pointer[any]
}

// KeepAnswer names v as what the idempotent request of ctx (if any)
// answers: the transaction that commits its change stores the answer
// made from v (IdempotentRequest.Answer) with the key, so v must be
// complete when that transaction commits. A service calls it inside the
// transaction of the change (Store.Update), or just before the write
// that makes it, with the record its caller will show.
func KeepAnswer(ctx context.Context, v any) {
	if r := IdempotentRequestFrom(ctx); r != nil && !r.Committed() && v != nil {
		r.kept.Store(&v)
	}
}

// SecretAnswer is what a service keeps (KeepAnswer) for a change whose
// answer shows a secret once: the record made or changed (an *APIKey, an
// *OAuthClient, an *Integration) and the secret ("" for none, a public
// OAuth client's). The answer, with the secret, is sealed at rest with
// the key (IdempotencyStore).
type SecretAnswer struct {
	Record any
	Secret string
}

// Kept returns the value named by KeepAnswer, or nil.
func (r *IdempotentRequest) Kept() any {
	if p := r.kept.Load(); p != nil {
		return *p
	}
	return nil
}

// Committed reports whether a transaction of the request committed a
// change, and with it the key's record.
func (r *IdempotentRequest) Committed() bool { return r.committed.Load() }

// MarkCommitted records that a transaction of the request committed (the
// store calls it after the commit).
func (r *IdempotentRequest) MarkCommitted() { r.committed.Store(true) }

type idempotentKey struct{}

// WithIdempotentRequest returns ctx carrying r: the store's write
// transactions in it record r's key.
func WithIdempotentRequest(ctx context.Context, r *IdempotentRequest) context.Context {
	return context.WithValue(ctx, idempotentKey{}, r)
}

// IdempotentRequestFrom returns the request ctx carries, or nil.
func IdempotentRequestFrom(ctx context.Context) *IdempotentRequest {
	r, _ := ctx.Value(idempotentKey{}).(*IdempotentRequest)
	return r
}
