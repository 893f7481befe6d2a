package ratelimit

import (
	"time"

	"github.com/amsdev/ams"
)

// State is one account's counters as a shared limiter stores them: the
// start (Unix seconds) and count of its current minute and day windows.
// Limiters that keep their counters outside the process (in PostgreSQL, in
// Redis) apply the same rules as Memory to it:
//
//   - a window whose start is older than now's window start is restarted at
//     now's with a count of zero; one that is newer is kept (the clock of
//     another process, or this one, may lag), so a request is never counted
//     in an older window than the account's current one;
//   - the request is allowed only when both counts are below their limits,
//     and then counts in both; a refused request counts in neither.
type State struct {
	MinuteStart, DayStart int64
	Minute, Day           int
}

// Starts returns the starts (Unix seconds) of the minute window and of the
// UTC day window that now falls in.
func Starts(now time.Time) (minute, day int64) {
	// Truncate is absolute: the day truncation is 00:00 UTC.
	return now.Truncate(MinuteLength).Unix(), now.Truncate(DayLength).Unix()
}

// Decision reports s, the state after a request, under the limits l.
func Decision(allowed bool, l ams.Limits, s State) ams.RateDecision {
	return ams.RateDecision{
		Allowed: allowed,
		Minute:  window(MinuteWindow, l.PerMinute, s.Minute, MinuteLength, s.MinuteStart+minuteSeconds),
		Day:     window(DayWindow, l.PerDay, s.Day, DayLength, s.DayStart+daySeconds),
	}
}
