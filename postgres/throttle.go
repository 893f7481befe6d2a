package postgres

import (
	"context"
	"fmt"
	"time"
)

// loginFailureRetention is how long Purge keeps a failed login: the
// longest retention a Throttle may have.
const loginFailureRetention = 24 * time.Hour

// Throttle stores failed sign-ins in the database (table login_failures),
// so that every process serving it throttles together: failures spread
// over several processes add up. It implements oauth.LoginThrottle like
// oauth.MemoryThrottle: it keeps the last keep failures of each key for
// retention. (Failures are ordered by their time, as the memory throttle
// orders them.)
type Throttle struct {
	db        *DB
	keep      int
	retention time.Duration
}

// LoginThrottle returns a throttle on the database that keeps the last
// keep failures of each key for retention. It panics if keep is below 1
// or retention is not in (0, 24h]: Purge forgets failures after 24 hours.
func (db *DB) LoginThrottle(keep int, retention time.Duration) *Throttle {
	if keep < 1 || retention <= 0 || retention > loginFailureRetention {
		panic(fmt.Sprintf("postgres: LoginThrottle(%d, %v): keep must be 1 or more and retention in (0, %v]", keep, retention, loginFailureRetention))
	}
	return &Throttle{db: db, keep: keep, retention: retention}
}

// Recent returns the times of key's failures after since, newest first,
// at most n (and at most keep, as the memory throttle keeps: Failed may
// leave one more row).
func (t *Throttle) Recent(ctx context.Context, key string, since time.Time, n int) ([]time.Time, error) {
	rows, err := t.db.pool.Query(ctx, `SELECT at FROM login_failures WHERE key = $1 AND at > $2 ORDER BY at DESC LIMIT $3`,
		key, since.UnixNano(), min(n, t.keep))
	if err != nil {
		return nil, fmt.Errorf("login throttle: %w", err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var at int64
		if err := rows.Scan(&at); err != nil {
			return nil, fmt.Errorf("login throttle: %w", err)
		}
		out = append(out, time.Unix(0, at).UTC())
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("login throttle: %w", err)
	}
	return out, nil
}

// Failed records a failed login of key at now. It also deletes the key's
// failures that no longer matter: those out of retention, and those older
// than its last keep (so guessing at one key cannot grow the table).
func (t *Throttle) Failed(ctx context.Context, key string, now time.Time) error {
	// The DELETE does not see the row the INSERT adds (one snapshot): it
	// keeps the keep newest of the others, so at most keep+1 rows remain.
	_, err := t.db.pool.Exec(ctx, `
WITH added AS (INSERT INTO login_failures (key, at) VALUES ($1, $2))
DELETE FROM login_failures WHERE key = $1 AND (at <= $3
    OR at < (SELECT at FROM login_failures WHERE key = $1 ORDER BY at DESC OFFSET $4 LIMIT 1))`,
		key, now.UnixNano(), now.Add(-t.retention).UnixNano(), t.keep-1)
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
