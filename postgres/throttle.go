package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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
	if _, err := t.db.pool.Exec(ctx, failedSQL, t.failedArgs(key, now)...); err != nil {
		return fmt.Errorf("login throttle: %w", err)
	}
	return nil
}

// failedSQL is Failed's statement. The DELETE does not see the row the
// INSERT adds (one snapshot): it keeps the keep newest of the others, so
// at most keep+1 rows remain.
const failedSQL = `
WITH added AS (INSERT INTO login_failures (key, at) VALUES ($1, $2))
DELETE FROM login_failures WHERE key = $1 AND (at <= $3
    OR at < (SELECT at FROM login_failures WHERE key = $1 ORDER BY at DESC OFFSET $4 LIMIT 1))`

func (t *Throttle) failedArgs(key string, now time.Time) []any {
	return []any{key, now.UnixNano(), now.Add(-t.retention).UnixNano(), t.keep - 1}
}

// Admit implements oauth.LoginThrottle's Admit: the read and the record are made
// in one transaction that first takes an advisory lock on the key (in
// this schema), so that attempts racing in any number of processes take
// their turns.
func (t *Throttle) Admit(ctx context.Context, key string, since, now time.Time, max int, rule func([]time.Time) time.Time) (time.Time, error) {
	var next time.Time
	err := pgx.BeginFunc(ctx, t.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('ams.login_throttle'), hashtext($1))`,
			t.db.schema+" "+key); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT at FROM login_failures WHERE key = $1 AND at > $2 ORDER BY at DESC LIMIT $3`,
			key, since.UnixNano(), min(max, t.keep))
		if err != nil {
			return err
		}
		ats, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		ts := make([]time.Time, len(ats))
		for i, at := range ats {
			ts[i] = time.Unix(0, at).UTC()
		}
		if next = rule(ts); next.After(now) {
			return nil
		}
		next = time.Time{}
		_, err = tx.Exec(ctx, failedSQL, t.failedArgs(key, now)...)
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("login throttle: %w", err)
	}
	return next, nil
}

// Withdraw forgets one failure of key recorded at at.
func (t *Throttle) Withdraw(ctx context.Context, key string, at time.Time) error {
	_, err := t.db.pool.Exec(ctx, `DELETE FROM login_failures WHERE ctid = (
    SELECT ctid FROM login_failures WHERE key = $1 AND at = $2 LIMIT 1)`, key, at.UnixNano())
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
