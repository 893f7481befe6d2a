package redisrate_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/ratelimit/ratelimittest"
	"github.com/amsdev/ams/ratelimit/redisrate"
	"github.com/redis/go-redis/v9"
)

// client returns a client of the Redis at AMS_TEST_REDIS_URL, or skips.
func client(t testing.TB) *redis.Client {
	t.Helper()
	url := os.Getenv("AMS_TEST_REDIS_URL")
	if url == "" {
		t.Skip("Redis tests skipped: set AMS_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/0) to run them")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("AMS_TEST_REDIS_URL=%s does not answer: %v", url, err)
	}
	return c
}

// prefix returns a key prefix of the test's own; its keys are deleted when
// the test ends.
func prefix(t testing.TB, c *redis.Client) string {
	t.Helper()
	p := "amstest:" + ams.NewID("") + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, p+"*", 100).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("delete test keys: %v", err)
		}
	})
	return p
}

func TestConformance(t *testing.T) {
	c := client(t)
	ratelimittest.Run(t, func(t *testing.T) ams.RateLimiter { return redisrate.New(c, prefix(t, c)) })
}

// TestAcrossProcesses: two limiters with their own connections and the
// same prefix count together.
func TestAcrossProcesses(t *testing.T) {
	c := client(t)
	ratelimittest.RunShared(t, func(t *testing.T) (ams.RateLimiter, ams.RateLimiter) {
		p := prefix(t, c)
		other := redis.NewClient(c.Options())
		t.Cleanup(func() { other.Close() })
		return redisrate.New(c, p), redisrate.New(other, p)
	})
}

// TestKeysExpire: a window's hash expires a minute after its newest slot
// has left the window (in the caller's time, so clocks need not agree with
// Redis's).
func TestKeysExpire(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	l := redisrate.New(c, prefix(t, c))
	now := time.Date(2026, 3, 10, 12, 34, 45, 0, time.UTC)
	if _, err := l.Take(ctx, "usr_a", ams.Limits{PerMinute: 60, PerDay: 10_000}, now); err != nil {
		t.Fatal(err)
	}
	mk, dk := l.Keys("usr_a")
	for _, k := range []struct {
		key  string
		want time.Duration
	}{
		{mk, 61*time.Second + time.Minute},                                 // slot 12:34:45 leaves at 12:35:46; + 1m
		{dk, 24*time.Hour + 25*time.Minute + 15*time.Second + time.Minute}, // slot 12:00 leaves at 13:00 the next day; + 1m
	} {
		ttl, err := c.PTTL(ctx, k.key).Result()
		if err != nil || ttl > k.want || ttl < k.want-5*time.Second {
			t.Errorf("TTL of %s = %v (%v), want about %v", k.key, ttl, err, k.want)
		}
	}
	// The script survives a SCRIPT FLUSH (Take falls back to EVAL).
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	d, err := l.Take(ctx, "usr_a", ams.Limits{PerMinute: 60, PerDay: 10_000}, now)
	if err != nil || !d.Allowed || d.Minute.Remaining != 58 {
		t.Fatalf("after SCRIPT FLUSH: %+v, %v", d, err)
	}
}

func TestOpen(t *testing.T) {
	client(t)
	ctx := context.Background()
	l, err := redisrate.Open(ctx, os.Getenv("AMS_TEST_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	account := "usr_" + ams.NewID("")
	mk, dk := l.Keys(account)
	c := client(t)
	t.Cleanup(func() { c.Del(context.Background(), mk, dk) })
	now := time.Now()
	if d, err := l.Take(ctx, account, ams.Limits{PerMinute: 60, PerDay: 10_000}, now); err != nil || !d.Allowed {
		t.Fatalf("Take: %+v, %v", d, err)
	}
	for _, k := range []string{mk, dk} {
		if n, err := c.StrLen(ctx, k).Result(); err != nil || (n != 8+4*61 && n != 8+4*25) {
			t.Errorf("key %s holds %d bytes (%v), want a packed ring", k, n, err)
		}
	}
	s, err := l.State(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	minute, day := ratelimit.Slots(now)
	var m, d int32
	for _, c := range s.Minute {
		m += c
	}
	for _, c := range s.Day {
		d += c
	}
	if s.MinuteLast != minute || s.DayLast != day || m != 1 || d != 1 {
		t.Errorf("stored state %+v, want one request in slots %d and %d", s, minute, day)
	}

	// Nothing listens on port 1: Open fails at once with a clear error.
	if _, err := redisrate.Open(ctx, "redis://127.0.0.1:1/0"); err == nil {
		t.Error("Open of a closed port succeeded")
	}
	if _, err := redisrate.Open(ctx, "http://127.0.0.1:6379"); err == nil {
		t.Error("Open of an http URL succeeded")
	}
}

// BenchmarkLimiter: docs/benchmarks.md, issue 14 (sliding windows).
func BenchmarkLimiter(b *testing.B) {
	c := client(b)
	ratelimittest.Bench(b, redisrate.New(c, prefix(b, c)))
}
