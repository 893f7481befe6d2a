package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/amsdev/ams"
)

// usageChunk is the most rows one INSERT of AddUsage carries (four
// parameters each, far below SQLite's limit of 32766).
const usageChunk = 500

// AddUsage adds per-minute request counts to the stored ones, in one
// transaction.
func (db *DB) AddUsage(ctx context.Context, rows []ams.UsageCount) error {
	rows = ams.MergeUsage(rows)
	if len(rows) == 0 {
		return nil
	}
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("add usage: begin: %w", err)
	}
	defer tx.Rollback()
	for len(rows) > 0 {
		n := min(len(rows), usageChunk)
		var q strings.Builder
		q.WriteString(`INSERT INTO usage_minutes (user_id, minute_start, allowed, refused) VALUES `)
		args := make([]any, 0, 4*n)
		for i, r := range rows[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			args = append(args, r.UserID, ms(r.Minute), r.Allowed, r.Refused)
		}
		q.WriteString(` ON CONFLICT (user_id, minute_start) DO UPDATE
			SET allowed = allowed + excluded.allowed, refused = refused + excluded.refused`)
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("add usage: %w", err)
		}
		rows = rows[n:]
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("add usage: commit: %w", err)
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
	rows, err := db.rq.QueryContext(ctx, `SELECT (minute_start - ?) / ?, sum(allowed), sum(refused) FROM usage_minutes
		WHERE user_id = ? AND minute_start >= ? AND minute_start < ? GROUP BY 1`,
		ms(from), step.Milliseconds(), userID, ms(from), ms(end))
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
