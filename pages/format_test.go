package pages_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// monthFirst is a date written month first ("Nov 21"), which no page
// uses: dates are day first ("21 Nov 2026").
var monthFirst = regexp.MustCompile(`\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2}\b`)

// dayFirst is a date as the pages write it, with a year or in a chart.
var dayFirst = regexp.MustCompile(`\b\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)( \d{4})?( \d\d:\d\d)?\b`)

// isoText is an ISO 8601 date or time in the visible text (machine forms
// belong in <time datetime> attributes only).
var isoText = regexp.MustCompile(`\b20\d\d-\d\d-\d\d(T| \d)`)

// TestNumberAndDateFormats renders the account pages of an account with
// large limits and counts and checks that every number is written with
// thousands separators ("12,345") and every date day first in the one
// format ("21 Nov 2026 10:00 UTC", "21 Nov 2026"; in the usage charts "21
// Nov"), on every page.
func TestNumberAndDateFormats(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	h, err := e.f.App.Accounts.HashPassword("format password 1")
	if err != nil {
		t.Fatal(err)
	}
	plan, rpm, rpd := ams.PlanEnterprise, 12345, 1234567
	if _, err := e.f.Data.UpdateUser(ctx, e.f.User.ID, ams.UserUpdate{Plan: &plan, RPM: &rpm, RPD: &rpd, PasswordHash: &h}, e.f.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	// Over a thousand requests this minute, and more earlier today.
	now := e.f.Clock.Now().Truncate(time.Minute)
	if err := e.f.Data.AddUsage(ctx, []ams.UsageCount{{UserID: e.f.User.ID, Minute: now, Allowed: 1234, Refused: 1001},
		{UserID: e.f.User.ID, Minute: now.Add(-time.Hour), Allowed: 20000}}); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(e.f.User.Email, "format password 1")
	pages := map[string][]string{
		"/account":            {"12,345 requests per minute, 1,234,567 per day", "member since 21 Nov 2026"},
		"/account/usage":      {"12,345 requests per minute, 1,234,567 per day", "2,235", "1,001 refused", "22,235", "21 Nov"},
		"/account/keys":       {"21 Nov 2026"},
		"/account/assistants": {"21 Nov 2026"},
		"/account/apps":       nil,
		"/account/webhooks":   nil,
		"/account/password":   nil,
		"/account/assistants/" + e.f.Assistant.ID: {"created 21 Nov 2026"},
	}
	for path, want := range pages {
		p := b.get(path)
		p.mustStatus(200)
		p.mustContain(want...)
		txt := p.text()
		if m := monthFirst.FindString(dayFirst.ReplaceAllString(txt, "DATE")); m != "" {
			i := strings.Index(txt, m)
			t.Errorf("%s writes a date month first: %q in %q", path, m, txt[max(0, i-80):min(len(txt), i+40)])
		}
		if m := isoText.FindString(txt); m != "" {
			t.Errorf("%s shows an ISO date as text: %q", path, m)
		}
		for _, raw := range []string{"12345", "1234567"} {
			if strings.Contains(txt, raw) {
				t.Errorf("%s shows %s without thousands separators", path, raw)
			}
		}
	}
	if p := b.get("/account/usage"); !dayFirst.MatchString(p.text()) {
		t.Error("the usage page has no day-first date")
	}
}
