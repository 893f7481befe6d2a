package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/amsdev/ams"
)

// Gate applies an account's plan limits to one request. It is the one rule
// of every rate-limited request: the API's middleware takes every /v1
// request through it, and the account pages take the actions that make
// ams send something (a message to an assistant, a webhook ping, recovery
// or redelivery) through it too, so that such an action counts the same
// whether it comes from the API or from a page.
type Gate struct {
	// Limiter counts the requests.
	Limiter ams.RateLimiter
	// Usage, when set, is told of every decision (usage metering).
	Usage UsageRecorder
}

// UsageRecorder counts an account's requests: allowed by the limiter, or
// refused (a *usage.Recorder).
type UsageRecorder interface {
	Record(account string, at time.Time, allowed bool)
}

// Take counts one request of account u at now against u.Limits(). It
// returns the decision (for the rate-limit headers) and, when the request
// is refused, the ERATELIMIT *ams.Error (code rate_limit_exceeded) that
// says the plan's figures and when to retry (RetryAfter). A failure of the
// limiter itself is any other error, with a zero decision.
func (g Gate) Take(ctx context.Context, u *ams.User, now time.Time) (ams.RateDecision, error) {
	limits := u.Limits()
	d, err := g.Limiter.Take(ctx, u.ID, limits, now)
	if err != nil {
		return ams.RateDecision{}, fmt.Errorf("rate limiter: %w", err)
	}
	if g.Usage != nil {
		g.Usage.Record(u.ID, now, d.Allowed)
	}
	if !d.Allowed {
		return d, ams.Errorf(ams.ERATELIMIT, "rate_limit_exceeded",
			"Rate limit exceeded: your plan allows %d requests per minute and %d per day. Retry after %d seconds.",
			limits.PerMinute, limits.PerDay, RetryAfter(d, now))
	}
	return d, nil
}

// RetryAfter returns the whole seconds (rounded up) from now until a
// request refused by d would be allowed: the value of Retry-After.
func RetryAfter(d ams.RateDecision, now time.Time) int64 {
	wait := d.RetryAfter(now)
	if wait <= 0 {
		return 0
	}
	return int64((wait + time.Second - 1) / time.Second)
}
