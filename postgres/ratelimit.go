package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ratelimit"
)

// RateLimiter is an ams.RateLimiter that keeps its counters in the
// database (table rate_windows), so that every process serving the
// database counts an account's requests together: the 61st request of a
// standard account within 60 seconds is refused whichever process receives
// it. It gives the same decisions as ratelimit.Memory (the ratelimittest
// suite holds both to it).
//
// A request costs one statement: a call of the function rate_take
// (migration 0013), which locks the account's row, applies the rule of
// ratelimit.State to it and returns the row after the request, from which
// the decision is computed here as Memory computes it. Concurrent requests
// of one account queue on the row's lock, and each sees the counts the one
// before left.
//
// The call commits asynchronously (synchronous_commit off, for its own
// transaction only): it does not wait for its WAL record to reach the
// disk, so the account's row lock is held for microseconds instead of a
// WAL flush, and one account's requests do not queue behind each other's
// flushes (docs/benchmarks.md, issue 5). A database crash may forget the
// last fraction of a second of counts, which only lets a few requests more
// through; it never loses data.
type RateLimiter struct {
	db *DB
}

var _ ams.RateLimiter = (*RateLimiter)(nil)

// RateLimiter returns the database's shared rate limiter.
func (db *DB) RateLimiter() *RateLimiter { return &RateLimiter{db: db} }

// Take counts one request of account at now, unless the minute or the day
// window is already full, and reports both windows after the request. The
// error is ctx's if ctx is done before the request is counted, or the
// database's.
func (r *RateLimiter) Take(ctx context.Context, account string, l ams.Limits, now time.Time) (ams.RateDecision, error) {
	if err := ctx.Err(); err != nil {
		return ams.RateDecision{}, err
	}
	minute, day := ratelimit.Slots(now)
	var (
		allowed      bool
		s            ratelimit.State
		mRing, dRing []int32
	)
	err := r.db.pool.QueryRow(ctx, `SELECT * FROM rate_take($1, $2, $3, $4, $5)`,
		account, minute, day, int64(l.PerMinute), int64(l.PerDay)).
		Scan(&allowed, &s.MinuteLast, &mRing, &s.DayLast, &dRing)
	if err != nil {
		return ams.RateDecision{}, fmt.Errorf("rate limit: %w", err)
	}
	if len(mRing) != len(s.Minute) || len(dRing) != len(s.Day) {
		return ams.RateDecision{}, fmt.Errorf("rate limit: rate_take returned rings of %d and %d slots, want %d and %d",
			len(mRing), len(dRing), len(s.Minute), len(s.Day))
	}
	copy(s.Minute[:], mRing)
	copy(s.Day[:], dRing)
	return s.Decision(allowed, l, now), nil
}
