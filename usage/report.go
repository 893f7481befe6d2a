package usage

import (
	"context"
	"time"

	"github.com/amsdev/ams"
)

// Report is one account's usage as the usage page shows it.
type Report struct {
	Plan   ams.Plan
	Limits ams.Limits
	Now    time.Time
	// Minutes are the last 24 hours by the minute: 1440 buckets, the last
	// one now's minute (still counting). The counts of the last
	// FlushInterval may not be stored yet.
	Minutes []ams.UsagePoint
	// Days are the last 30 UTC days by the day, the days of the daily
	// limit: 30 buckets, the last one today (still counting).
	Days []ams.UsagePoint
}

// SeriesReader is what Load reads: the usage series of ams.UsageStore.
type SeriesReader interface {
	UsageSeries(ctx context.Context, userID string, from, to time.Time, step time.Duration) ([]ams.UsagePoint, error)
}

// Load reads the usage of account u at now from store.
func Load(ctx context.Context, store SeriesReader, u *ams.User, now time.Time) (*Report, error) {
	now = now.UTC()
	minute := now.Truncate(time.Minute)
	minutes, err := store.UsageSeries(ctx, u.ID, minute.Add(-(24*time.Hour - time.Minute)), minute.Add(time.Minute), time.Minute)
	if err != nil {
		return nil, err
	}
	today := now.Truncate(24 * time.Hour) // Truncate is absolute: 00:00 UTC
	days, err := store.UsageSeries(ctx, u.ID, today.AddDate(0, 0, -29), today.AddDate(0, 0, 1), 24*time.Hour)
	if err != nil {
		return nil, err
	}
	return &Report{Plan: u.Plan, Limits: u.Limits(), Now: now, Minutes: minutes, Days: days}, nil
}

// Today returns today's (UTC) bucket: the requests counted against the
// daily limit so far.
func (r *Report) Today() ams.UsagePoint {
	if len(r.Days) == 0 {
		return ams.UsagePoint{}
	}
	return r.Days[len(r.Days)-1]
}

// MinuteChart is the chart of the last 24 hours by the minute against the
// per-minute limit, its times labelled in loc (nil: UTC).
func (r *Report) MinuteChart(loc *time.Location) *Chart {
	return &Chart{ID: "usage-minutes", Title: "Requests per minute, last 24 hours", Points: r.Minutes, Step: time.Minute,
		Limit: r.Limits.PerMinute, Location: loc}
}

// DayChart is the chart of the last 30 UTC days against the daily limit.
func (r *Report) DayChart() *Chart {
	return &Chart{ID: "usage-days", Title: "Requests per day, last 30 days", Points: r.Days, Step: 24 * time.Hour,
		Limit: r.Limits.PerDay}
}
