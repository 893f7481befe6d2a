package pages_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/usage"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/net/html"
)

// cheapUser creates an approved account with the password "correct
// horse battery", hashed at bcrypt's minimum cost so that signing in is
// fast (env.user hashes at the production cost).
func cheapUser(e *env, email string) *ams.User {
	e.t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse battery"), bcrypt.MinCost)
	if err != nil {
		e.t.Fatal(err)
	}
	now := e.f.Clock.Now()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: email, PasswordHash: string(hash), Plan: ams.PlanStandard,
		Timezone: "UTC", CreatedAt: now, UpdatedAt: now, ApprovedAt: &now}
	if err := e.f.Store.CreateUser(e.t.Context(), u); err != nil {
		e.t.Fatal(err)
	}
	return u
}

// tableRow returns the cells (th and td, text trimmed) of the row of the
// table under n whose first cell is first; nil if there is none.
func tableRow(n *html.Node, first string) []string {
	var found []string
	walk(n, func(c *html.Node) bool {
		if found != nil {
			return false
		}
		if c.Type != html.ElementNode || c.Data != "tr" {
			return true
		}
		var cells []string
		for td := c.FirstChild; td != nil; td = td.NextSibling {
			if td.Type == html.ElementNode && (td.Data == "th" || td.Data == "td") {
				cells = append(cells, strings.Join(strings.Fields(textOf(td)), " "))
			}
		}
		if len(cells) > 0 && cells[0] == first {
			found = cells
		}
		return false
	})
	return found
}

// elementText is the text of the element with id on p, whitespace
// collapsed; the test fails if there is none.
func elementText(t *testing.T, p *page, id string) string {
	t.Helper()
	n := p.byID(id)
	if n == nil {
		t.Fatalf("no #%s on %s (status %d):\n%s", id, p.url, p.status, p.text())
	}
	return strings.Join(strings.Fields(textOf(n)), " ")
}

// The usage page shows the plan, its limits and the account's requests
// (counted by a usage.Recorder and flushed, or stored directly) in both
// charts and their tables, in the user's time zone for minutes and UTC
// for days; another account's requests are not shown.
func TestUsagePage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ann := cheapUser(e, "ann.usage@example.com")
	berlin := "Europe/Berlin"
	if _, err := e.f.Store.UpdateUser(ctx, ann.ID, ams.UserUpdate{Timezone: &berlin}, e.f.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	bob := cheapUser(e, "bob.usage@example.com")

	// Through the Recorder, as ams serve counts API requests: ann's 57
	// allowed and 3 refused at 09:55 UTC (10:55 in Berlin), 5 in the
	// current minute (10:00 UTC); bob's 777 at 09:58.
	now := e.f.Clock.Now()
	if !now.Equal(amstest.Start) {
		t.Fatalf("clock at %s", now)
	}
	rec := usage.NewRecorder(e.f.Store)
	for i := range 60 {
		rec.Record(ann.ID, now.Add(-5*time.Minute+time.Duration(i)*time.Second/2), i < 57)
	}
	for range 5 {
		rec.Record(ann.ID, now.Add(10*time.Second), true)
	}
	for range 777 {
		rec.Record(bob.ID, now.Add(-2*time.Minute), true)
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Directly in the store: ann's 1,234 requests two days ago, bob's
	// 4,321 three days ago.
	if err := e.f.Store.AddUsage(ctx, []ams.UsageCount{
		{UserID: ann.ID, Minute: time.Date(2026, 11, 19, 12, 30, 0, 0, time.UTC), Allowed: 1234},
		{UserID: bob.ID, Minute: time.Date(2026, 11, 18, 8, 0, 0, 0, time.UTC), Allowed: 4321},
	}); err != nil {
		t.Fatal(err)
	}

	// Model tokens: ann's turns of today and of 40 days ago (out of the
	// 30 days), bob's of today.
	asst := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: ann.ID, Name: "T", Model: ams.ModelBuiltin, CreatedAt: now, UpdatedAt: now}
	if err := e.f.Store.CreateAssistant(ctx, asst); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at      time.Time
		in, out int64
	}{{now, 1200, 34}, {now.AddDate(0, 0, -3), 1000, 1000}, {now.AddDate(0, 0, -40), 99999, 1}} {
		conv := &ams.Conversation{ID: ams.NewID(ams.PrefixConversation), UserID: ann.ID, AssistantID: asst.ID, CreatedAt: c.at, UpdatedAt: c.at, LastMessageAt: c.at}
		in := &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: ann.ID, AssistantID: asst.ID, ConversationID: conv.ID, Direction: ams.DirectionInbound,
			Content: "hi", Metadata: ams.Metadata{}, CreatedAt: c.at, UpdatedAt: c.at}
		tr := &ams.Turn{ID: ams.NewID(ams.PrefixTurn), UserID: ann.ID, AssistantID: asst.ID, ConversationID: conv.ID, InboundMessageID: in.ID,
			Status: ams.TurnFailed, Usage: ams.Usage{InputTokens: c.in, OutputTokens: c.out}, CreatedAt: c.at, UpdatedAt: c.at, CompletedAt: &c.at}
		if err := e.f.Store.SaveExchange(ctx, &ams.Exchange{NewConversation: conv, ConversationID: conv.ID, Inbound: in, Turn: tr}); err != nil {
			t.Fatal(err)
		}
	}

	b := e.browser()
	b.signIn(ann.Email, "correct horse battery")
	p := b.get("/account/usage")
	if got := elementText(t, p, "usage-tokens-today"); got != "Today (UTC) 1,234 1,200 input, 34 output" {
		t.Errorf("tokens today: %q", got)
	}
	if got := elementText(t, p, "usage-tokens-30d"); got != "Last 30 days 3,234 2,200 input, 1,034 output" {
		t.Errorf("tokens, 30 days: %q", got)
	}
	p.mustStatus(http.StatusOK)
	if cc := p.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	if !strings.Contains(elementText(t, p, "main"), "Usage") {
		t.Fatal("no heading")
	}

	// Plan and limits, and the current minute and day.
	if got := elementText(t, p, "usage-plan"); got != "Plan standard 60 requests per minute, 10,000 per day" {
		t.Errorf("plan: %q", got)
	}
	if got := elementText(t, p, "usage-minute"); !strings.HasPrefix(got, "This minute 5 ") || !strings.Contains(got, "of 60 per minute") {
		t.Errorf("this minute: %q", got)
	}
	if got := elementText(t, p, "usage-today"); !strings.HasPrefix(got, "Today (UTC) 65 ") || !strings.Contains(got, "of 10,000 per day; 3 refused") {
		t.Errorf("today: %q", got)
	}
	if got := elementText(t, p, "usage-lag"); !strings.Contains(got, "lag behind by up to 10 seconds") {
		t.Errorf("lag note: %q", got)
	}

	// The minutes: summary (visible, and the SVG's description), and the
	// table by the hour in Berlin time.
	wantMin := "Peak 60 requests in one minute (21 Nov 10:55 Europe/Berlin); the limit is 60 per minute. 65 requests in all, 3 of them refused (429)."
	if got := elementText(t, p, "minutes-summary"); got != wantMin {
		t.Errorf("minutes summary:\n got %q\nwant %q", got, wantMin)
	}
	if got := elementText(t, p, "usage-minutes-desc"); got != wantMin {
		t.Errorf("minutes chart's <desc>: %q", got)
	}
	if got := elementText(t, p, "usage-minutes-title"); got != "Requests per minute, last 24 hours" {
		t.Errorf("minutes chart's <title>: %q", got)
	}
	minutes := p.byID("minutes-title").Parent
	if got := strings.Join(tableRow(minutes, "21 Nov 10:00"), "|"); got != "21 Nov 10:00|60|3|60" {
		t.Errorf("minutes table, 10:00 Berlin: %q", got)
	}
	if got := strings.Join(tableRow(minutes, "21 Nov 11:00"), "|"); got != "21 Nov 11:00|5|0|5" {
		t.Errorf("minutes table, 11:00 Berlin: %q", got)
	}
	if got := strings.Join(tableRow(minutes, "20 Nov 11:00"), "|"); got != "20 Nov 11:00|0|0|0" {
		t.Errorf("minutes table, the first hour: %q", got)
	}
	// The tables are collapsed: inside <details> without open.
	walk(p.doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.Data == "table" {
			d := n.Parent
			for d != nil && d.Data != "details" {
				d = d.Parent
			}
			if d == nil || hasAttr(d, "open") {
				t.Errorf("a table not in a closed <details>")
			}
		}
		return true
	})

	// The days, in UTC.
	wantDay := "Peak 1,234 requests in one day (19 Nov UTC); the limit is 10,000 per day. 1,299 requests in all, 3 of them refused (429)."
	if got := elementText(t, p, "days-summary"); got != wantDay {
		t.Errorf("days summary:\n got %q\nwant %q", got, wantDay)
	}
	if got := elementText(t, p, "usage-days-desc"); got != wantDay {
		t.Errorf("days chart's <desc>: %q", got)
	}
	days := p.byID("days-title").Parent
	for first, want := range map[string]string{
		"21 Nov": "21 Nov|65|3",
		"20 Nov": "20 Nov|0|0",
		"19 Nov": "19 Nov|1,234|0",
		"18 Nov": "18 Nov|0|0", // bob's day
		"23 Oct": "23 Oct|0|0", // the first of 30
	} {
		if got := strings.Join(tableRow(days, first), "|"); got != want {
			t.Errorf("days table, %s: %q, want %q", first, got, want)
		}
	}
	if row := tableRow(days, "22 Oct"); row != nil {
		t.Errorf("31 days shown: %q", row)
	}
	// Two charts with their limit lines.
	svgs := 0
	walk(p.doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.Data == "svg" {
			svgs++
			if attr(n, "role") != "img" {
				t.Errorf("svg role %q", attr(n, "role"))
			}
		}
		return true
	})
	if svgs != 2 {
		t.Errorf("%d charts", svgs)
	}
	p.mustNotContain("777", "4,321", "4321")

	// Bob sees his own, not ann's.
	b2 := e.browser()
	b2.signIn(bob.Email, "correct horse battery")
	p = b2.get("/account/usage")
	p.mustStatus(http.StatusOK)
	if got := elementText(t, p, "minutes-summary"); got != "Peak 777 requests in one minute (21 Nov 09:58 UTC); the limit is 60 per minute. 777 requests in all, 0 of them refused (429)." {
		t.Errorf("bob's minutes: %q", got)
	}
	if got := strings.Join(tableRow(p.byID("days-title").Parent, "19 Nov"), "|"); got != "19 Nov|0|0" {
		t.Errorf("bob's 19 Nov: %q", got)
	}
	p.mustNotContain("1,234", "1,299")
}

// The usage page is in the navigation, and needs a signed-in user.
func TestUsagePageNavAndSignIn(t *testing.T) {
	e := newEnv(t)
	u := cheapUser(e, "nav.usage@example.com")
	b := e.browser()
	p := b.get("/account/usage")
	if p.url.Path != "/login" {
		t.Fatalf("signed out: ended on %s", p.url)
	}
	b.signIn(u.Email, "correct horse battery")
	p = b.get("/account/usage")
	p.mustStatus(http.StatusOK)
	var current string
	walk(p.doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.Data == "a" && attr(n, "aria-current") == "page" {
			current = attr(n, "href")
		}
		return true
	})
	if current != "/account/usage" {
		t.Errorf("current nav entry %q", current)
	}
	if got := elementText(t, p, "minutes-summary"); got != "No requests; the limit is 60 per minute." {
		t.Errorf("no usage: %q", got)
	}
}
