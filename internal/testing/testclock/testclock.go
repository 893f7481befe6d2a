// Package testclock is the clock tests move by hand: it stands still
// until the test sets or advances it, so that what depends on time
// (expiry, reminders, retries, leases) happens when the test says.
package testclock

import (
	"sync"
	"time"
)

// Start is the time the fixtures' clocks start at: 2026-11-21 10:00:00 UTC.
var Start = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// Clock is a clock that tests move by hand. It is safe for concurrent
// use; its Now is an ams.Clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}
