package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/postgres"
)

var _ oauth.LoginThrottle = (*postgres.Throttle)(nil)

// blockedBy applies the rule of the sign-in throttle to th: max failures
// of key within window block it until the oldest of them leaves the
// window.
func blockedBy(t *testing.T, th oauth.LoginThrottle, key string, now time.Time, max int, window time.Duration) (time.Time, bool) {
	t.Helper()
	ts, err := th.Recent(context.Background(), key, now.Add(-window), max)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) < max {
		return time.Time{}, false
	}
	return ts[max-1].Add(window), true
}

// throttleCase checks a LoginThrottle that keeps 3 failures for 10
// minutes, read with the rule "3 failures in 10 minutes block".
func throttleCase(t *testing.T, m oauth.LoginThrottle) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	blocked := func(key string, d time.Duration) (time.Time, bool) {
		t.Helper()
		return blockedBy(t, m, key, at(d), 3, 10*time.Minute)
	}
	failed := func(key string, d time.Duration) {
		t.Helper()
		if err := m.Failed(ctx, key, at(d)); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []time.Duration{0, time.Minute, 2 * time.Minute} {
		if _, b := blocked("k", d); b {
			t.Fatalf("blocked before the 3rd failure at %v", d)
		}
		failed("k", d)
	}
	for _, c := range []struct {
		at      time.Duration
		blocked bool
		until   time.Duration
	}{
		{2 * time.Minute, true, 10 * time.Minute},
		{10*time.Minute - time.Nanosecond, true, 10 * time.Minute},
		{10 * time.Minute, false, 0}, // the first failure left the window
		{12*time.Minute + time.Second, false, 0},
	} {
		u, b := blocked("k", c.at)
		if b != c.blocked || (b && !u.Equal(at(c.until))) {
			t.Errorf("at +%v: blocked %v until %v, want %v until +%v", c.at, b, u, c.blocked, c.until)
		}
	}
	if _, b := blocked("other", 2*time.Minute); b {
		t.Error("keys are not separate")
	}
	// The clock moves on (only forward: the memory throttle drops what
	// leaves the window as it goes). Three failures block until the first
	// leaves the window; a fourth blocks until the second leaves it.
	for _, d := range []time.Duration{13 * time.Minute, 14 * time.Minute, 15 * time.Minute} {
		failed("k", d)
	}
	if u, b := blocked("k", 15*time.Minute); !b || !u.Equal(at(23*time.Minute)) {
		t.Errorf("after failures at +13m, +14m, +15m: blocked %v until %v, want until +23m", b, u)
	}
	failed("k", 22*time.Minute+30*time.Second)
	if u, b := blocked("k", 22*time.Minute+30*time.Second); !b || !u.Equal(at(24*time.Minute)) {
		t.Errorf("after a 4th failure: blocked %v until %v, want until +24m", b, u)
	}
	if _, b := blocked("k", 24*time.Minute); b {
		t.Error("blocked at +24m, when only two failures are left in the window")
	}
	for _, d := range []time.Duration{30 * time.Minute, 31 * time.Minute, 32 * time.Minute, 33 * time.Minute} {
		failed("k", d)
	}
	if u, b := blocked("k", 33*time.Minute); !b || !u.Equal(at(41*time.Minute)) {
		t.Errorf("after failures at +30m..+33m: blocked %v until %v, want until +41m", b, u)
	}
	// Recent: newest first, at most n, at most the 3 kept.
	if ts, err := m.Recent(ctx, "k", at(0), 10); err != nil || len(ts) != 3 || !ts[0].Equal(at(33*time.Minute)) || !ts[2].Equal(at(31*time.Minute)) {
		t.Errorf("Recent after failures at +30m..+33m: %v, %v; want +33m, +32m, +31m", ts, err)
	}
	if ts, err := m.Recent(ctx, "k", at(32*time.Minute), 10); err != nil || len(ts) != 1 {
		t.Errorf("Recent since +32m (exclusive): %v, %v; want +33m", ts, err)
	}
	if err := m.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, b := blocked("k", 33*time.Minute); b {
		t.Error("blocked after Reset")
	}
	if err := m.Reset(ctx, "never-failed"); err != nil {
		t.Errorf("Reset of an unknown key: %v", err)
	}
}

// TestThrottleSameAsMemory runs the same checks on the in-process throttle
// and the PostgreSQL one.
func TestThrottleSameAsMemory(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		throttleCase(t, oauth.NewMemoryThrottle(3, 10*time.Minute))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		throttleCase(t, open(t).LoginThrottle(3, 10*time.Minute))
	})
}

// admitRace races 20 attempts through Admit, on the throttles given in
// turn (one, or two processes), under the rule "from 3 failures, one
// attempt a second": with 2 failures recorded, the first attempt counted
// starts the slowdown, so exactly one is admitted and the key has 3
// failures. Withdraw takes the admitted one back; a second later one
// attempt is admitted again.
func admitRace(t *testing.T, ths ...oauth.LoginThrottle) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	window := 10 * time.Minute
	rule := func(recent []time.Time) time.Time {
		if len(recent) < 3 {
			return time.Time{}
		}
		return recent[0].Add(time.Second)
	}
	for i := range 2 {
		if err := ths[0].Failed(ctx, "account:ann", t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	race := func(now time.Time) (admitted int, next []time.Time) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				n, err := ths[i%len(ths)].Admit(ctx, "account:ann", now.Add(-window), now, 10, rule)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Error(err)
				case n.IsZero():
					admitted++
				default:
					next = append(next, n)
				}
			})
		}
		wg.Wait()
		return admitted, next
	}
	count := func(now time.Time) int {
		t.Helper()
		ts, err := ths[len(ths)-1].Recent(ctx, "account:ann", now.Add(-window), 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(ts)
	}
	now := t0.Add(time.Second)
	admitted, next := race(now)
	if admitted != 1 || count(now) != 3 {
		t.Fatalf("20 racing attempts with 2 failures: %d admitted, %d failures; want 1 and 3", admitted, count(now))
	}
	for _, n := range next {
		if !n.Equal(now.Add(time.Second)) {
			t.Fatalf("a refused attempt may come at %v, want %v", n, now.Add(time.Second))
		}
	}
	if err := ths[len(ths)-1].Withdraw(ctx, "account:ann", now); err != nil {
		t.Fatal(err)
	}
	if c := count(now); c != 2 {
		t.Fatalf("after Withdraw: %d failures, want 2", c)
	}
	// Three failures again (the second recorded), then one a second.
	if err := ths[0].Failed(ctx, "account:ann", now); err != nil {
		t.Fatal(err)
	}
	if admitted, _ := race(now.Add(time.Second - time.Nanosecond)); admitted != 0 {
		t.Fatalf("within the interval: %d admitted", admitted)
	}
	if admitted, _ := race(now.Add(time.Second)); admitted != 1 || count(now.Add(time.Second)) != 4 {
		t.Fatalf("after the interval: %d admitted, %d failures; want 1 and 4", admitted, count(now.Add(time.Second)))
	}
}

// TestThrottleAdmitRace runs admitRace on the in-process throttle, the
// PostgreSQL one, and two PostgreSQL processes on one schema.
func TestThrottleAdmitRace(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		admitRace(t, oauth.NewMemoryThrottle(10, 10*time.Minute))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		admitRace(t, open(t).LoginThrottle(10, 10*time.Minute))
	})
	t.Run("postgres, two processes", func(t *testing.T) {
		t.Parallel()
		url := databaseURL(t)
		schema := createSchema(t, url)
		admitRace(t, openSchema(t, url, schema).LoginThrottle(10, 10*time.Minute), openSchema(t, url, schema).LoginThrottle(10, 10*time.Minute))
	})
}

// TestThrottleAcrossProcesses: failures recorded by two processes (two
// stores on one schema) add up, and a success in one resets the key for
// both.
func TestThrottleAcrossProcesses(t *testing.T) {
	t.Parallel()
	url := databaseURL(t)
	schema := createSchema(t, url)
	db := openSchema(t, url, schema)
	a := db.LoginThrottle(oauth.MaxLoginFailures, oauth.LoginFailureWindow)
	b := openSchema(t, url, schema).LoginThrottle(oauth.MaxLoginFailures, oauth.LoginFailureWindow)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	both := []*postgres.Throttle{a, b}
	for i := range oauth.MaxLoginFailures {
		th := both[i%2]
		now := t0.Add(time.Duration(i+1) * time.Second)
		if _, blocked := blockedBy(t, th, "email:ann@example.com", now, oauth.MaxLoginFailures, oauth.LoginFailureWindow); blocked {
			t.Fatalf("attempt %d: blocked", i+1)
		}
		if err := th.Failed(ctx, "email:ann@example.com", now); err != nil {
			t.Fatal(err)
		}
	}
	for i, th := range both {
		until, blocked := blockedBy(t, th, "email:ann@example.com", t0.Add(10*time.Second), oauth.MaxLoginFailures, oauth.LoginFailureWindow)
		if !blocked || !until.Equal(t0.Add(time.Second+oauth.LoginFailureWindow)) {
			t.Errorf("process %d after 5 failures: blocked %v until %v, want until 10:15:01", i, blocked, until)
		}
	}
	if err := b.Reset(ctx, "email:ann@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, blocked := blockedBy(t, a, "email:ann@example.com", t0.Add(10*time.Second), oauth.MaxLoginFailures, oauth.LoginFailureWindow); blocked {
		t.Error("still blocked in the other process after Reset")
	}

	// Failures racing in both processes: the key is blocked once there are
	// max of them, and the table keeps few rows for it.
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if err := both[i%2].Failed(ctx, "ip:192.0.2.7", t0.Add(time.Minute+time.Duration(i)*time.Millisecond)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, blocked := blockedBy(t, a, "ip:192.0.2.7", t0.Add(2*time.Minute), oauth.MaxLoginFailures, oauth.LoginFailureWindow); !blocked {
		t.Error("after 40 racing failures: not blocked")
	}
	if err := b.Failed(ctx, "ip:192.0.2.7", t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM login_failures WHERE key = 'ip:192.0.2.7'`).Scan(&rows); err != nil || rows > oauth.MaxLoginFailures+1 {
		t.Errorf("%d rows kept for the key (%v), want at most %d", rows, err, oauth.MaxLoginFailures+1)
	}
}

func TestLoginThrottleArguments(t *testing.T) {
	db := open(t)
	for _, c := range []struct {
		max    int
		window time.Duration
	}{{0, time.Minute}, {3, 0}, {3, 25 * time.Hour}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("LoginThrottle(%d, %v) did not panic", c.max, c.window)
				}
			}()
			db.LoginThrottle(c.max, c.window)
		}()
	}
}
