package ratelimit

import (
	"context"
	"strconv"
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

func TestStaleAccountsAreDropped(t *testing.T) {
	m := NewMemory()
	day1 := at(10, 0, 0, 0)
	for i := range 1000 {
		take(t, m, "usr_"+strconv.Itoa(i), standard, day1)
	}
	if n := m.size(); n != 1000 {
		t.Fatalf("size = %d, want 1000", n)
	}
	// Later the same day: nothing is dropped.
	for i := range 200 {
		take(t, m, "late_"+strconv.Itoa(i), standard, at(23, 59, 0, 0))
	}
	if n := m.size(); n != 1200 {
		t.Fatalf("size later the same day = %d, want 1200", n)
	}
	// 25 hours later the requests of 10:00 have left the day window; each
	// shard is swept on its first Take and drops those accounts, but not
	// the late ones.
	day2 := day1.Add(25 * time.Hour)
	for i := range 1000 {
		take(t, m, "new_"+strconv.Itoa(i), standard, day2)
	}
	if n := m.size(); n != 1200 {
		t.Fatalf("size 25 hours later = %d, want 1200 (the 10:00 accounts dropped)", n)
	}
	// A dropped account starts afresh.
	if d := take(t, m, "usr_1", standard, day2); d.Day.Remaining != 9_999 {
		t.Fatalf("dropped account: %+v", d)
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
