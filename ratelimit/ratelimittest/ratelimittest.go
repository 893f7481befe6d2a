// Package ratelimittest is the conformance suite of ams.RateLimiter: every
// limiter (the in-process ratelimit.Memory, the PostgreSQL and the Redis
// ones) passes it, so that they give the same decisions for the same
// requests. It checks the documented rules one by one, replays a long
// random sequence against ratelimit.Memory and compares every decision,
// and races goroutines that must be admitted exactly up to the limit.
package ratelimittest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ratelimit"
)

// Run runs the suite. newLimiter is called once per test and must return
// a limiter that has counted nothing yet (for a shared store: its own
// schema or key prefix); it may skip t.
func Run(t *testing.T, newLimiter func(t *testing.T) ams.RateLimiter) {
	tests := []struct {
		name string
		fn   func(*testing.T, ams.RateLimiter)
	}{
		{"MinuteWindow", testMinuteWindow},
		{"DayWindow", testDayWindow},
		{"DayFullRefusesWithRoomInMinute", testDayFullRefusesWithRoomInMinute},
		{"RefusedRequestsDoNotCount", testRefusedRequestsDoNotCount},
		{"AccountsAreIndependent", testAccountsAreIndependent},
		{"WindowsAreUTCAligned", testWindowsAreUTCAligned},
		{"ClockSteppingBackStaysInCurrentWindow", testClockSteppingBack},
		{"RefusalMovesWindowsForward", testRefusalMovesWindowsForward},
		{"LimitChangeAppliesToCurrentCount", testLimitChange},
		{"NextDayStartsAfresh", testNextDayStartsAfresh},
		{"CanceledContext", testCanceledContext},
		{"SameDecisionsAsMemory", testSameDecisionsAsMemory},
		{"ConcurrentTakeAdmitsExactlyTheLimit", testConcurrentTake},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newLimiter(t))
		})
	}
}

// RunShared checks limiters that share their counters: newPair returns two
// limiters on one store, as two processes serving one database have. Each
// call must return a pair that has counted nothing yet.
func RunShared(t *testing.T, newPair func(t *testing.T) (a, b ams.RateLimiter)) {
	t.Run("AlternatingRequestsShareOneCount", func(t *testing.T) {
		t.Parallel()
		a, b := newPair(t)
		testAlternating(t, a, b)
	})
	t.Run("RacingProcessesAdmitExactlyTheLimit", func(t *testing.T) {
		t.Parallel()
		a, b := newPair(t)
		testRacingPair(t, a, b)
	})
}

var standard = ams.Limits{PerMinute: 60, PerDay: 10_000}

// at returns 2026-03-10 at the given UTC time of day.
func at(h, m, s, ms int) time.Time {
	return time.Date(2026, 3, 10, h, m, s, ms*int(time.Millisecond), time.UTC)
}

func take(t *testing.T, r ams.RateLimiter, account string, l ams.Limits, now time.Time) ams.RateDecision {
	t.Helper()
	d, err := r.Take(context.Background(), account, l, now)
	if err != nil {
		t.Fatalf("Take(%s, %v): %v", account, now, err)
	}
	return d
}

func checkWindow(t *testing.T, w ams.RateWindow, name string, limit, remaining int, length time.Duration, reset time.Time) {
	t.Helper()
	if w.Name != name || w.Limit != limit || w.Remaining != remaining || w.Length != length || !w.Reset.Equal(reset) {
		t.Errorf("window = %+v, want {Name:%s Limit:%d Remaining:%d Length:%v Reset:%v}", w, name, limit, remaining, length, reset)
	}
}

func testMinuteWindow(t *testing.T, r ams.RateLimiter) {
	start := at(12, 34, 0, 0)
	minuteEnd := at(12, 35, 0, 0)
	dayEnd := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)
	for i := range 60 {
		now := start.Add(time.Duration(i) * 500 * time.Millisecond)
		d := take(t, r, "usr_a", standard, now)
		if !d.Allowed {
			t.Fatalf("request %d refused: %+v", i+1, d)
		}
		checkWindow(t, d.Minute, "minute", 60, 59-i, time.Minute, minuteEnd)
		checkWindow(t, d.Day, "day", 10_000, 9_999-i, 24*time.Hour, dayEnd)
	}

	now := at(12, 34, 45, 250)
	d := take(t, r, "usr_a", standard, now)
	if d.Allowed {
		t.Fatalf("61st request allowed: %+v", d)
	}
	checkWindow(t, d.Minute, "minute", 60, 0, time.Minute, minuteEnd)
	checkWindow(t, d.Day, "day", 10_000, 9_940, 24*time.Hour, dayEnd)
	if tw := d.Tightest(); tw.Name != "minute" {
		t.Errorf("Tightest = %+v, want the minute window", tw)
	}
	if got, want := d.RetryAfter(now), 14750*time.Millisecond; got != want {
		t.Errorf("RetryAfter = %v, want %v", got, want)
	}

	// The last instant of the minute is still in it; the next minute has room.
	if d := take(t, r, "usr_a", standard, minuteEnd.Add(-time.Nanosecond)); d.Allowed {
		t.Errorf("request at the minute's last instant allowed: %+v", d)
	}
	d = take(t, r, "usr_a", standard, minuteEnd)
	if !d.Allowed {
		t.Fatalf("request in the next minute refused: %+v", d)
	}
	checkWindow(t, d.Minute, "minute", 60, 59, time.Minute, at(12, 36, 0, 0))
	checkWindow(t, d.Day, "day", 10_000, 9_939, 24*time.Hour, dayEnd)
	if got := d.RetryAfter(minuteEnd); got != 0 {
		t.Errorf("RetryAfter of an allowed request with room = %v, want 0", got)
	}
}

func testDayWindow(t *testing.T, r ams.RateLimiter) {
	l := ams.Limits{PerMinute: 60, PerDay: 100}
	start := at(9, 0, 0, 0)
	for i := range 100 { // three requests a minute: the minute window never fills
		d := take(t, r, "usr_a", l, start.Add(time.Duration(i)*20*time.Second))
		if !d.Allowed {
			t.Fatalf("request %d refused: %+v", i+1, d)
		}
	}
	now := at(23, 59, 30, 0)
	d := take(t, r, "usr_a", l, now)
	if d.Allowed {
		t.Fatalf("request over the day's limit allowed: %+v", d)
	}
	midnight := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)
	checkWindow(t, d.Minute, "minute", 60, 60, time.Minute, midnight)
	checkWindow(t, d.Day, "day", 100, 0, 24*time.Hour, midnight)
	if tw := d.Tightest(); tw.Name != "day" {
		t.Errorf("Tightest = %+v, want the day window", tw)
	}
	if got := d.RetryAfter(now); got != 30*time.Second {
		t.Errorf("RetryAfter = %v, want 30s", got)
	}

	d = take(t, r, "usr_a", l, midnight)
	if !d.Allowed {
		t.Fatalf("request of the next day refused: %+v", d)
	}
	checkWindow(t, d.Day, "day", 100, 99, 24*time.Hour, midnight.Add(24*time.Hour))
}

func testDayFullRefusesWithRoomInMinute(t *testing.T, r ams.RateLimiter) {
	l := ams.Limits{PerMinute: 5, PerDay: 3}
	now := at(10, 0, 0, 0)
	for range 3 {
		take(t, r, "usr_a", l, now)
	}
	for range 4 {
		d := take(t, r, "usr_a", l, now)
		if d.Allowed {
			t.Fatalf("allowed past the day's limit: %+v", d)
		}
		// The refusals count in neither window.
		if d.Minute.Remaining != 2 || d.Day.Remaining != 0 {
			t.Fatalf("remaining = minute %d, day %d; want 2, 0", d.Minute.Remaining, d.Day.Remaining)
		}
	}
}

func testRefusedRequestsDoNotCount(t *testing.T, r ams.RateLimiter) {
	l := ams.Limits{PerMinute: 2, PerDay: 5}
	first := at(10, 0, 0, 0)
	for i := range 12 {
		d := take(t, r, "usr_a", l, first)
		if want := i < 2; d.Allowed != want {
			t.Fatalf("request %d: Allowed = %v, want %v", i+1, d.Allowed, want)
		}
		if i >= 2 && (d.Minute.Remaining != 0 || d.Day.Remaining != 3) {
			t.Fatalf("refused request %d counted: %+v", i+1, d)
		}
	}
	next := first.Add(time.Minute)
	for i := range 2 {
		d := take(t, r, "usr_a", l, next)
		if !d.Allowed || d.Minute.Remaining != 1-i || d.Day.Remaining != 2-i {
			t.Fatalf("request %d of the next minute: %+v", i+1, d)
		}
	}
}

func testAccountsAreIndependent(t *testing.T, r ams.RateLimiter) {
	l := ams.Limits{PerMinute: 3, PerDay: 100}
	now := at(10, 0, 0, 0)
	for range 3 {
		take(t, r, "usr_a", l, now)
	}
	if d := take(t, r, "usr_a", l, now); d.Allowed {
		t.Fatalf("usr_a over its limit allowed: %+v", d)
	}
	d := take(t, r, "usr_b", l, now)
	if !d.Allowed || d.Minute.Remaining != 2 || d.Day.Remaining != 99 {
		t.Fatalf("usr_b's first request: %+v", d)
	}
	// Another account's limits apply to it alone.
	d = take(t, r, "usr_c", ams.Limits{PerMinute: 1000, PerDay: 1_000_000}, now)
	if !d.Allowed || d.Minute.Remaining != 999 {
		t.Fatalf("usr_c's first request: %+v", d)
	}
}

func testWindowsAreUTCAligned(t *testing.T, r ams.RateLimiter) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	now := time.Date(2026, 3, 10, 22, 15, 30, 0, ny) // 2026-03-11 02:15:30 UTC
	d := take(t, r, "usr_a", standard, now)
	checkWindow(t, d.Minute, "minute", 60, 59, time.Minute, time.Date(2026, 3, 11, 2, 16, 0, 0, time.UTC))
	checkWindow(t, d.Day, "day", 10_000, 9_999, 24*time.Hour, time.Date(2026, 3, 12, 0, 0, 0, 0, time.UTC))
	if loc := d.Day.Reset.Location(); loc != time.UTC {
		t.Errorf("Reset location = %v, want UTC", loc)
	}
}

func testClockSteppingBack(t *testing.T, r ams.RateLimiter) {
	l := ams.Limits{PerMinute: 2, PerDay: 100}
	take(t, r, "usr_a", l, at(10, 1, 0, 0))
	// An earlier now (another process's clock a little behind) does not
	// reopen the previous minute.
	d := take(t, r, "usr_a", l, at(10, 0, 59, 999))
	if !d.Allowed || d.Minute.Remaining != 0 || !d.Minute.Reset.Equal(at(10, 2, 0, 0)) {
		t.Fatalf("late request: %+v", d)
	}
	if d := take(t, r, "usr_a", l, at(10, 0, 59, 999)); d.Allowed {
		t.Fatalf("third request of the minute allowed: %+v", d)
	}
}

// testRefusalMovesWindowsForward: a refused request that falls in a newer
// window starts it (with nothing counted), so a later request with an
// earlier clock counts in that newer window too.
func testRefusalMovesWindowsForward(t *testing.T, r ams.RateLimiter) {
	l := ams.Limits{PerMinute: 5, PerDay: 3}
	for range 3 {
		take(t, r, "usr_a", l, at(10, 0, 10, 0))
	}
	// Refused (the day is full), but the minute window moves to 10:01.
	d := take(t, r, "usr_a", l, at(10, 1, 0, 0))
	if d.Allowed {
		t.Fatalf("request over the day's limit allowed: %+v", d)
	}
	checkWindow(t, d.Minute, "minute", 5, 5, time.Minute, at(10, 2, 0, 0))
	d = take(t, r, "usr_a", l, at(10, 0, 30, 0))
	if d.Allowed {
		t.Fatalf("request over the day's limit allowed: %+v", d)
	}
	checkWindow(t, d.Minute, "minute", 5, 5, time.Minute, at(10, 2, 0, 0))

	// The same across midnight with a plan that allows nothing: the
	// refusal starts the new day, and a request stamped just before
	// midnight counts in it.
	midnight := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)
	if d := take(t, r, "usr_b", standard, at(23, 59, 0, 0)); !d.Allowed {
		t.Fatalf("first request refused: %+v", d)
	}
	if d := take(t, r, "usr_b", ams.Limits{}, midnight); d.Allowed {
		t.Fatalf("zero limits allowed a request: %+v", d)
	}
	d = take(t, r, "usr_b", standard, at(23, 59, 59, 0))
	if !d.Allowed {
		t.Fatalf("request after the refusal: %+v", d)
	}
	checkWindow(t, d.Day, "day", 10_000, 9_999, 24*time.Hour, midnight.Add(24*time.Hour))
	checkWindow(t, d.Minute, "minute", 60, 59, time.Minute, midnight.Add(time.Minute))
}

func testLimitChange(t *testing.T, r ams.RateLimiter) {
	now := at(10, 0, 0, 0)
	for range 60 {
		take(t, r, "usr_a", standard, now)
	}
	pro := ams.Limits{PerMinute: 120, PerDay: 50_000}
	d := take(t, r, "usr_a", pro, now)
	if !d.Allowed || d.Minute.Remaining != 59 || d.Day.Remaining != 49_939 {
		t.Fatalf("after an upgrade: %+v", d)
	}
	// A downgrade below the current count: refused, nothing negative.
	d = take(t, r, "usr_a", ams.Limits{PerMinute: 10, PerDay: 50}, now)
	if d.Allowed || d.Minute.Remaining != 0 || d.Day.Remaining != 0 {
		t.Fatalf("after a downgrade: %+v", d)
	}
	if d := take(t, r, "usr_a", ams.Limits{}, now); d.Allowed || d.Minute.Remaining != 0 {
		t.Fatalf("zero limits allowed a request: %+v", d)
	}
	if d := take(t, r, "usr_new", ams.Limits{PerMinute: -1, PerDay: 100}, now); d.Allowed || d.Minute.Remaining != 0 || d.Day.Remaining != 100 {
		t.Fatalf("a negative limit allowed a request: %+v", d)
	}
}

func testNextDayStartsAfresh(t *testing.T, r ams.RateLimiter) {
	day1 := at(10, 0, 0, 0)
	for range 5 {
		take(t, r, "usr_a", standard, day1)
	}
	d := take(t, r, "usr_a", standard, day1.Add(24*time.Hour))
	if !d.Allowed || d.Day.Remaining != 9_999 || d.Minute.Remaining != 59 {
		t.Fatalf("the next day: %+v", d)
	}
}

func testCanceledContext(t *testing.T, r ams.RateLimiter) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Take(ctx, "usr_a", standard, at(10, 0, 0, 0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := take(t, r, "usr_a", standard, at(10, 0, 0, 0)); d.Minute.Remaining != 59 {
		t.Fatalf("canceled Take counted: %+v", d)
	}
}

// testSameDecisionsAsMemory replays a long random sequence of requests,
// with changing limits, a clock that mostly moves forward but sometimes
// steps back, minute and day boundaries, and compares every decision with
// the in-process limiter's.
func testSameDecisionsAsMemory(t *testing.T, r ams.RateLimiter) {
	ref := ratelimit.NewMemory()
	rng := rand.New(rand.NewPCG(5, 3))
	limits := []ams.Limits{
		{PerMinute: 3, PerDay: 12},
		{PerMinute: 5, PerDay: 8},
		{PerMinute: 2, PerDay: 1000},
		{PerMinute: 0, PerDay: 10},
		{PerMinute: 4, PerDay: 0},
	}
	accounts := []string{"usr_a", "usr_b", "usr_c"}
	now := time.Date(2026, 3, 10, 23, 40, 0, 0, time.UTC)
	for i := range 1500 {
		switch p := rng.IntN(100); {
		case p < 4:
			now = now.Add(-time.Duration(rng.IntN(90_000)) * time.Millisecond) // steps back up to 90 s
		case p < 6:
			now = now.Add(time.Duration(20+rng.IntN(4)) * time.Hour) // near the next midnight
		default:
			now = now.Add(time.Duration(rng.IntN(15_000)) * time.Millisecond)
		}
		account := accounts[rng.IntN(len(accounts))]
		l := limits[rng.IntN(len(limits))]
		want := take(t, ref, account, l, now)
		got := take(t, r, account, l, now)
		if !sameDecision(got, want) {
			t.Fatalf("step %d: Take(%s, %+v, %v) = %+v, want (as ratelimit.Memory) %+v", i, account, l, now, got, want)
		}
	}
}

func sameDecision(a, b ams.RateDecision) bool {
	same := func(x, y ams.RateWindow) bool {
		return x.Name == y.Name && x.Limit == y.Limit && x.Remaining == y.Remaining && x.Length == y.Length &&
			x.Reset.Equal(y.Reset) && x.Reset.Location() == y.Reset.Location()
	}
	return a.Allowed == b.Allowed && same(a.Minute, b.Minute) && same(a.Day, b.Day)
}

// race runs workers goroutines that each call take n times, and returns
// how many calls were allowed.
func race(t *testing.T, workers, n int, take func(worker, i int) (ams.RateDecision, error)) int {
	t.Helper()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			for i := range n {
				d, err := take(w, i)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	return int(allowed.Load())
}

func testConcurrentTake(t *testing.T, r ams.RateLimiter) {
	ctx := context.Background()
	now := at(10, 0, 0, 0)
	const workers, each = 32, 50 // 1600 attempts

	// The minute window fills first.
	l := ams.Limits{PerMinute: 1000, PerDay: 1_000_000}
	var own atomic.Int64
	got := race(t, workers, each, func(w, i int) (ams.RateDecision, error) {
		// Each goroutine also has an account of its own, which is never full.
		if d, err := r.Take(ctx, "usr_"+strconv.Itoa(w), l, now); err != nil || !d.Allowed {
			return d, fmt.Errorf("own account %d: %+v, %v", w, d, err)
		}
		own.Add(1)
		return r.Take(ctx, "usr_shared", l, now.Add(time.Duration(i)*time.Millisecond))
	})
	if got != 1000 {
		t.Errorf("allowed %d of %d racing requests, want exactly the minute's limit 1000", got, workers*each)
	}
	if n := own.Load(); n != workers*each {
		t.Errorf("allowed %d requests of own accounts, want %d", n, workers*each)
	}
	d := take(t, r, "usr_shared", l, now)
	if d.Allowed || d.Minute.Remaining != 0 || d.Day.Remaining != 1_000_000-1000 {
		t.Errorf("after the race: %+v", d)
	}
	d = take(t, r, "usr_7", l, now)
	if !d.Allowed || d.Minute.Remaining != 1000-each-1 {
		t.Errorf("usr_7 after the race: %+v", d)
	}

	// The day window fills first.
	l = ams.Limits{PerMinute: 1_000_000, PerDay: 700}
	got = race(t, workers, each, func(_, _ int) (ams.RateDecision, error) {
		return r.Take(ctx, "usr_daily", l, now)
	})
	if got != 700 {
		t.Errorf("allowed %d of %d racing requests, want exactly the day's limit 700", got, workers*each)
	}
}

func testAlternating(t *testing.T, a, b ams.RateLimiter) {
	start := at(12, 0, 0, 0)
	both := []ams.RateLimiter{a, b}
	for i := range 60 {
		d := take(t, both[i%2], "usr_a", standard, start.Add(time.Duration(i)*100*time.Millisecond))
		if !d.Allowed || d.Minute.Remaining != 59-i || d.Day.Remaining != 9_999-i {
			t.Fatalf("request %d (limiter %d): %+v; want allowed with %d left in the minute", i+1, i%2, d, 59-i)
		}
	}
	for i, r := range both {
		d := take(t, r, "usr_a", standard, start.Add(10*time.Second))
		if d.Allowed {
			t.Fatalf("61st request, to limiter %d, allowed: %+v", i, d)
		}
		checkWindow(t, d.Minute, "minute", 60, 0, time.Minute, at(12, 1, 0, 0))
	}
}

func testRacingPair(t *testing.T, a, b ams.RateLimiter) {
	ctx := context.Background()
	now := at(10, 0, 0, 0)
	l := ams.Limits{PerMinute: 300, PerDay: 1_000_000}
	both := []ams.RateLimiter{a, b}
	got := race(t, 16, 40, func(w, _ int) (ams.RateDecision, error) {
		return both[w%2].Take(ctx, "usr_shared", l, now)
	})
	if got != 300 {
		t.Errorf("two limiters allowed %d of 640 racing requests, want exactly the limit 300", got)
	}
	for i, r := range both {
		if d := take(t, r, "usr_shared", l, now); d.Allowed || d.Day.Remaining != 1_000_000-300 {
			t.Errorf("limiter %d after the race: %+v", i, d)
		}
	}
}
