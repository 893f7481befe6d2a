// Package format is the one way ams writes numbers and dates for people:
// on the account pages (package pages, through its template functions),
// in the usage charts (package usage) and in the e-mails (package
// account). Machine-readable forms (the API's RFC 3339 times, <time
// datetime> attributes) are not its business.
//
// Numbers have thousands separators: 1234567 is "1,234,567". Dates are
// day, month and year, "24 Nov 2026"; times add the 24-hour clock and the
// zone's abbreviation, "24 Nov 2026 18:30 UTC". Inside a chart, where the
// year is plain, "24 Nov" and "24 Nov 18:30".
package format

import (
	"strconv"
	"time"
)

// Layouts of dates and times (time.Time.Format).
const (
	TimeLayout    = "2 Jan 2006 15:04 MST"
	DateLayout    = "2 Jan 2006"
	DayLayout     = "2 Jan"
	DayTimeLayout = "2 Jan 15:04"
)

// Number formats n with thousands separators: 10000 is "10,000".
func Number[T ~int | ~int32 | ~int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// Time formats t in loc (nil: UTC) as date and time: "24 Nov 2026 18:30 UTC".
func Time(t time.Time, loc *time.Location) string { return in(t, loc).Format(TimeLayout) }

// Date formats t in loc (nil: UTC) as a date: "24 Nov 2026".
func Date(t time.Time, loc *time.Location) string { return in(t, loc).Format(DateLayout) }

func in(t time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc)
}
