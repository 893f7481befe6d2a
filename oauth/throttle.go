package oauth

import (
	"context"
	"sync"
	"time"
)

// Login throttling: after MaxLoginFailures failed logins of one e-mail
// address, or from one client IP, within LoginFailureWindow, logins for it
// are refused (429) until the oldest of those failures is older than the
// window.
const (
	MaxLoginFailures   = 5
	LoginFailureWindow = 15 * time.Minute
)

// LoginThrottle counts failed logins per key ("email:<address>",
// "ip:<address>"). The in-memory MemoryThrottle serves one process; a
// shared store can back it when several processes serve one database.
type LoginThrottle interface {
	// Blocked reports whether key has too many recent failures at now, and
	// until when.
	Blocked(ctx context.Context, key string, now time.Time) (until time.Time, blocked bool, err error)
	// Failed records a failed login of key at now.
	Failed(ctx context.Context, key string, now time.Time) error
	// Reset forgets the failures of key (after a successful login).
	Reset(ctx context.Context, key string) error
}

// MemoryThrottle is an in-process LoginThrottle. It keeps at most max
// failure times per key and forgets keys whose failures are all older than
// the window. It is safe for concurrent use.
type MemoryThrottle struct {
	max    int
	window time.Duration

	mu        sync.Mutex
	fails     map[string][]time.Time // oldest first, at most max
	lastSweep time.Time
}

// NewMemoryThrottle returns a throttle that blocks a key after max
// failures within window.
func NewMemoryThrottle(max int, window time.Duration) *MemoryThrottle {
	return &MemoryThrottle{max: max, window: window, fails: map[string][]time.Time{}}
}

// recent drops the failures of key that are out of the window at now and
// returns the rest. The caller holds mu.
func (m *MemoryThrottle) recent(key string, now time.Time) []time.Time {
	ts := m.fails[key]
	start := now.Add(-m.window)
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

// Blocked implements LoginThrottle.
func (m *MemoryThrottle) Blocked(_ context.Context, key string, now time.Time) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.recent(key, now)
	if len(ts) < m.max {
		return time.Time{}, false, nil
	}
	return ts[len(ts)-m.max].Add(m.window), true, nil
}

// Failed implements LoginThrottle.
func (m *MemoryThrottle) Failed(_ context.Context, key string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := append(m.recent(key, now), now)
	if len(ts) > m.max {
		ts = ts[len(ts)-m.max:]
	}
	m.fails[key] = ts
	// Forget stale keys now and then, so that guessing across many
	// addresses cannot grow the map without bound.
	if len(m.fails) > 1024 && now.Sub(m.lastSweep) >= m.window/4 {
		m.lastSweep = now
		for k := range m.fails {
			m.recent(k, now)
		}
	}
	return nil
}

// Reset implements LoginThrottle.
func (m *MemoryThrottle) Reset(_ context.Context, key string) error {
	m.mu.Lock()
	delete(m.fails, key)
	m.mu.Unlock()
	return nil
}
