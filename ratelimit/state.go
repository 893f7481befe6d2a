package ratelimit

import (
	"time"

	"github.com/amsdev/ams"
)

// Window names, lengths and slots. Each window is a sliding window counted
// in slots of fixed length aligned to the Unix epoch: the minute window in
// one-second slots, the day window in one-hour slots. A request at time t
// falls in slot ⌊t / SlotLength⌋ and is counted by its window for Slots
// slots: its own and the Slots−1 after it, so for the window's length plus
// at most one slot (60 to 61 seconds, 24 to 25 hours).
const (
	MinuteWindow = "minute"
	DayWindow    = "day"

	MinuteLength = time.Minute
	DayLength    = 24 * time.Hour

	MinuteSlotLength = time.Second
	DaySlotLength    = time.Hour

	// MinuteSlots and DaySlots are the slots a window counts: the
	// window's length in slots, and one more.
	MinuteSlots = int(MinuteLength/MinuteSlotLength) + 1 // 61
	DaySlots    = int(DayLength/DaySlotLength) + 1       // 25
)

// State is one account's counters: for each window, the number of the
// newest slot it has counted in (Last, in slot lengths since the Unix
// epoch; zero for none) and a ring of per-slot counts indexed by slot
// number modulo the ring's length. Every limiter applies the same rule to
// it (Take; the PostgreSQL and Redis limiters in SQL and Lua, held to the
// same decisions by the ratelimittest suite):
//
//   - the window moves forward to now's slot: the slots that have left it
//     are emptied. A now whose slot is older than Last (the clock of
//     another process, or this one, lags) counts in slot Last instead, so
//     a request is never counted in a slot the window has left;
//   - the request is allowed only when both windows count fewer requests
//     than their limits, and then counts in both windows' current slot; a
//     refused request counts in neither (but still moves them forward).
//
// The rule's bound: any span of a window's length lies within Slots
// consecutive slots, all of which the window counted when the span's last
// request was admitted, so no 60 seconds admit more than the per-minute
// limit and no 24 hours more than the per-day limit.
type State struct {
	MinuteLast int64
	Minute     [MinuteSlots]int32
	DayLast    int64
	Day        [DaySlots]int32
}

// Slots returns the numbers of now's minute and day slots.
func Slots(now time.Time) (minute, day int64) {
	return floorDiv(now.UnixNano(), int64(MinuteSlotLength)), floorDiv(now.UnixNano(), int64(DaySlotLength))
}

// Take applies the rule to s for one request at now under the limits l,
// and reports whether it is allowed.
func (s *State) Take(now time.Time, l ams.Limits) bool {
	allowed, _, _ := s.take(now, l, sum(s.Minute[:]), sum(s.Day[:]))
	return allowed
}

// take is Take for a caller that keeps the windows' counts (the sums of
// the rings) beside s: given them, it returns them after the request.
func (s *State) take(now time.Time, l ams.Limits, minuteCount, dayCount int64) (allowed bool, _, _ int64) {
	minute, day := Slots(now)
	var left int64
	s.MinuteLast, left = advance(s.Minute[:], s.MinuteLast, minute)
	minuteCount -= left
	s.DayLast, left = advance(s.Day[:], s.DayLast, day)
	dayCount -= left
	allowed = minuteCount < int64(l.PerMinute) && dayCount < int64(l.PerDay)
	if allowed {
		s.Minute[ringIndex(s.MinuteLast, MinuteSlots)]++
		s.Day[ringIndex(s.DayLast, DaySlots)]++
		minuteCount++
		dayCount++
	}
	return allowed, minuteCount, dayCount
}

// Expired reports whether nothing s counts is in a window at now any
// more: the state can be forgotten.
func (s *State) Expired(now time.Time) bool {
	_, day := Slots(now)
	return s.DayLast+int64(DaySlots) <= day
}

// Decision reports s, the state after a request at now, under the limits
// l: each window's limit, the requests it has left, and its Reset.
func (s *State) Decision(allowed bool, l ams.Limits, now time.Time) ams.RateDecision {
	return s.decision(allowed, l, now, sum(s.Minute[:]), sum(s.Day[:]))
}

// decision is Decision, given the windows' counts.
func (s *State) decision(allowed bool, l ams.Limits, now time.Time, minuteCount, dayCount int64) ams.RateDecision {
	return ams.RateDecision{
		Allowed: allowed,
		Minute:  window(MinuteWindow, MinuteLength, MinuteSlotLength, s.Minute[:], s.MinuteLast, minuteCount, l.PerMinute, now),
		Day:     window(DayWindow, DayLength, DaySlotLength, s.Day[:], s.DayLast, dayCount, l.PerDay, now),
	}
}

// advance moves a ring whose newest slot is last forward to slot cur,
// emptying the slots that leave the window, and returns its newest slot
// and the requests that left.
func advance(ring []int32, last, cur int64) (newest, left int64) {
	if cur <= last {
		return last, 0
	}
	i := ringIndex(last+1, len(ring))
	for range min(cur-last, int64(len(ring))) {
		left += int64(ring[i])
		ring[i] = 0
		if i++; i == len(ring) {
			i = 0
		}
	}
	return cur, left
}

func ringIndex(slot int64, n int) int {
	return int(floorMod(slot, int64(n)))
}

func sum(ring []int32) int64 {
	var n int64
	for _, c := range ring {
		n += int64(c)
	}
	return n
}

// window reports one window. Remaining is the limit less the requests
// counted (never below zero). Reset is when Remaining next grows, at the
// start of the slot in which enough counted requests have left the window
// for it to: one, or more after a limit was lowered below the count; now
// when nothing is counted. With a limit of zero or less nothing is ever
// allowed, and Reset is when everything counted has left.
func window(name string, length, slotLength time.Duration, ring []int32, last, count int64, limit int, now time.Time) ams.RateWindow {
	w := ams.RateWindow{
		Name:      name,
		Limit:     limit,
		Remaining: int(max(int64(limit)-count, 0)),
		Length:    length,
	}
	n := int64(len(ring))
	slotStart := func(slot int64) time.Time { return time.Unix(0, slot*int64(slotLength)).UTC() }
	switch {
	case count == 0 && limit > 0:
		w.Reset = now.UTC()
	case limit <= 0:
		w.Reset = slotStart(last + n)
	default:
		// At the start of slot last+k, the slots last−n+1 … last−n+k
		// have left the window.
		target, left := min(count, int64(limit)), count
		i := ringIndex(last+1, len(ring)) // the oldest slot: last−n+1 ≡ last+1
		for k := int64(1); k <= n; k++ {
			left -= int64(ring[i])
			if left < target {
				w.Reset = slotStart(last + k)
				break
			}
			if i++; i == len(ring) {
				i = 0
			}
		}
	}
	return w
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
