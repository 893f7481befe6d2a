package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// loginFailureRetention is how long Purge keeps a failed login: the
// longest window a Throttle may have.
const loginFailureRetention = 24 * time.Hour

// Throttle counts failed logins in the database (table login_failures), so
// that every process serving it throttles together: five wrong passwords
// spread over several processes block the sixth attempt in all of them.
// It implements oauth.LoginThrottle with the rules of oauth.MemoryThrottle:
// after max failures of a key within window, the key is blocked until the
// oldest of its last max failures leaves the window. (Failures are ordered
// by their time, where the memory throttle orders them by arrival and
// forgets them once a call's now has left them out of the window; the two
// differ only when the clock steps back.)
type Throttle struct {
	db     *DB
	max    int
	window time.Duration
}

// LoginThrottle returns a throttle on the database that blocks a key after
// max failures within window. It panics if max is below 1 or window is not
// in (0, 24h]: Purge forgets failures after 24 hours.
func (db *DB) LoginThrottle(max int, window time.Duration) *Throttle {
	if max < 1 || window <= 0 || window > loginFailureRetention {
		panic(fmt.Sprintf("postgres: LoginThrottle(%d, %v): max must be 1 or more and window in (0, %v]", max, window, loginFailureRetention))
	}
	return &Throttle{db: db, max: max, window: window}
}

// Blocked reports whether key has max failures within the window at now,
// and until when: the time the oldest of its last max failures leaves the
// window.
func (t *Throttle) Blocked(ctx context.Context, key string, now time.Time) (time.Time, bool, error) {
	var at int64
	err := t.db.pool.QueryRow(ctx, `SELECT at FROM login_failures WHERE key = $1 AND at > $2 ORDER BY at DESC OFFSET $3 LIMIT 1`,
		key, now.Add(-t.window).UnixNano(), t.max-1).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	} else if err != nil {
		return time.Time{}, false, fmt.Errorf("login throttle: %w", err)
	}
	return time.Unix(0, at).UTC().Add(t.window), true, nil
}

// Failed records a failed login of key at now. It also deletes the key's
// failures that no longer matter: those out of the window, and those older
// than its last max (so guessing at one address cannot grow the table).
func (t *Throttle) Failed(ctx context.Context, key string, now time.Time) error {
	// The DELETE does not see the row the INSERT adds (one snapshot): it
	// keeps the max newest of the others, so at most max+1 rows remain.
	_, err := t.db.pool.Exec(ctx, `
WITH added AS (INSERT INTO login_failures (key, at) VALUES ($1, $2))
DELETE FROM login_failures WHERE key = $1 AND (at <= $3
    OR at < (SELECT at FROM login_failures WHERE key = $1 ORDER BY at DESC OFFSET $4 LIMIT 1))`,
		key, now.UnixNano(), now.Add(-t.window).UnixNano(), t.max-1)
	if err != nil {
		return fmt.Errorf("login throttle: %w", err)
	}
	return nil
}

// Reset forgets the failures of key.
func (t *Throttle) Reset(ctx context.Context, key string) error {
	if _, err := t.db.pool.Exec(ctx, `DELETE FROM login_failures WHERE key = $1`, key); err != nil {
		return fmt.Errorf("login throttle: %w", err)
	}
	return nil
}
