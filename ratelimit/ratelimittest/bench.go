package ratelimittest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// Bench measures Take on r with parallel callers: "Accounts" spreads the
// requests over 1024 accounts that never fill a window, "OneAccount" sends
// them all for one account (the worst case of a shared limiter: every
// request queues on the same counters). The clock advances 1 ms a request,
// so windows move on as they do under real traffic.
func Bench(b *testing.B, r ams.RateLimiter) {
	l := ams.Limits{PerMinute: 1 << 30, PerDay: 1 << 30}
	accounts := make([]string, 1024)
	for i := range accounts {
		accounts[i] = "usr_bench" + strconv.Itoa(i)
	}
	run := func(b *testing.B, pick func(i int) string) {
		ctx := context.Background()
		start := time.Now()
		var next atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1)
				if _, err := r.Take(ctx, pick(int(i)), l, start.Add(time.Duration(i)*time.Millisecond)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("Accounts", func(b *testing.B) { run(b, func(i int) string { return accounts[(i*97)%len(accounts)] }) })
	b.Run("OneAccount", func(b *testing.B) { run(b, func(int) string { return "usr_bench_one" }) })
}
