package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ratelimit"
	"github.com/jackc/pgx/v5"
)

// RateLimiter is an ams.RateLimiter that keeps its counters in the
// database (table rate_limits), so that every process serving the database
// counts an account's requests together: the 61st request of a standard
// account within a minute is refused whichever process receives it. It
// gives the same decisions as ratelimit.Memory (the ratelimittest suite
// holds both to it).
//
// An allowed request costs one statement, an INSERT … ON CONFLICT DO
// UPDATE on the account's row that PostgreSQL runs atomically: concurrent
// requests of one account queue on the row's lock, and each sees the
// counts the one before left. A refused request writes nothing (except
// when it is the first of a new window, which it starts) and costs a
// second statement that reads the counts it reports.
type RateLimiter struct {
	db *DB
}

var _ ams.RateLimiter = (*RateLimiter)(nil)

// RateLimiter returns the database's shared rate limiter.
func (db *DB) RateLimiter() *RateLimiter { return &RateLimiter{db: db} }

// takeSQL counts a request in the account's row. $1 account, $2 and $3 the
// starts of now's minute and day windows, $4 and $5 the limits. A window
// older than now's restarts at zero; a newer one is kept (see
// ratelimit.State). The update runs when the request is allowed (both
// windows have room) or when it starts a window; the counts grow only when
// it is allowed. It returns the row after the update, or nothing when the
// request was refused and changed nothing.
//
// The statement commits asynchronously (synchronous_commit off, for its
// own transaction only): it does not wait for its WAL record to reach the
// disk, so the account's row lock is held for microseconds instead of a
// WAL flush, and one account's requests no longer queue behind each
// other's flushes (docs/benchmarks.md, issue 5). A database crash may
// forget the last fraction of a second of counts, which only lets a few
// requests more through in that minute; it never loses data.
//
// The returned row tells whether the request was allowed: an allowed
// request leaves both counts at one or more, while a refused one that
// started a window leaves that window's count at zero.
const takeSQL = `
INSERT INTO rate_limits AS r (account, minute_start, minute_count, day_start, day_count)
SELECT $1, $2::bigint, CASE WHEN 0 < $4::bigint AND 0 < $5::bigint THEN 1 ELSE 0 END,
       $3::bigint, CASE WHEN 0 < $4::bigint AND 0 < $5::bigint THEN 1 ELSE 0 END
FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
ON CONFLICT (account) DO UPDATE SET
    minute_start = GREATEST(r.minute_start, $2::bigint),
    day_start    = GREATEST(r.day_start, $3::bigint),
    minute_count = CASE WHEN r.minute_start < $2::bigint THEN 0 ELSE r.minute_count END + CASE
        WHEN CASE WHEN r.minute_start < $2::bigint THEN 0 ELSE r.minute_count END < $4::bigint
         AND CASE WHEN r.day_start < $3::bigint THEN 0 ELSE r.day_count END < $5::bigint THEN 1 ELSE 0 END,
    day_count    = CASE WHEN r.day_start < $3::bigint THEN 0 ELSE r.day_count END + CASE
        WHEN CASE WHEN r.minute_start < $2::bigint THEN 0 ELSE r.minute_count END < $4::bigint
         AND CASE WHEN r.day_start < $3::bigint THEN 0 ELSE r.day_count END < $5::bigint THEN 1 ELSE 0 END
WHERE r.minute_start < $2::bigint OR r.day_start < $3::bigint
   OR (r.minute_count < $4::bigint AND r.day_count < $5::bigint)
RETURNING minute_start, minute_count, day_start, day_count`

// Take counts one request of account at now, unless the minute or the day
// window is already full, and reports both windows after the request. The
// error is ctx's if ctx is done before the request is counted, or the
// database's.
func (r *RateLimiter) Take(ctx context.Context, account string, l ams.Limits, now time.Time) (ams.RateDecision, error) {
	if err := ctx.Err(); err != nil {
		return ams.RateDecision{}, err
	}
	minuteStart, dayStart := ratelimit.Starts(now)
	var s ratelimit.State
	err := r.db.pool.QueryRow(ctx, takeSQL, account, minuteStart, dayStart, int64(l.PerMinute), int64(l.PerDay)).
		Scan(&s.MinuteStart, &s.Minute, &s.DayStart, &s.Day)
	if err == nil {
		return ratelimit.Decision(s.Minute > 0 && s.Day > 0, l, s), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return ams.RateDecision{}, fmt.Errorf("rate limit: %w", err)
	}
	// Refused without a change: report the row as it is (both windows are
	// now's or newer, or it would have been updated).
	err = r.db.pool.QueryRow(ctx, `SELECT minute_start, minute_count, day_start, day_count FROM rate_limits WHERE account = $1`, account).
		Scan(&s.MinuteStart, &s.Minute, &s.DayStart, &s.Day)
	if errors.Is(err, pgx.ErrNoRows) {
		// Purged in between (its day had passed): nothing is counted.
		s = ratelimit.State{MinuteStart: minuteStart, DayStart: dayStart}
	} else if err != nil {
		return ams.RateDecision{}, fmt.Errorf("rate limit: %w", err)
	}
	return ratelimit.Decision(false, l, s), nil
}
