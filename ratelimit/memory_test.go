package ratelimit

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

var standard = ams.Limits{PerMinute: 60, PerDay: 10_000}

// at returns 2026-03-10 at the given UTC time of day.
func at(h, m, s, ms int) time.Time {
	return time.Date(2026, 3, 10, h, m, s, ms*int(time.Millisecond), time.UTC)
}

func take(t *testing.T, m *Memory, account string, l ams.Limits, now time.Time) ams.RateDecision {
	t.Helper()
	d, err := m.Take(context.Background(), account, l, now)
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

func TestMinuteWindow(t *testing.T) {
	m := NewMemory()
	start := at(12, 34, 0, 0)
	minuteEnd := at(12, 35, 0, 0)
	dayEnd := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)
	for i := range 60 {
		now := start.Add(time.Duration(i) * 500 * time.Millisecond)
		d := take(t, m, "usr_a", standard, now)
		if !d.Allowed {
			t.Fatalf("request %d refused: %+v", i+1, d)
		}
		checkWindow(t, d.Minute, "minute", 60, 59-i, time.Minute, minuteEnd)
		checkWindow(t, d.Day, "day", 10_000, 9_999-i, 24*time.Hour, dayEnd)
	}

	now := at(12, 34, 45, 250)
	d := take(t, m, "usr_a", standard, now)
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
	if d := take(t, m, "usr_a", standard, minuteEnd.Add(-time.Nanosecond)); d.Allowed {
		t.Errorf("request at the minute's last instant allowed: %+v", d)
	}
	d = take(t, m, "usr_a", standard, minuteEnd)
	if !d.Allowed {
		t.Fatalf("request in the next minute refused: %+v", d)
	}
	checkWindow(t, d.Minute, "minute", 60, 59, time.Minute, at(12, 36, 0, 0))
	checkWindow(t, d.Day, "day", 10_000, 9_939, 24*time.Hour, dayEnd)
	if got := d.RetryAfter(minuteEnd); got != 0 {
		t.Errorf("RetryAfter of an allowed request with room = %v, want 0", got)
	}
}

func TestDayWindow(t *testing.T) {
	m := NewMemory()
	l := ams.Limits{PerMinute: 60, PerDay: 100}
	start := at(9, 0, 0, 0)
	for i := range 100 { // three requests a minute: the minute window never fills
		d := take(t, m, "usr_a", l, start.Add(time.Duration(i)*20*time.Second))
		if !d.Allowed {
			t.Fatalf("request %d refused: %+v", i+1, d)
		}
	}
	now := at(23, 59, 30, 0)
	d := take(t, m, "usr_a", l, now)
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

	d = take(t, m, "usr_a", l, midnight)
	if !d.Allowed {
		t.Fatalf("request of the next day refused: %+v", d)
	}
	checkWindow(t, d.Day, "day", 100, 99, 24*time.Hour, midnight.Add(24*time.Hour))
}

func TestDayFullRefusesWithRoomInMinute(t *testing.T) {
	m := NewMemory()
	l := ams.Limits{PerMinute: 5, PerDay: 3}
	now := at(10, 0, 0, 0)
	for range 3 {
		take(t, m, "usr_a", l, now)
	}
	for range 4 {
		d := take(t, m, "usr_a", l, now)
		if d.Allowed {
			t.Fatalf("allowed past the day's limit: %+v", d)
		}
		// The refusals count in neither window.
		if d.Minute.Remaining != 2 || d.Day.Remaining != 0 {
			t.Fatalf("remaining = minute %d, day %d; want 2, 0", d.Minute.Remaining, d.Day.Remaining)
		}
	}
}

func TestRefusedRequestsDoNotCount(t *testing.T) {
	m := NewMemory()
	l := ams.Limits{PerMinute: 2, PerDay: 5}
	first := at(10, 0, 0, 0)
	for i := range 12 {
		d := take(t, m, "usr_a", l, first)
		if want := i < 2; d.Allowed != want {
			t.Fatalf("request %d: Allowed = %v, want %v", i+1, d.Allowed, want)
		}
		if i >= 2 && (d.Minute.Remaining != 0 || d.Day.Remaining != 3) {
			t.Fatalf("refused request %d counted: %+v", i+1, d)
		}
	}
	next := first.Add(time.Minute)
	for i := range 2 {
		d := take(t, m, "usr_a", l, next)
		if !d.Allowed || d.Minute.Remaining != 1-i || d.Day.Remaining != 2-i {
			t.Fatalf("request %d of the next minute: %+v", i+1, d)
		}
	}
}

func TestAccountsAreIndependent(t *testing.T) {
	m := NewMemory()
	l := ams.Limits{PerMinute: 3, PerDay: 100}
	now := at(10, 0, 0, 0)
	for range 3 {
		take(t, m, "usr_a", l, now)
	}
	if d := take(t, m, "usr_a", l, now); d.Allowed {
		t.Fatalf("usr_a over its limit allowed: %+v", d)
	}
	d := take(t, m, "usr_b", l, now)
	if !d.Allowed || d.Minute.Remaining != 2 || d.Day.Remaining != 99 {
		t.Fatalf("usr_b's first request: %+v", d)
	}
	// Another account's limits apply to it alone.
	d = take(t, m, "usr_c", ams.Limits{PerMinute: 1000, PerDay: 1_000_000}, now)
	if !d.Allowed || d.Minute.Remaining != 999 {
		t.Fatalf("usr_c's first request: %+v", d)
	}
}

func TestWindowsAreUTCAligned(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	m := NewMemory()
	now := time.Date(2026, 3, 10, 22, 15, 30, 0, ny) // 2026-03-11 02:15:30 UTC
	d := take(t, m, "usr_a", standard, now)
	checkWindow(t, d.Minute, "minute", 60, 59, time.Minute, time.Date(2026, 3, 11, 2, 16, 0, 0, time.UTC))
	checkWindow(t, d.Day, "day", 10_000, 9_999, 24*time.Hour, time.Date(2026, 3, 12, 0, 0, 0, 0, time.UTC))
	if loc := d.Day.Reset.Location(); loc != time.UTC {
		t.Errorf("Reset location = %v, want UTC", loc)
	}
}

func TestClockSteppingBackStaysInCurrentWindow(t *testing.T) {
	m := NewMemory()
	l := ams.Limits{PerMinute: 2, PerDay: 100}
	take(t, m, "usr_a", l, at(10, 1, 0, 0))
	// An earlier now does not reopen the previous minute.
	d := take(t, m, "usr_a", l, at(10, 0, 59, 999))
	if !d.Allowed || d.Minute.Remaining != 0 || !d.Minute.Reset.Equal(at(10, 2, 0, 0)) {
		t.Fatalf("late request: %+v", d)
	}
	if d := take(t, m, "usr_a", l, at(10, 0, 59, 999)); d.Allowed {
		t.Fatalf("third request of the minute allowed: %+v", d)
	}
}

func TestLimitChangeAppliesToCurrentCount(t *testing.T) {
	m := NewMemory()
	now := at(10, 0, 0, 0)
	for range 60 {
		take(t, m, "usr_a", standard, now)
	}
	pro := ams.Limits{PerMinute: 120, PerDay: 50_000}
	d := take(t, m, "usr_a", pro, now)
	if !d.Allowed || d.Minute.Remaining != 59 || d.Day.Remaining != 49_939 {
		t.Fatalf("after an upgrade: %+v", d)
	}
	if d := take(t, m, "usr_a", ams.Limits{}, now); d.Allowed || d.Minute.Remaining != 0 {
		t.Fatalf("zero limits allowed a request: %+v", d)
	}
}

func TestConcurrentTake(t *testing.T) {
	m := NewMemory()
	l := ams.Limits{PerMinute: 2000, PerDay: 1_000_000}
	now := at(10, 0, 0, 0)
	var allowed, others atomic.Int64
	var wg sync.WaitGroup
	for g := range 50 {
		wg.Go(func() {
			for i := range 100 {
				d, err := m.Take(context.Background(), "usr_shared", l, now.Add(time.Duration(i)*time.Millisecond))
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
				// Each goroutine also has an account of its own.
				if d, _ := m.Take(context.Background(), "usr_"+strconv.Itoa(g), l, now); d.Allowed {
					others.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 2000 {
		t.Errorf("allowed %d of 5000 requests, want exactly 2000", got)
	}
	if got := others.Load(); got != 5000 {
		t.Errorf("allowed %d requests of own accounts, want 5000", got)
	}
	d := take(t, m, "usr_shared", l, now)
	if d.Allowed || d.Minute.Remaining != 0 || d.Day.Remaining != 1_000_000-2000 {
		t.Errorf("after the race: %+v", d)
	}
	d = take(t, m, "usr_7", l, now)
	if !d.Allowed || d.Minute.Remaining != 2000-101 {
		t.Errorf("usr_7 after the race: %+v", d)
	}
}

func TestStaleAccountsAreDropped(t *testing.T) {
	m := NewMemory()
	day1 := at(10, 0, 0, 0)
	for i := range 1000 {
		take(t, m, "usr_"+strconv.Itoa(i), standard, day1)
	}
	if n := m.size(); n != 1000 {
		t.Fatalf("size = %d, want 1000", n)
	}
	// Still the same day: nothing is dropped, however late.
	for i := range 200 {
		take(t, m, "late_"+strconv.Itoa(i), standard, at(23, 59, 0, 0))
	}
	if n := m.size(); n != 1200 {
		t.Fatalf("size later the same day = %d, want 1200", n)
	}
	// The next day, each shard is swept on its first Take.
	day2 := day1.Add(24 * time.Hour)
	for i := range 1000 {
		take(t, m, "new_"+strconv.Itoa(i), standard, day2)
	}
	if n := m.size(); n != 1000 {
		t.Fatalf("size on the next day = %d, want 1000 (day-1 accounts dropped)", n)
	}
	// A dropped account starts afresh.
	if d := take(t, m, "usr_1", standard, day2); d.Day.Remaining != 9_999 {
		t.Fatalf("dropped account: %+v", d)
	}
}

func TestCanceledContext(t *testing.T) {
	m := NewMemory()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Take(ctx, "usr_a", standard, at(10, 0, 0, 0)); err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := take(t, m, "usr_a", standard, at(10, 0, 0, 0)); d.Minute.Remaining != 59 {
		t.Fatalf("canceled Take counted: %+v", d)
	}
}

func TestZeroValueIsUsable(t *testing.T) {
	var m Memory
	if d := take(t, &m, "usr_a", standard, at(10, 0, 0, 0)); !d.Allowed || d.Minute.Remaining != 59 {
		t.Fatalf("zero Memory: %+v", d)
	}
}

func TestTakeDoesNotAllocate(t *testing.T) {
	m := NewMemory()
	ctx := context.Background()
	now := at(10, 0, 0, 0)
	l := ams.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}
	take(t, m, "usr_a", l, now)
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		m.Take(ctx, "usr_a", l, now)
	})
	if allocs != 0 {
		t.Errorf("Take allocates %v times per call for a known account, want 0", allocs)
	}
}

func TestTightestAndRetryAfter(t *testing.T) {
	now := at(10, 0, 30, 0)
	minuteEnd, dayEnd := at(10, 1, 0, 0), time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)
	mk := func(minute, day int) ams.RateDecision {
		return ams.RateDecision{
			Allowed: minute > 0 && day > 0,
			Minute:  ams.RateWindow{Name: "minute", Remaining: minute, Reset: minuteEnd},
			Day:     ams.RateWindow{Name: "day", Remaining: day, Reset: dayEnd},
		}
	}
	tests := []struct {
		minute, day int
		tightest    string
		retry       time.Duration
	}{
		{10, 100, "minute", 0},
		{10, 10, "minute", 0}, // a tie goes to the shorter window
		{10, 3, "day", 0},
		{0, 100, "minute", 30 * time.Second},
		{5, 0, "day", dayEnd.Sub(now)},
		{0, 0, "minute", dayEnd.Sub(now)}, // both full: wait for the later reset
	}
	for _, tt := range tests {
		d := mk(tt.minute, tt.day)
		if got := d.Tightest().Name; got != tt.tightest {
			t.Errorf("minute %d, day %d: Tightest = %s, want %s", tt.minute, tt.day, got, tt.tightest)
		}
		if got := d.RetryAfter(now); got != tt.retry {
			t.Errorf("minute %d, day %d: RetryAfter = %v, want %v", tt.minute, tt.day, got, tt.retry)
		}
	}
}

func BenchmarkTake(b *testing.B) {
	m := NewMemory()
	ctx := context.Background()
	l := ams.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}
	accounts := make([]string, 1024)
	for i := range accounts {
		accounts[i] = "usr_" + strconv.Itoa(i)
	}
	now := time.Now()
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(97))
		for pb.Next() {
			i++
			if _, err := m.Take(ctx, accounts[i%len(accounts)], l, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}
