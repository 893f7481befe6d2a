package ratelimit_test

import (
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/ratelimit/ratelimittest"
)

// TestMemoryConformance holds the in-process limiter to the suite that the
// shared (PostgreSQL, Redis) limiters pass too.
func TestMemoryConformance(t *testing.T) {
	ratelimittest.Run(t, func(*testing.T) ams.RateLimiter { return ratelimit.NewMemory() })
}

// BenchmarkMemory: docs/benchmarks.md, issue 14 (sliding windows).
func BenchmarkMemory(b *testing.B) { ratelimittest.Bench(b, ratelimit.NewMemory()) }
