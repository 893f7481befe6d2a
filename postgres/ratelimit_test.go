package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/ratelimit/ratelimittest"
)

// TestRateLimiter holds the shared limiter to the suite ratelimit.Memory
// passes, each test on an empty schema of its own.
func TestRateLimiter(t *testing.T) {
	databaseURL(t)
	ratelimittest.Run(t, func(t *testing.T) ams.RateLimiter { return open(t).RateLimiter() })
}

// TestRateLimiterAcrossProcesses: two stores on one schema (two processes
// with their own connection pools) count an account's requests together.
func TestRateLimiterAcrossProcesses(t *testing.T) {
	url := databaseURL(t)
	ratelimittest.RunShared(t, func(t *testing.T) (ams.RateLimiter, ams.RateLimiter) {
		schema := createSchema(t, url)
		return openSchema(t, url, schema).RateLimiter(), openSchema(t, url, schema).RateLimiter()
	})
}

// TestPurgeRateState: Purge deletes the counters of accounts with nothing
// left in their windows, keeps the others, and forgets failed logins
// after a day.
func TestPurgeRateState(t *testing.T) {
	t.Parallel()
	db := open(t)
	ctx := context.Background()
	rl := db.RateLimiter()
	th := db.LoginThrottle(5, 15*time.Minute)
	early := time.Date(2026, 3, 10, 0, 10, 0, 0, time.UTC) // slot 00:00, in the day window until 3-11 01:00
	day1 := time.Date(2026, 3, 10, 22, 0, 0, 0, time.UTC)
	day2 := time.Date(2026, 3, 11, 0, 30, 0, 0, time.UTC)
	l := ams.Limits{PerMinute: 60, PerDay: 10_000}
	for _, c := range []struct {
		account string
		at      time.Time
	}{{"usr_old", early}, {"usr_old", early}, {"usr_today", day2}} {
		if _, err := rl.Take(ctx, c.account, l, c.at); err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range []time.Time{day1, day2.Add(-23 * time.Hour), day2} {
		if err := th.Failed(ctx, "email:a@example.com", at); err != nil {
			t.Fatal(err)
		}
	}
	if err := th.Failed(ctx, "ip:192.0.2.1", day1); err != nil {
		t.Fatal(err)
	}
	// At day2 + 1h (3-11 01:30): usr_old's requests have left the day
	// window, and two failures are over 24 h old.
	if _, err := db.Purge(ctx, day2.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var accounts []string
	rows, err := db.Pool().Query(ctx, `SELECT account FROM rate_windows ORDER BY account`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a string
		rows.Scan(&a)
		accounts = append(accounts, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(accounts) != 1 || accounts[0] != "usr_today" {
		t.Errorf("rate_windows after Purge: %v, want [usr_today]", accounts)
	}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM login_failures`).Scan(&n); err != nil || n != 2 {
		t.Errorf("login_failures after Purge: %d rows (%v), want 2 (of the last 24 hours)", n, err)
	}
	// usr_today still has its count.
	if d, err := rl.Take(ctx, "usr_today", l, day2.Add(time.Hour)); err != nil || d.Day.Remaining != 9_998 {
		t.Errorf("usr_today after Purge: %+v, %v", d, err)
	}
}

// BenchmarkRateLimiter: docs/benchmarks.md, issue 14 (sliding windows).
func BenchmarkRateLimiter(b *testing.B) {
	ratelimittest.Bench(b, pgtest.Open(b).RateLimiter())
}
