package sqlstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/amsdev/ams"
)

// usageChunk is how many rows one INSERT of AddUsage carries.
const usageChunk = 500

// AddUsage adds per-minute request counts to the stored ones, in one
// transaction. The rows go in in the order of their key (ams.MergeUsage
// sorts them), so that processes adding the same minutes lock the rows in
// the same order and never deadlock.
func (q *Queries) AddUsage(ctx context.Context, rows []ams.UsageCount) error {
	rows = ams.MergeUsage(rows)
	if len(rows) == 0 {
		return nil
	}
	return q.inTx(ctx, func(q *Queries) error {
		for len(rows) > 0 {
			n := min(len(rows), usageChunk)
			args := make([]any, 0, 4*n)
			for _, r := range rows[:n] {
				args = append(args, r.UserID, MS(r.Minute), r.Allowed, r.Refused)
			}
			query := `INSERT INTO usage_minutes AS u (user_id, minute_start, allowed, refused) VALUES ` + valueRows(n, 4) + `
				ON CONFLICT (user_id, minute_start) DO UPDATE SET allowed = u.allowed + excluded.allowed, refused = u.refused + excluded.refused`
			if _, err := q.exec(ctx, "add usage", query, args...); err != nil {
				return err
			}
			rows = rows[n:]
		}
		return nil
	})
}

// valueRows returns the rows of a multi-row VALUES list of n rows of
// width arguments each: "($1, ..., $width), ($width+1, ...), ...".
func valueRows(n, width int) string {
	if n > maxCachedRows {
		return makeValueRows(n, width)
	}
	k := [2]int{n, width}
	if s, ok := valueRowsCache.Load(k); ok {
		return s.(string)
	}
	s := makeValueRows(n, width)
	valueRowsCache.Store(k, s)
	return s
}

// maxCachedRows bounds the rows of the statements that valueRows and
// fanOut keep once made (those of every write's multi-row INSERTs, which
// take 64 rows at most; a larger one is made each time).
const maxCachedRows = 64

// valueRowsCache holds valueRows' lists ([n, width] → string).
var valueRowsCache sync.Map

// makeValueRows makes valueRows' list.
func makeValueRows(n, width int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + placeholders(width*i+1, width) + ")")
	}
	return b.String()
}

// placeholders returns "$from, $from+1, ..." for n arguments.
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

// UsageSeries returns the account's requests from from until to in
// buckets of step, empty buckets included.
func (q *Queries) UsageSeries(ctx context.Context, userID string, from, to time.Time, step time.Duration) ([]ams.UsagePoint, error) {
	pts, from, err := ams.NewUsageSeries(from, to, step)
	if err != nil || len(pts) == 0 {
		return pts, err
	}
	end := pts[len(pts)-1].Start.Add(step)
	type bucket struct{ i, allowed, refused int64 }
	bs, err := collect(ctx, q.r, "usage", func(s scanner) (b bucket, err error) {
		return b, s.Scan(&b.i, &b.allowed, &b.refused)
	}, `SELECT (minute_start - $1) / $2, CAST(sum(allowed) AS BIGINT), CAST(sum(refused) AS BIGINT) FROM usage_minutes
		WHERE user_id = $3 AND minute_start >= $1 AND minute_start < $4 GROUP BY 1`,
		MS(from), step.Milliseconds(), userID, MS(end))
	if err != nil {
		return nil, err
	}
	for _, b := range bs {
		if b.i >= 0 && b.i < int64(len(pts)) {
			pts[b.i].Allowed, pts[b.i].Refused = b.allowed, b.refused
		}
	}
	return pts, nil
}

// Placeholders returns "$1, $2, ..., $n".
func Placeholders(n int) string { return placeholders(1, n) }
