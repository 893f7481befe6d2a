package oauth

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Sign-in throttling. Every failed sign-in is counted under three keys:
// the pair of client network and account ("pair:<network> <e-mail>"), the
// client network ("ip:<network>") and the account ("account:<e-mail>"),
// where the network is clientaddr.Network of clientaddr's address (behind
// --trusted-proxies, the address the proxies report): the address for
// IPv4, its /64 for IPv6. Within LoginFailureWindow:
//
//   - MaxLoginFailures failures of one account from one address block that
//     pair (429) until the oldest of them leaves the window. The account's
//     owner signing in from another address is not affected.
//   - MaxAddressFailures failures from one address, whatever the accounts,
//     block that address the same way.
//   - From AccountSlowFailures failures of one account across all
//     addresses, the account is slowed, never blocked: an attempt must come
//     at least AccountDelay(n) after the account's latest failure, else it
//     is answered 429 with Retry-After and not checked. A browser that has
//     signed in to the account before (its device cookie) is exempt. The
//     check and the count of the attempt are one step (Admit), so that
//     attempts sent at once take their turns rather than all passing; a
//     successful attempt takes its count back (Withdraw).
//
// A successful sign-in forgets the failures of its pair. Sign-ups are
// counted per client network ("signup-ip:<network>", clientaddr.Network:
// the address for IPv4, its /64 for IPv6) under the first rule.
const (
	LoginFailureWindow = 15 * time.Minute
	MaxLoginFailures   = 5
	MaxAddressFailures = 20
	// AccountSlowFailures failures of one account start its slowdown: the
	// minimum interval is AccountFirstDelay, doubled for every further
	// AccountDelayStep failures, up to AccountMaxDelay.
	AccountSlowFailures = 50
	AccountDelayStep    = 25
	AccountFirstDelay   = 2 * time.Second
	AccountMaxDelay     = time.Minute
	// ThrottleKeep is how many failures of one key a LoginThrottle must
	// keep: enough to reach AccountMaxDelay.
	ThrottleKeep = AccountSlowFailures + 5*AccountDelayStep
)

// AccountDelay is the minimum interval between sign-in attempts of an
// account with n failures across addresses within LoginFailureWindow: 0
// below AccountSlowFailures; 2 s from 50, 4 s from 75, 8 s from 100, 16 s
// from 125, 32 s from 150, 60 s from 175.
func AccountDelay(n int) time.Duration {
	if n < AccountSlowFailures {
		return 0
	}
	steps := (n - AccountSlowFailures) / AccountDelayStep
	if steps > 10 {
		return AccountMaxDelay
	}
	return min(AccountFirstDelay<<steps, AccountMaxDelay)
}

// LoginThrottle stores failed sign-ins per key; the rules above are
// applied by the server. The in-memory MemoryThrottle serves one process;
// postgres.Throttle is shared by every process on a database.
type LoginThrottle interface {
	// Recent returns the times of key's failures after since, newest
	// first, at most n of them.
	Recent(ctx context.Context, key string, since time.Time, n int) ([]time.Time, error)
	// Failed records a failure of key at now.
	Failed(ctx context.Context, key string, now time.Time) error
	// Reset forgets the failures of key.
	Reset(ctx context.Context, key string) error
	// Admit applies a slowdown rule to key and records the attempt, as
	// one atomic step, so that attempts racing each other cannot all pass
	// the rule before any is recorded: given key's failures after since
	// (newest first, at most max), rule returns the time the attempt may
	// be made. When that is after now the attempt is refused, nothing is
	// recorded, and Admit returns it; otherwise Admit records a failure of
	// key at now (the attempt, counted as failed until Withdraw takes it
	// back) and returns the zero time.
	Admit(ctx context.Context, key string, since, now time.Time, max int, rule func(recent []time.Time) time.Time) (time.Time, error)
	// Withdraw forgets one failure of key recorded at at (an attempt
	// Admit counted that succeeded).
	Withdraw(ctx context.Context, key string, at time.Time) error
}

// accountRule is the account slowdown as a rule for Admit: an attempt
// must come AccountDelay(n) after the newest of the account's n failures.
func accountRule(recent []time.Time) time.Time {
	if len(recent) == 0 {
		return time.Time{}
	}
	return recent[0].Add(AccountDelay(len(recent)))
}

// blockedUntil applies the rule "max failures of key within
// LoginFailureWindow block it until the oldest of them leaves the
// window": it returns the end of the block, or the zero time.
func blockedUntil(ctx context.Context, th LoginThrottle, key string, now time.Time, max int) (time.Time, error) {
	ts, err := th.Recent(ctx, key, now.Add(-LoginFailureWindow), max)
	if err != nil || len(ts) < max {
		return time.Time{}, err
	}
	return ts[max-1].Add(LoginFailureWindow), nil
}

// MemoryThrottle is an in-process LoginThrottle. It keeps at most keep
// failure times per key, forgets those older than retention, and forgets
// keys whose failures are all older. It is safe for concurrent use.
type MemoryThrottle struct {
	keep      int
	retention time.Duration

	mu        sync.Mutex
	fails     map[string][]time.Time // oldest first, at most keep
	lastSweep time.Time
}

// NewMemoryThrottle returns a throttle that keeps the last keep failures
// of each key for retention.
func NewMemoryThrottle(keep int, retention time.Duration) *MemoryThrottle {
	return &MemoryThrottle{keep: keep, retention: retention, fails: map[string][]time.Time{}}
}

// prune drops the failures of key that are out of retention at now and
// returns the rest. The caller holds mu.
func (m *MemoryThrottle) prune(key string, now time.Time) []time.Time {
	ts := m.fails[key]
	start := now.Add(-m.retention)
	i := 0
	for i < len(ts) && !ts[i].After(start) {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(m.fails, key)
	} else {
		m.fails[key] = ts
	}
	return ts
}

// Recent implements LoginThrottle.
func (m *MemoryThrottle) Recent(_ context.Context, key string, since time.Time, n int) ([]time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recent(key, since, n), nil
}

// recent is Recent; the caller holds mu.
func (m *MemoryThrottle) recent(key string, since time.Time, n int) []time.Time {
	ts := m.fails[key]
	var out []time.Time
	for i := len(ts) - 1; i >= 0 && len(out) < n && ts[i].After(since); i-- {
		out = append(out, ts[i])
	}
	return out
}

// Admit implements LoginThrottle: the check and the record are made
// under one hold of the lock.
func (m *MemoryThrottle) Admit(_ context.Context, key string, since, now time.Time, max int, rule func([]time.Time) time.Time) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if next := rule(m.recent(key, since, max)); next.After(now) {
		return next, nil
	}
	m.failed(key, now)
	return time.Time{}, nil
}

// Withdraw implements LoginThrottle.
func (m *MemoryThrottle) Withdraw(_ context.Context, key string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.fails[key]
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Equal(at) {
			ts = slices.Delete(ts, i, i+1)
			break
		}
	}
	if len(ts) == 0 {
		delete(m.fails, key)
	} else {
		m.fails[key] = ts
	}
	return nil
}

// Failed implements LoginThrottle.
func (m *MemoryThrottle) Failed(_ context.Context, key string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed(key, now)
	return nil
}

// failed records a failure of key at now. The caller holds mu.
func (m *MemoryThrottle) failed(key string, now time.Time) {
	ts := m.prune(key, now)
	// Kept in time order, should the clock step back.
	i, _ := slices.BinarySearchFunc(ts, now, func(a, b time.Time) int { return a.Compare(b) })
	for i < len(ts) && !ts[i].After(now) {
		i++
	}
	ts = slices.Insert(ts, i, now)
	if len(ts) > m.keep {
		ts = ts[len(ts)-m.keep:]
	}
	m.fails[key] = ts
	// Forget stale keys now and then, so that guessing across many
	// addresses cannot grow the map without bound.
	if len(m.fails) > 1024 && now.Sub(m.lastSweep) >= m.retention/4 {
		m.lastSweep = now
		for k := range m.fails {
			m.prune(k, now)
		}
	}
}

// Reset implements LoginThrottle.
func (m *MemoryThrottle) Reset(_ context.Context, key string) error {
	m.mu.Lock()
	delete(m.fails, key)
	m.mu.Unlock()
	return nil
}
