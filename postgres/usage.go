package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/amsdev/ams"
)

// AddUsage adds per-minute request counts to the stored ones with one
// statement. The rows go in in the order of their key (ams.MergeUsage
// sorts them), so that processes adding the same minutes lock the rows in
// the same order and never deadlock.
func (db *DB) AddUsage(ctx context.Context, rows []ams.UsageCount) error {
	rows = ams.MergeUsage(rows)
	if len(rows) == 0 {
		return nil
	}
	users := make([]string, len(rows))
	minutes, allowed, refused := make([]int64, len(rows)), make([]int64, len(rows)), make([]int64, len(rows))
	for i, r := range rows {
		users[i], minutes[i], allowed[i], refused[i] = r.UserID, ms(r.Minute), r.Allowed, r.Refused
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO usage_minutes AS u (user_id, minute_start, allowed, refused)
		SELECT r.user_id, r.minute_start, r.allowed, r.refused
		FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS r(user_id, minute_start, allowed, refused, n)
		ORDER BY n
		ON CONFLICT (user_id, minute_start) DO UPDATE
		SET allowed = u.allowed + EXCLUDED.allowed, refused = u.refused + EXCLUDED.refused`,
		users, minutes, allowed, refused); err != nil {
		return fmt.Errorf("add usage: %w", err)
	}
	return nil
}

// UsageSeries returns the account's requests from from until to in
// buckets of step, empty buckets included.
func (db *DB) UsageSeries(ctx context.Context, userID string, from, to time.Time, step time.Duration) ([]ams.UsagePoint, error) {
	pts, from, err := ams.NewUsageSeries(from, to, step)
	if err != nil || len(pts) == 0 {
		return pts, err
	}
	end := pts[len(pts)-1].Start.Add(step)
	rows, err := db.pool.Query(ctx, `SELECT (minute_start - $1) / $2, sum(allowed)::bigint, sum(refused)::bigint FROM usage_minutes
		WHERE user_id = $3 AND minute_start >= $1 AND minute_start < $4 GROUP BY 1`,
		ms(from), step.Milliseconds(), userID, ms(end))
	if err != nil {
		return nil, fmt.Errorf("usage series: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i, allowed, refused int64
		if err := rows.Scan(&i, &allowed, &refused); err != nil {
			return nil, fmt.Errorf("usage series: %w", err)
		}
		if i >= 0 && i < int64(len(pts)) {
			pts[i].Allowed, pts[i].Refused = allowed, refused
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage series: %w", err)
	}
	return pts, nil
}
