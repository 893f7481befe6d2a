// Package ratelimit counts requests per account in two sliding windows,
// a minute counted in one-second slots and a day counted in one-hour
// slots (State has the exact rule). A request is allowed only when both
// windows have room; an allowed request counts in both, a refused one in
// neither. No 60 seconds admit more than the per-minute limit, and no 24
// hours more than the per-day limit.
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

const (
	// shardCount spreads accounts over independent locks so that parallel
	// requests of different accounts rarely contend.
	shardCount = 64

	// sweepEvery is the least time (in minute slots, seconds) between
	// two sweeps of one shard.
	sweepEvery = 60
)

// entry is one account's state, with the sums of its rings.
type entry struct {
	State
	minute, day int64
}

type shardState struct {
	mu        sync.Mutex
	accounts  map[string]*entry
	nextSweep int64 // a minute slot; the shard is swept when a Take reaches it
}

// shard pads its state to its own cache lines so that neighbouring locks do
// not share one.
type shard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte
}

// Memory is an in-process rate limiter implementing ams.RateLimiter. It is
// safe for concurrent use. The zero value is ready to use; NewMemory is the
// usual constructor. Accounts with nothing left in either window are
// dropped by a sweep that runs at most once a minute per shard, so memory
// stays proportional to the accounts active in the last day (about 360
// bytes each).
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
func (m *Memory) Take(ctx context.Context, account string, l ams.Limits, now time.Time) (ams.RateDecision, error) {
	if err := ctx.Err(); err != nil {
		return ams.RateDecision{}, err
	}
	minute, _ := Slots(now)

	s := m.shard(account)
	s.mu.Lock()
	if s.accounts == nil {
		s.accounts = make(map[string]*entry)
	}
	if minute >= s.nextSweep || minute < s.nextSweep-2*sweepEvery {
		s.sweep(now)
		s.nextSweep = minute + sweepEvery
	}
	c := s.accounts[account]
	if c == nil {
		c = new(entry)
		s.accounts[account] = c
	}
	var allowed bool
	allowed, c.minute, c.day = c.take(now, l, c.minute, c.day)
	d := c.decision(allowed, l, now, c.minute, c.day)
	s.mu.Unlock()
	return d, nil
}

// sweep drops the accounts that have nothing left in either window at
// now. The caller holds s.mu.
func (s *shardState) sweep(now time.Time) {
	for account, c := range s.accounts {
		if c.Expired(now) {
			delete(s.accounts, account)
		}
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
