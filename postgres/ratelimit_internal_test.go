package postgres

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
)

// TestRateLimiterCombinesAnAccountsRequests: the requests of one account
// that arrive while a call for it is in flight are counted together by
// the next call, each with the decision it would have had alone (the
// first ones allowed, in order, up to the room left; the headers' counts
// one by one), and a request whose context ends while it waits leaves
// uncounted.
func TestRateLimiterCombinesAnAccountsRequests(t *testing.T) {
	t.Parallel()
	open, _, _ := internalSchema(t)
	db := open()
	rl := db.RateLimiter()
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 30, 0, time.UTC)
	l := ams.Limits{PerMinute: 5, PerDay: 1000}
	const account = "usr_combined"
	if d, err := rl.Take(ctx, account, l, now); err != nil || !d.Allowed || d.Minute.Remaining != 4 {
		t.Fatalf("first request: %+v, %v", d, err)
	}

	// Hold the account's row: the next call waits on its lock, and the
	// requests behind it queue in the limiter.
	lock, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `SELECT 1 FROM rate_windows WHERE account = $1 FOR UPDATE`, account); err != nil {
		t.Fatal(err)
	}
	queued := func() int {
		rl.mu.Lock()
		defer rl.mu.Unlock()
		if q := rl.accounts[account]; q != nil {
			return len(q.waiting)
		}
		return 0
	}
	type result struct {
		d   ams.RateDecision
		err error
	}
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	take := func(ctx context.Context) {
		defer wg.Done()
		d, err := rl.Take(ctx, account, l, now)
		mu.Lock()
		results = append(results, result{d, err})
		mu.Unlock()
	}
	wg.Add(1)
	go take(ctx) // the call that waits on the lock
	wait.Eventually(t, "the first call in flight", func() bool { return rl.calls.Load() == 2 })
	cancelled, cancel := context.WithCancel(ctx)
	wg.Add(1)
	go take(cancelled)
	wait.Eventually(t, "one request queued", func() bool { return queued() == 1 })
	for range 8 {
		wg.Add(1)
		go take(ctx)
	}
	wait.Eventually(t, "nine requests queued", func() bool { return queued() == 9 })
	cancel()
	wait.Eventually(t, "the cancelled request gone", func() bool { return queued() == 8 })
	lock.Rollback(ctx)
	wg.Wait()

	if n := rl.calls.Load(); n != 3 {
		t.Errorf("rate_take_n calls: %d, want 3 (the first request, the one held, the 8 queued together)", n)
	}
	var remaining []int
	refused, cancelledN := 0, 0
	for _, r := range results {
		switch {
		case errors.Is(r.err, context.Canceled):
			cancelledN++
		case r.err != nil:
			t.Errorf("Take: %v", r.err)
		case r.d.Allowed:
			remaining = append(remaining, r.d.Minute.Remaining)
		default:
			refused++
			if r.d.Minute.Remaining != 0 {
				t.Errorf("refused with %d remaining", r.d.Minute.Remaining)
			}
		}
	}
	sort.Ints(remaining)
	if cancelledN != 1 || refused != 5 || len(remaining) != 4 || remaining[0] != 0 || remaining[1] != 1 || remaining[2] != 2 || remaining[3] != 3 {
		t.Errorf("decisions: %d cancelled, %d refused, allowed with remaining %v; want 1, 5 and [0 1 2 3]", cancelledN, refused, remaining)
	}
	var count int64
	if err := db.pool.QueryRow(ctx, `SELECT minute_count FROM rate_windows WHERE account = $1`, account).Scan(&count); err != nil || count != 5 {
		t.Errorf("minute_count %d (%v), want 5", count, err)
	}
}
