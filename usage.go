package ams

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// UsageRetention is how long an account's per-minute request counts are
// kept: long enough for a chart of the last 30 UTC days (the oldest of
// which began less than 30 days ago) with a day to spare.
const UsageRetention = 31 * 24 * time.Hour

// MaxUsageBuckets is the most buckets UsageSeries answers: every minute of
// UsageRetention.
const MaxUsageBuckets = int(UsageRetention / time.Minute)

// UsageCount is the number of an account's /v1 requests that the rate
// limiter counted (Allowed) or refused with a 429 (Refused) in one clock
// minute.
type UsageCount struct {
	UserID  string
	Minute  time.Time // the minute's start (UTC, whole minute)
	Allowed int64
	Refused int64
}

// UsagePoint is one bucket of a usage series: the requests of the bucket
// [Start, Start+step).
type UsagePoint struct {
	Start   time.Time
	Allowed int64
	Refused int64
}

// Total is the bucket's requests, allowed and refused.
func (p UsagePoint) Total() int64 { return p.Allowed + p.Refused }

// UsageStore keeps per-minute request counts of accounts.
type UsageStore interface {
	// AddUsage adds the counts of rows to the stored ones, in one
	// transaction: a row of an (account, minute) already stored adds to
	// it, so that every process may add its own counts of the same
	// minute. Rows of the same (account, minute) in rows add up too.
	AddUsage(ctx context.Context, rows []UsageCount) error
	// UsageSeries returns the account's requests from from (truncated to
	// the minute) until to, in buckets of step (a whole number of
	// minutes): bucket i covers [from+i*step, from+(i+1)*step), the last
	// one ends at or after to. Every bucket is present, empty ones with
	// zeros. At most MaxUsageBuckets; EINVALID otherwise.
	UsageSeries(ctx context.Context, userID string, from, to time.Time, step time.Duration) ([]UsagePoint, error)
}

// NewUsageSeries validates the arguments of UsageStore.UsageSeries and
// returns the empty buckets, with from truncated to the minute; the
// engines fill them.
func NewUsageSeries(from, to time.Time, step time.Duration) ([]UsagePoint, time.Time, error) {
	from = from.UTC().Truncate(time.Minute)
	if step < time.Minute || step%time.Minute != 0 {
		return nil, from, Errorf(EINVALID, "parameter_invalid", "A usage series' step must be a whole number of minutes, not %s.", step)
	}
	if !to.After(from) {
		return []UsagePoint{}, from, nil
	}
	d := to.Sub(from)
	n := int64(d / step)
	if d%step != 0 {
		n++
	}
	if n > int64(MaxUsageBuckets) {
		return nil, from, Errorf(EINVALID, "parameter_invalid", "A usage series has at most %d buckets, not %d.", MaxUsageBuckets, n)
	}
	pts := make([]UsagePoint, n)
	for i := range pts {
		pts[i].Start = from.Add(time.Duration(i) * step)
	}
	return pts, from, nil
}

// MergeUsage returns rows with the rows of one (account, minute) added
// together and those with no requests left out, ordered by account and
// minute (the order in which the engines lock them, so that two
// processes adding the same rows never wait on each other in a cycle).
// Minutes are truncated to the whole minute, in UTC.
func MergeUsage(rows []UsageCount) []UsageCount {
	type key struct {
		user   string
		minute int64
	}
	sums := make(map[key]*UsageCount, len(rows))
	out := make([]UsageCount, 0, len(rows))
	for _, r := range rows {
		if r.Allowed == 0 && r.Refused == 0 {
			continue
		}
		m := r.Minute.UTC().Truncate(time.Minute)
		k := key{r.UserID, m.UnixMilli()}
		if s, ok := sums[k]; ok {
			s.Allowed += r.Allowed
			s.Refused += r.Refused
			continue
		}
		out = append(out, UsageCount{UserID: r.UserID, Minute: m, Allowed: r.Allowed, Refused: r.Refused})
		sums[k] = &out[len(out)-1] // out never grows past its capacity
	}
	slices.SortFunc(out, func(a, b UsageCount) int {
		return cmp.Or(cmp.Compare(a.UserID, b.UserID), a.Minute.Compare(b.Minute))
	})
	return out
}
