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
		{"AcrossTheMinuteBoundary", testAcrossTheMinuteBoundary},
		{"DayWindow", testDayWindow},
		{"DayFullRefusesWithRoomInMinute", testDayFullRefusesWithRoomInMinute},
		{"RefusedRequestsDoNotCount", testRefusedRequestsDoNotCount},
		{"AccountsAreIndependent", testAccountsAreIndependent},
		{"ResetIsInUTC", testResetIsInUTC},
		{"ClockSteppingBackStaysInCurrentWindow", testClockSteppingBack},
		{"RefusalMovesWindowsForward", testRefusalMovesWindowsForward},
		{"LimitChangeAppliesToCurrentCount", testLimitChange},
		{"DayCountsForTwentyFourToTwentyFiveHours", testDayCountsFor24To25Hours},
		{"CanceledContext", testCanceledContext},
		{"SameDecisionsAsMemory", testSameDecisionsAsMemory},
		{"NoSpanAdmitsMoreThanTheLimit", testNoSpanAdmitsMoreThanTheLimit},
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
	// The requests of slot 12:34:00 are counted until 12:35:00.999…:
	// the minute's remaining requests grow at 12:35:01. The day window's
	// first slot (12:00) leaves it 25 hours later.
	firstLeaves := at(12, 35, 1, 0)
	dayReset := time.Date(2026, 3, 11, 13, 0, 0, 0, time.UTC)
	for i := range 60 {
		now := start.Add(time.Duration(i) * 500 * time.Millisecond)
		d := take(t, r, "usr_a", standard, now)
		if !d.Allowed {
			t.Fatalf("request %d refused: %+v", i+1, d)
		}
		checkWindow(t, d.Minute, "minute", 60, 59-i, time.Minute, firstLeaves)
		checkWindow(t, d.Day, "day", 10_000, 9_999-i, 24*time.Hour, dayReset)
	}

	now := at(12, 34, 45, 250)
	d := take(t, r, "usr_a", standard, now)
	if d.Allowed {
		t.Fatalf("61st request allowed: %+v", d)
	}
	checkWindow(t, d.Minute, "minute", 60, 0, time.Minute, firstLeaves)
	checkWindow(t, d.Day, "day", 10_000, 9_940, 24*time.Hour, dayReset)
	if tw := d.Tightest(); tw.Name != "minute" {
		t.Errorf("Tightest = %+v, want the minute window", tw)
	}
	if got, want := d.RetryAfter(now), 15750*time.Millisecond; got != want {
		t.Errorf("RetryAfter = %v, want %v", got, want)
	}

	// Up to the last instant before Reset the window is full; at Reset
	// the first slot's two requests have left it.
	if d := take(t, r, "usr_a", standard, firstLeaves.Add(-time.Nanosecond)); d.Allowed {
		t.Errorf("request just before Reset allowed: %+v", d)
	}
	d = take(t, r, "usr_a", standard, firstLeaves)
	if !d.Allowed {
		t.Fatalf("request at Reset refused: %+v", d)
	}
	checkWindow(t, d.Minute, "minute", 60, 1, time.Minute, at(12, 35, 2, 0))
	checkWindow(t, d.Day, "day", 10_000, 9_939, 24*time.Hour, dayReset)
	if got := d.RetryAfter(firstLeaves); got != 0 {
		t.Errorf("RetryAfter of an allowed request with room = %v, want 0", got)
	}
}

// testAcrossTheMinuteBoundary: a client sending every 10 ms across a
// clock minute's end gets the minute's limit and no more (fixed windows
// let twice the limit through here), until its first requests have been
// counted for a minute.
func testAcrossTheMinuteBoundary(t *testing.T, r ams.RateLimiter) {
	start := at(12, 0, 59, 0)
	allowed := 0
	for now := start; now.Before(at(12, 1, 1, 330)); now = now.Add(10 * time.Millisecond) {
		if d := take(t, r, "usr_a", standard, now); d.Allowed {
			allowed++
		} else if now.Before(at(12, 0, 59, 600)) {
			t.Fatalf("request at %v refused with room: %+v", now, d)
		}
	}
	if allowed != 60 {
		t.Fatalf("allowed %d requests in 2.33 s across a minute boundary, want the limit 60", allowed)
	}
	d := take(t, r, "usr_a", standard, at(12, 1, 59, 990))
	if d.Allowed || !d.Minute.Reset.Equal(at(12, 2, 0, 0)) {
		t.Fatalf("request 59.99 s after the first: %+v, want refused until 12:02:00", d)
	}
	if d := take(t, r, "usr_a", standard, at(12, 2, 0, 0)); !d.Allowed || d.Minute.Remaining != 59 {
		t.Fatalf("request at 12:02:00, when slot 12:00:59 has left the window: %+v", d)
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
	// Slot 09:00 leaves the day window 25 hours after it began. The
	// minute window counts nothing: its Reset is now.
	leaves := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	checkWindow(t, d.Minute, "minute", 60, 60, time.Minute, now)
	checkWindow(t, d.Day, "day", 100, 0, 24*time.Hour, leaves)
	if tw := d.Tightest(); tw.Name != "day" {
		t.Errorf("Tightest = %+v, want the day window", tw)
	}
	if got, want := d.RetryAfter(now), 10*time.Hour+30*time.Second; got != want {
		t.Errorf("RetryAfter = %v, want %v", got, want)
	}
	if d := take(t, r, "usr_a", l, leaves.Add(-time.Second)); d.Allowed {
		t.Fatalf("request a second before Reset allowed: %+v", d)
	}
	d = take(t, r, "usr_a", l, leaves)
	if !d.Allowed {
		t.Fatalf("request at Reset refused: %+v", d)
	}
	checkWindow(t, d.Day, "day", 100, 99, 24*time.Hour, leaves.Add(25*time.Hour))
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
	next := first.Add(61 * time.Second) // slot 10:00:00 has left the minute window
	for i := range 2 {
		d := take(t, r, "usr_a", l, next)
		if !d.Allowed || d.Minute.Remaining != 1-i || d.Day.Remaining != 2-i {
			t.Fatalf("request %d 61 s later: %+v", i+1, d)
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

func testResetIsInUTC(t *testing.T, r ams.RateLimiter) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	now := time.Date(2026, 3, 10, 22, 15, 30, 0, ny) // 2026-03-11 02:15:30 UTC
	d := take(t, r, "usr_a", standard, now)
	checkWindow(t, d.Minute, "minute", 60, 59, time.Minute, time.Date(2026, 3, 11, 2, 16, 31, 0, time.UTC))
	checkWindow(t, d.Day, "day", 10_000, 9_999, 24*time.Hour, time.Date(2026, 3, 12, 3, 0, 0, 0, time.UTC))
	for _, w := range []ams.RateWindow{d.Minute, d.Day} {
		if loc := w.Reset.Location(); loc != time.UTC {
			t.Errorf("%s Reset location = %v, want UTC", w.Name, loc)
		}
	}
}

func testClockSteppingBack(t *testing.T, r ams.RateLimiter) {
	l := ams.Limits{PerMinute: 2, PerDay: 100}
	take(t, r, "usr_a", l, at(10, 1, 0, 0))
	// An earlier now (another process's clock a little behind) counts in
	// the newest slot, 10:01:00, which leaves the window at 10:02:01.
	d := take(t, r, "usr_a", l, at(10, 0, 59, 999))
	if !d.Allowed || d.Minute.Remaining != 0 || !d.Minute.Reset.Equal(at(10, 2, 1, 0)) {
		t.Fatalf("late request: %+v", d)
	}
	if d := take(t, r, "usr_a", l, at(10, 0, 59, 999)); d.Allowed {
		t.Fatalf("third request of the minute allowed: %+v", d)
	}
}

// testRefusalMovesWindowsForward: a refused request moves the windows to
// its slot (emptying the slots that left them), so a later request with
// an earlier clock counts in that newer slot too.
func testRefusalMovesWindowsForward(t *testing.T, r ams.RateLimiter) {
	if d := take(t, r, "usr_b", standard, at(23, 59, 0, 0)); !d.Allowed {
		t.Fatalf("first request refused: %+v", d)
	}
	// Refused (a plan that allows nothing), 90 s later: the request of
	// 23:59:00 leaves the minute window.
	refused := time.Date(2026, 3, 11, 0, 0, 30, 0, time.UTC)
	if d := take(t, r, "usr_b", ams.Limits{}, refused); d.Allowed {
		t.Fatalf("zero limits allowed a request: %+v", d)
	}
	d := take(t, r, "usr_b", standard, at(23, 59, 59, 0))
	if !d.Allowed {
		t.Fatalf("request after the refusal: %+v", d)
	}
	// Counted in slot 00:00:30 (gone at 00:01:31), alone in the minute
	// window; the day window still has the first request, of hour 23.
	checkWindow(t, d.Minute, "minute", 60, 59, time.Minute, refused.Add(61*time.Second))
	checkWindow(t, d.Day, "day", 10_000, 9_998, 24*time.Hour, time.Date(2026, 3, 12, 0, 0, 0, 0, time.UTC))
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
	// A downgrade below the current count: refused, nothing negative;
	// Reset is when enough requests have left for one to be allowed.
	d = take(t, r, "usr_a", ams.Limits{PerMinute: 10, PerDay: 50}, now)
	if d.Allowed {
		t.Fatalf("after a downgrade: %+v", d)
	}
	checkWindow(t, d.Minute, "minute", 10, 0, time.Minute, at(10, 1, 1, 0))
	checkWindow(t, d.Day, "day", 50, 0, 24*time.Hour, time.Date(2026, 3, 11, 11, 0, 0, 0, time.UTC))
	d = take(t, r, "usr_a", ams.Limits{}, now)
	if d.Allowed {
		t.Fatalf("zero limits allowed a request: %+v", d)
	}
	checkWindow(t, d.Minute, "minute", 0, 0, time.Minute, at(10, 1, 1, 0))
	d = take(t, r, "usr_new", ams.Limits{PerMinute: -1, PerDay: 100}, now)
	if d.Allowed {
		t.Fatalf("a negative limit allowed a request: %+v", d)
	}
	checkWindow(t, d.Minute, "minute", -1, 0, time.Minute, at(10, 1, 1, 0))
	checkWindow(t, d.Day, "day", 100, 100, 24*time.Hour, now)
}

// testDayCountsFor24To25Hours: requests of one hour slot are counted
// until 25 hours after the slot began.
func testDayCountsFor24To25Hours(t *testing.T, r ams.RateLimiter) {
	day1 := at(10, 0, 0, 0)
	for range 5 {
		take(t, r, "usr_a", standard, day1)
	}
	d := take(t, r, "usr_a", standard, day1.Add(25*time.Hour-time.Second))
	if !d.Allowed || d.Day.Remaining != 9_994 || !d.Day.Reset.Equal(day1.Add(25*time.Hour)) {
		t.Fatalf("24 h 59 min 59 s later: %+v", d)
	}
	d = take(t, r, "usr_a", standard, day1.Add(25*time.Hour))
	if !d.Allowed || d.Day.Remaining != 9_998 || d.Minute.Remaining != 58 {
		t.Fatalf("25 hours later: %+v", d)
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

// testNoSpanAdmitsMoreThanTheLimit checks the documented bound and rule
// against an independent model, over three days of random bursty traffic
// of several accounts: no 60 seconds admit more than the per-minute limit
// and no 24 hours more than the per-day one; a request is refused only
// when the window counts the limit (the requests since the start of the
// slot 60 seconds, or 24 hours, before its own); and Retry-After is exact:
// a request at now+RetryAfter would be allowed, one a slot earlier not.
func testNoSpanAdmitsMoreThanTheLimit(t *testing.T, r ams.RateLimiter) {
	l := ams.Limits{PerMinute: 6, PerDay: 40}
	rng := rand.New(rand.NewPCG(14, 60))
	admitted := map[string][]time.Time{}
	// counted returns how many of times fall in [from, to].
	counted := func(times []time.Time, from, to time.Time) int {
		n := 0
		for _, at := range times {
			if !at.Before(from) && !at.After(to) {
				n++
			}
		}
		return n
	}
	// inWindow returns the requests the documented rule counts at t.
	inWindow := func(times []time.Time, t time.Time) (minute, day int) {
		return counted(times, t.Truncate(time.Second).Add(-60*time.Second), t),
			counted(times, t.Truncate(time.Hour).Add(-24*time.Hour), t)
	}
	now := at(6, 0, 0, 0)
	end := now.Add(72 * time.Hour)
	for i := 0; now.Before(end); i++ {
		switch p := rng.IntN(100); {
		case p < 3:
			now = now.Add(time.Duration(rng.IntN(6*3600)) * time.Second) // a quiet spell
		case p < 30:
			now = now.Add(time.Duration(rng.IntN(120_000)) * time.Millisecond)
		default:
			now = now.Add(time.Duration(rng.IntN(800)) * time.Millisecond) // a burst
		}
		account := []string{"usr_a", "usr_b"}[rng.IntN(2)]
		times := admitted[account]
		minute, day := inWindow(times, now)
		d := take(t, r, account, l, now)
		if want := minute < l.PerMinute && day < l.PerDay; d.Allowed != want {
			t.Fatalf("step %d, %s at %v: Allowed = %v with %d in the minute window and %d in the day window", i, account, now, d.Allowed, minute, day)
		}
		if !d.Allowed {
			retry := now.Add(d.RetryAfter(now))
			if m, dd := inWindow(times, retry); m >= l.PerMinute || dd >= l.PerDay {
				t.Fatalf("step %d: refused at %v with RetryAfter %v, but at %v the windows count %d and %d", i, now, d.RetryAfter(now), retry, m, dd)
			}
			slot := time.Second
			if minute < l.PerMinute {
				slot = time.Hour
			}
			if m, dd := inWindow(times, retry.Add(-slot)); m < l.PerMinute && dd < l.PerDay && retry.Add(-slot).After(now) {
				t.Fatalf("step %d: refused at %v with RetryAfter %v, but a request a slot earlier would be allowed", i, now, d.RetryAfter(now))
			}
			continue
		}
		times = append(times, now)
		admitted[account] = times
		if n := counted(times, now.Add(-time.Minute+time.Nanosecond), now); n > l.PerMinute {
			t.Fatalf("step %d: %d requests of %s admitted in the 60 s up to %v, limit %d", i, n, account, now, l.PerMinute)
		}
		if n := counted(times, now.Add(-24*time.Hour+time.Nanosecond), now); n > l.PerDay {
			t.Fatalf("step %d: %d requests of %s admitted in the 24 h up to %v, limit %d", i, n, account, now, l.PerDay)
		}
	}
	if n := len(admitted["usr_a"]) + len(admitted["usr_b"]); n < 2*3*l.PerDay/2 {
		t.Fatalf("only %d requests admitted over three days: the traffic never reached the limits", n)
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
		checkWindow(t, d.Minute, "minute", 60, 0, time.Minute, at(12, 1, 1, 0))
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
