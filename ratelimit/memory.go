// Package ratelimit counts requests per account in fixed, clock-aligned
// windows: the minute window [now.Truncate(time.Minute), +1m) and the UTC
// day window [00:00, +24h). A request is allowed only when both windows
// have room; an allowed request counts in both, a refused one in neither.
//
// Memory is the in-process ams.RateLimiter used when one process serves the
// database. It sits on every request's hot path, so it takes one short
// lock of one shard and allocates only when it first sees an account.
package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
	"unsafe"

	"github.com/amsdev/ams"
)

// Window names and lengths reported in ams.RateWindow.
const (
	MinuteWindow = "minute"
	DayWindow    = "day"

	MinuteLength = time.Minute
	DayLength    = 24 * time.Hour
)

const (
	minuteSeconds = int64(MinuteLength / time.Second)
	daySeconds    = int64(DayLength / time.Second)

	// shardCount spreads accounts over independent locks so that parallel
	// requests of different accounts rarely contend.
	shardCount = 64

	// sweepEvery is the least time between two sweeps of one shard.
	sweepEvery = minuteSeconds
)

// counter is one account's state: the start (Unix seconds) and count of its
// current minute and day windows.
type counter struct {
	minuteStart, dayStart int64
	minute, day           int
}

type shardState struct {
	mu        sync.Mutex
	accounts  map[string]*counter
	nextSweep int64 // Unix seconds; the shard is swept when a Take reaches it
}

// shard pads its state to its own cache lines so that neighbouring locks do
// not share one.
type shard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte
}

// Memory is an in-process rate limiter implementing ams.RateLimiter. It is
// safe for concurrent use. The zero value is ready to use; NewMemory is the
// usual constructor. Accounts whose day window has passed are dropped by a
// sweep that runs at most once a minute per shard, so memory stays
// proportional to the accounts active in the current day.
type Memory struct {
	seed   maphash.Seed
	once   sync.Once
	shards [shardCount]shard
}

var _ ams.RateLimiter = (*Memory)(nil)

// NewMemory returns an empty in-process rate limiter.
func NewMemory() *Memory {
	m := &Memory{}
	m.init()
	return m
}

func (m *Memory) init() {
	m.once.Do(func() { m.seed = maphash.MakeSeed() })
}

func (m *Memory) shard(account string) *shard {
	m.init()
	return &m.shards[maphash.String(m.seed, account)%shardCount]
}

// Take counts one request of account at now, unless the minute or the day
// window is already full, and reports both windows after the request. A
// window whose limit is zero or negative refuses every request. The error
// is ctx's if ctx is done; nothing is counted then.
//
// A now that falls in a window older than the account's current one (a
// clock stepping back, or concurrent requests finishing out of order) is
// counted in the current window rather than restarting an old one.
func (m *Memory) Take(ctx context.Context, account string, l ams.Limits, now time.Time) (ams.RateDecision, error) {
	if err := ctx.Err(); err != nil {
		return ams.RateDecision{}, err
	}
	minuteStart := now.Truncate(MinuteLength).Unix()
	dayStart := now.Truncate(DayLength).Unix() // Truncate is absolute: this is 00:00 UTC

	s := m.shard(account)
	s.mu.Lock()
	if s.accounts == nil {
		s.accounts = make(map[string]*counter)
	}
	if minuteStart >= s.nextSweep || minuteStart < s.nextSweep-2*sweepEvery {
		s.sweep(dayStart)
		s.nextSweep = minuteStart + sweepEvery
	}
	c := s.accounts[account]
	if c == nil {
		c = &counter{minuteStart: minuteStart, dayStart: dayStart}
		s.accounts[account] = c
	}
	if minuteStart > c.minuteStart {
		c.minuteStart, c.minute = minuteStart, 0
	}
	if dayStart > c.dayStart {
		c.dayStart, c.day = dayStart, 0
	}
	allowed := c.minute < l.PerMinute && c.day < l.PerDay
	if allowed {
		c.minute++
		c.day++
	}
	cur := *c
	s.mu.Unlock()

	return ams.RateDecision{
		Allowed: allowed,
		Minute:  window(MinuteWindow, l.PerMinute, cur.minute, MinuteLength, cur.minuteStart+minuteSeconds),
		Day:     window(DayWindow, l.PerDay, cur.day, DayLength, cur.dayStart+daySeconds),
	}, nil
}

// sweep drops the accounts whose day window started before dayStart: their
// minute and day windows have both ended, so they hold no state worth
// keeping. The caller holds s.mu.
func (s *shardState) sweep(dayStart int64) {
	for account, c := range s.accounts {
		if c.dayStart < dayStart {
			delete(s.accounts, account)
		}
	}
}

func window(name string, limit, count int, length time.Duration, reset int64) ams.RateWindow {
	return ams.RateWindow{
		Name:      name,
		Limit:     limit,
		Remaining: max(limit-count, 0),
		Length:    length,
		Reset:     time.Unix(reset, 0).UTC(),
	}
}

// size returns the number of accounts held, for tests.
func (m *Memory) size() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.accounts)
		s.mu.Unlock()
	}
	return n
}
