package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
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
// Counting is one statement: a call of the function rate_take_n
// (migration 0034), which locks the account's row, applies the rule of
// ratelimit.State to n requests at once and returns how many it allowed
// and the row after them, from which each request's decision is computed
// here as Memory computes it. One account's requests are combined: while
// a call for the account is in flight, the requests that arrive wait, and
// the next call counts all of them (the first ones allowed, in order of
// arrival, up to the room left). An account with one request at a time
// pays one round trip per request, as before; a busy one pays one per
// round trip's worth of requests instead of queueing each on the row's
// lock (docs/benchmarks.md, issue 33).
//
// The call commits asynchronously (synchronous_commit off, for its own
// transaction only): it does not wait for its WAL record to reach the
// disk, so the account's row lock is held for microseconds instead of a
// WAL flush (docs/benchmarks.md, issue 5). A database crash may forget
// the last fraction of a second of counts, which only lets a few requests
// more through; it never loses data.
type RateLimiter struct {
	db *DB

	mu       sync.Mutex
	accounts map[string]*rateQueue // accounts with a call in flight

	calls atomic.Int64 // calls of rate_take_n, for tests
}

// rateQueue is one account's requests: a call is in flight for it, and
// waiting are the requests that arrived since, for the next call.
type rateQueue struct {
	waiting []*rateWaiter
}

// rateWaiter is one request of Take. Its wake channel is closed when its
// decision is in (d, err) or when it is to make the next call (lead).
type rateWaiter struct {
	limits      ams.Limits
	now         time.Time
	minute, day int64
	wake        chan struct{}
	lead        bool
	d           ams.RateDecision
	err         error
}

var _ ams.RateLimiter = (*RateLimiter)(nil)

// RateLimiter returns a shared rate limiter of the database. Requests are
// combined within one RateLimiter: a process uses one.
func (db *DB) RateLimiter() *RateLimiter {
	return &RateLimiter{db: db, accounts: make(map[string]*rateQueue)}
}

// rateCallTimeout bounds a call made on behalf of several requests: it
// does not end with the context of the request that makes it.
const rateCallTimeout = 30 * time.Second

// Take counts one request of account at now, unless the minute or the day
// window is already full, and reports both windows after the request. The
// error is ctx's if ctx is done before the request is counted, or the
// database's.
func (r *RateLimiter) Take(ctx context.Context, account string, l ams.Limits, now time.Time) (ams.RateDecision, error) {
	if err := ctx.Err(); err != nil {
		return ams.RateDecision{}, err
	}
	w := &rateWaiter{limits: l, now: now, wake: make(chan struct{})}
	w.minute, w.day = ratelimit.Slots(now)
	r.mu.Lock()
	q, busy := r.accounts[account]
	if !busy {
		// No call in flight: this request makes one, for itself.
		r.accounts[account] = &rateQueue{}
		r.mu.Unlock()
		r.call(account, []*rateWaiter{w})
		return w.d, w.err
	}
	q.waiting = append(q.waiting, w)
	r.mu.Unlock()
	select {
	case <-w.wake:
	case <-ctx.Done():
		r.mu.Lock()
		if i := slices.Index(q.waiting, w); i >= 0 && !w.lead {
			// Not taken by a call yet: leave uncounted.
			q.waiting = slices.Delete(q.waiting, i, i+1)
			r.mu.Unlock()
			return ams.RateDecision{}, ctx.Err()
		}
		r.mu.Unlock()
		// In a call (bounded by rateCallTimeout), or chosen to make the
		// next one, which the requests behind it wait for.
		<-w.wake
	}
	if w.lead {
		r.mu.Lock()
		// The batch: the requests waiting in a row from the first that
		// share its limits and slots (the rest wait for the call after).
		n := 1
		for n < len(q.waiting) && sameBatch(q.waiting[0], q.waiting[n]) {
			n++
		}
		batch := slices.Clone(q.waiting[:n])
		q.waiting = slices.Delete(q.waiting, 0, n)
		r.mu.Unlock()
		r.call(account, batch)
	}
	return w.d, w.err
}

func sameBatch(a, b *rateWaiter) bool {
	return a.limits == b.limits && a.minute == b.minute && a.day == b.day
}

// call counts batch (requests of account, in order, that share their
// limits and slots) in one call of rate_take_n, gives each its decision,
// and hands the account on: to the first request waiting, which makes the
// next call, or to no one.
func (r *RateLimiter) call(account string, batch []*rateWaiter) {
	first := batch[0]
	// The caller's context does not cancel a call made for others too.
	ctx, cancel := context.WithTimeout(context.Background(), rateCallTimeout)
	var (
		granted      int
		s            ratelimit.State
		mRing, dRing []int32
	)
	r.calls.Add(1)
	err := r.db.pool.QueryRow(ctx, `SELECT * FROM rate_take_n($1, $2, $3, $4, $5, $6)`,
		account, first.minute, first.day, int64(first.limits.PerMinute), int64(first.limits.PerDay), len(batch)).
		Scan(&granted, &s.MinuteLast, &mRing, &s.DayLast, &dRing)
	cancel()
	switch {
	case err != nil:
		err = fmt.Errorf("rate limit: %w", err)
	case len(mRing) != len(s.Minute) || len(dRing) != len(s.Day):
		err = fmt.Errorf("rate limit: rate_take_n returned rings of %d and %d slots, want %d and %d",
			len(mRing), len(dRing), len(s.Minute), len(s.Day))
	case granted < 0 || granted > len(batch):
		err = fmt.Errorf("rate limit: rate_take_n allowed %d of %d requests", granted, len(batch))
	}
	if err == nil {
		copy(s.Minute[:], mRing)
		copy(s.Day[:], dRing)
		// The state after the batch's last allowed request; the one after
		// request i (allowed) has the granted−1−i requests after it taken
		// back from the newest slots.
		mi, di := ringIndex(s.MinuteLast, len(s.Minute)), ringIndex(s.DayLast, len(s.Day))
		for i, w := range batch {
			ws := s
			allowed := i < granted
			if allowed {
				later := int32(granted - 1 - i)
				ws.Minute[mi] -= later
				ws.Day[di] -= later
			}
			w.d = ws.Decision(allowed, w.limits, w.now)
		}
	}
	r.mu.Lock()
	q := r.accounts[account]
	var next *rateWaiter
	if len(q.waiting) > 0 {
		next = q.waiting[0]
		next.lead = true
	} else {
		delete(r.accounts, account)
	}
	r.mu.Unlock()
	for i, w := range batch {
		if err != nil {
			w.err = err
		}
		if i > 0 { // the first is the caller: not waiting on wake
			close(w.wake)
		}
	}
	if next != nil {
		close(next.wake)
	}
}

// ringIndex is ratelimit's index of slot in a ring of n slots.
func ringIndex(slot int64, n int) int {
	return int(((slot % int64(n)) + int64(n)) % int64(n))
}
