package pages

import (
	"net/http"
	"strconv"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/format"
	"github.com/amsdev/ams/usage"
)

// usageData is the data of the usage page.
type usageData struct {
	Plan   ams.Plan
	Limits ams.Limits
	// PerMinute and PerDay are the limits, formatted ("10,000").
	PerMinute, PerDay string
	// ThisMinute and Today are the requests counted so far in the current
	// clock minute and UTC day (stored counts, so up to Lag behind), and
	// the refused ones (429) among them; formatted.
	ThisMinute, ThisMinuteRefused string
	Today, TodayRefused           string
	// MinutePct and DayPct are the allowed requests of the current
	// minute and day as a share of the limits, in percent (at most 100).
	MinutePct, DayPct int
	MinuteChart       *usage.Chart
	DayChart          *usage.Chart
	// Lag is how far behind the counts may be (usage.FlushInterval).
	Lag string
	// Zone is the user's time zone, in which the minutes are labelled.
	Zone string
	// TokensToday and Tokens30d are the model tokens of the account's
	// turns started today (UTC) and in the last 30 days: input, output
	// and total, formatted.
	TokensToday, Tokens30d tokenFigures
}

// tokenFigures are a usage's token counts, formatted.
type tokenFigures struct{ Input, Output, Total string }

func tokensOf(u ams.Usage) tokenFigures {
	return tokenFigures{thousands(u.InputTokens), thousands(u.OutputTokens), thousands(u.TotalTokens)}
}

// usage shows the account's plan, its limits, and its requests per minute
// over the last 24 hours and per day over the last 30 UTC days, each
// against its limit (usage.Load and usage.Chart).
func (s *Server) usage(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	rep, err := usage.Load(r.Context(), s.Store, c.User, c.Now)
	if err != nil {
		return nil, err
	}
	var minute ams.UsagePoint
	if n := len(rep.Minutes); n > 0 {
		minute = rep.Minutes[n-1]
	}
	today := rep.Today()
	day := c.Now.UTC().Truncate(24 * time.Hour)
	tokToday, err := s.Store.TokenTotals(r.Context(), c.User.ID, day)
	if err != nil {
		return nil, err
	}
	tok30, err := s.Store.TokenTotals(r.Context(), c.User.ID, day.AddDate(0, 0, -29))
	if err != nil {
		return nil, err
	}
	return &usageData{
		TokensToday:       tokensOf(tokToday),
		Tokens30d:         tokensOf(tok30),
		Plan:              rep.Plan,
		Limits:            rep.Limits,
		PerMinute:         thousands(int64(rep.Limits.PerMinute)),
		PerDay:            thousands(int64(rep.Limits.PerDay)),
		ThisMinute:        thousands(minute.Total()),
		ThisMinuteRefused: thousands(minute.Refused),
		Today:             thousands(today.Total()),
		TodayRefused:      thousands(today.Refused),
		MinutePct:         percent(minute.Allowed, rep.Limits.PerMinute),
		DayPct:            percent(today.Allowed, rep.Limits.PerDay),
		MinuteChart:       rep.MinuteChart(c.Location()),
		DayChart:          rep.DayChart(),
		Lag:               seconds(usage.FlushInterval),
		Zone:              c.Location().String(),
	}, nil
}

// percent is n as a share of limit, in whole percent, at most 100.
func percent(n int64, limit int) int {
	if limit <= 0 {
		return 0
	}
	return int(min(100, n*100/int64(limit)))
}

// thousands formats n with thousands separators: 10000 is "10,000".
func thousands(n int64) string { return format.Number(n) }

// seconds says a duration in words: "10 seconds", "1 minute".
func seconds(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		if d == time.Minute {
			return "1 minute"
		}
		return strconv.Itoa(int(d/time.Minute)) + " minutes"
	}
	n := int((d + time.Second - 1) / time.Second)
	if n == 1 {
		return "1 second"
	}
	return strconv.Itoa(n) + " seconds"
}
