package http_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/world"
	"github.com/emersion/go-ical"
)

// getFeed fetches a feed URL as a calendar app does: no credentials.
func getFeed(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func TestCalendarFeed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	svc := &world.Service{Store: f.Store, Clock: f.Clock.Now}
	ctx := context.Background()
	dentist, err := svc.CreateEvent(ctx, f.User.ID, f.Assistant.ID, json.RawMessage(
		`{"title":"Dentist","description":"Bring the card","location":"Main St 1","starts_at":"2026-11-22T15:00:00+01:00","ends_at":"2026-11-22T15:30:00+01:00","remind_at":"2026-11-22T14:45:00+01:00"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	lunch, err := svc.CreateEvent(ctx, f.User.ID, f.Assistant.ID, json.RawMessage(`{"title":"Lunch","starts_at":"2026-11-23T12:00:00Z"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	// Another account's event is not in the feed.
	bob := f.NewUser("bob@example.com", ams.PlanStandard)
	if _, err := svc.CreateEvent(ctx, bob.ID, f.NewAssistant(bob, "B").ID, json.RawMessage(`{"title":"Bob's","starts_at":"2026-11-23T12:00:00Z"}`), ""); err != nil {
		t.Fatal(err)
	}

	r := f.do("POST", "/v1/calendar/feed", "")
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	feed := r.json(t)
	url, _ := feed["url"].(string)
	id, _ := feed["id"].(string)
	if feed["object"] != "calendar_feed" || !strings.HasPrefix(url, f.Server.URL+"/calendar/feed/ams_cf_") || !strings.HasSuffix(url, ".ics") ||
		r.header.Get("Location") != "/v1/integrations/"+id || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("feed %s (Location %s)", r.body, r.header.Get("Location"))
	}
	token := strings.TrimSuffix(strings.TrimPrefix(url, f.Server.URL+"/calendar/feed/"), ".ics")

	status, header, body := getFeed(t, url)
	if status != 200 || !strings.HasPrefix(header.Get("Content-Type"), "text/calendar") {
		t.Fatalf("GET feed: %d %s %s", status, header.Get("Content-Type"), body)
	}
	cal, err := ical.NewDecoder(strings.NewReader(string(body))).Decode()
	if err != nil {
		t.Fatalf("the feed does not parse: %v\n%s", err, body)
	}
	byUID := map[string]ical.Event{}
	for _, e := range cal.Events() {
		uid, _ := e.Props.Text(ical.PropUID)
		byUID[uid] = e
	}
	if len(byUID) != 2 || byUID[dentist.ID].Component == nil || byUID[lunch.ID].Component == nil {
		t.Fatalf("feed events %v, want %s and %s", byUID, dentist.ID, lunch.ID)
	}
	d := byUID[dentist.ID]
	text := func(name string) string { s, _ := d.Props.Text(name); return s }
	if text(ical.PropSummary) != "Dentist" || text(ical.PropDescription) != "Bring the card" || text(ical.PropLocation) != "Main St 1" ||
		d.Props.Get(ical.PropDateTimeStart).Value != "20261122T140000Z" || d.Props.Get(ical.PropDateTimeEnd).Value != "20261122T143000Z" ||
		d.Props.Get(ical.PropLastModified) == nil {
		t.Fatalf("dentist in the feed: %v", d.Props)
	}
	if len(d.Children) != 1 || d.Children[0].Name != ical.CompAlarm {
		t.Fatalf("no VALARM: %v", d.Children)
	}
	if trig, err := d.Children[0].Props.Get(ical.PropTrigger).Duration(); err != nil || trig != -15*time.Minute {
		t.Fatalf("trigger %v %v", trig, err)
	}
	if len(byUID[lunch.ID].Children) != 0 {
		t.Fatal("an event without remind_at has an alarm")
	}

	// Other tokens: 404, whatever is wrong with them.
	wrongSecret := token[:len(token)-4] + "AAAA"
	if strings.HasSuffix(token, "AAAA") {
		wrongSecret = token[:len(token)-4] + "BBBB"
	}
	for _, bad := range []string{wrongSecret, "ams_cf_nope", strings.Replace(token, "ams_cf_", "ams_sk_", 1), token + "x"} {
		if status, _, _ := getFeed(t, f.Server.URL+"/calendar/feed/"+bad+".ics"); status != 404 {
			t.Fatalf("token %q: %d, want 404", bad, status)
		}
	}
	if status, _, _ := getFeed(t, f.Server.URL+"/calendar/feed/"+token); status != 404 {
		t.Fatalf("without .ics: %d", status)
	}

	// The integration shows no token nor hash.
	g := f.do("GET", "/v1/integrations/"+id, "")
	if g.status != 200 || g.json(t)["provider"] != "ical_feed" || g.json(t)["status"] != "connected" || strings.Contains(string(g.body), token) {
		t.Fatalf("feed integration: %s", g.body)
	}
	secrets, err := f.Store.IntegrationSecrets(ctx, f.User.ID, id)
	if err != nil || len(secrets) != 1 {
		t.Fatalf("secrets %v %v", secrets, err)
	}
	for _, v := range secrets {
		if strings.Contains(v, token) || v != ams.HashSecret(token) {
			t.Fatal("the stored secret is not the token's hash")
		}
	}

	// A new feed replaces the old one.
	r2 := f.do("POST", "/v1/calendar/feed", "")
	if r2.status != 201 {
		t.Fatalf("rotate: %d %s", r2.status, r2.body)
	}
	url2 := r2.json(t)["url"].(string)
	if url2 == url {
		t.Fatal("same URL")
	}
	if status, _, _ := getFeed(t, url); status != 404 {
		t.Fatalf("old URL after rotation: %d", status)
	}
	if status, _, _ := getFeed(t, url2); status != 200 {
		t.Fatalf("new URL: %d", status)
	}
	if got := strings.Join(f.eventTypes("integration."), " "); got != "integration.connected integration.disconnected integration.connected" {
		t.Fatalf("events %s", got)
	}

	// Disconnecting the feed revokes it.
	if d := f.do("DELETE", "/v1/integrations/"+r2.json(t)["id"].(string), ""); d.status != 204 {
		t.Fatalf("delete: %d", d.status)
	}
	if status, _, _ := getFeed(t, url2); status != 404 {
		t.Fatalf("revoked URL: %d", status)
	}
}

func TestCalendarFeedEmpty(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("POST", "/v1/calendar/feed", "{}")
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	status, _, body := getFeed(t, r.json(t)["url"].(string))
	if status != 200 {
		t.Fatalf("GET: %d", status)
	}
	cal, err := ical.NewDecoder(strings.NewReader(string(body))).Decode()
	if err != nil || len(cal.Events()) != 0 {
		t.Fatalf("empty feed: %v %s", err, body)
	}
	wantError(t, f.do("POST", "/v1/calendar/feed", `{"name":"x"}`), 400, "invalid_request_error", "unknown_parameter", "name")
}

// TestCalendarFeedReplayed: the feed URL is a secret shown once; a retry
// with the same Idempotency-Key replays it (no-store, the same URL, which
// still works) instead of making a new feed that would cut off the first.
func TestCalendarFeedReplayed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	first := f.do("POST", "/v1/calendar/feed", "", "Idempotency-Key", "feed-1")
	if first.status != 201 {
		t.Fatalf("create: %d %s", first.status, first.body)
	}
	again := f.do("POST", "/v1/calendar/feed", "", "Idempotency-Key", "feed-1")
	if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("Cache-Control") != "no-store" ||
		again.json(t)["url"] != first.json(t)["url"] {
		t.Fatalf("retry: %d %v %s", again.status, again.header, again.body)
	}
	if status, _, _ := getFeed(t, first.json(t)["url"].(string)); status != 200 {
		t.Fatalf("the replayed feed URL: GET %d", status)
	}
	if n := f.integrationCount(); n != 1 {
		t.Fatalf("%d integrations after the retry, want 1", n)
	}
}

// TestCalendarFeedOddText: a row stored before input was normalised (a
// carriage return, control characters, very long multi-byte lines) is
// still written in the feed, which answers 200 and parses back; the API
// itself stores "\n" for "\r\n".
func TestCalendarFeedOddText(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC)
	remind := at.Add(-10 * time.Minute)
	long := strings.Repeat("Grüße aus Köln — 😀 ", 40)
	old := &ams.CalendarEvent{ID: ams.NewID(ams.PrefixCalendar), Object: "calendar_event", UserID: f.User.ID, AssistantID: f.Assistant.ID,
		Title: "Board\r\nmeeting\r", Description: "Agenda:\r\n1. budget\r2. hiring\x07\r\n" + long, Location: "Room 1\r\nFloor 2",
		StartsAt: at, EndsAt: at.Add(time.Hour), RemindAt: &remind, CreatedAt: at, UpdatedAt: at}
	if err := f.Store.Update(ctx, func(tx ams.Tx) error { return tx.CreateCalendarEvent(ctx, old) }); err != nil {
		t.Fatal(err)
	}
	r := f.do("POST", "/v1/calendar/events", `{"assistant_id":"`+f.Assistant.ID+`","title":"From\r\nWindows","description":"a\r\nb\rc","starts_at":"2026-11-23T09:00:00Z"}`)
	if r.status != 201 || r.json(t)["title"] != "From\nWindows" || r.json(t)["description"] != "a\nb\nc" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	api := r.json(t)["id"].(string)

	feed := f.do("POST", "/v1/calendar/feed", "")
	if feed.status != 201 {
		t.Fatalf("create feed: %d %s", feed.status, feed.body)
	}
	status, _, body := getFeed(t, feed.json(t)["url"].(string))
	if status != 200 {
		t.Fatalf("GET feed: %d %s", status, body)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(body), "\r\n"), "\r\n") {
		if len(line) > 75 || strings.ContainsAny(line, "\r\n") || !utf8.ValidString(line) {
			t.Fatalf("line %d not RFC 5545: %q", i, line)
		}
	}
	cal, err := ical.NewDecoder(strings.NewReader(string(body))).Decode()
	if err != nil {
		t.Fatalf("the feed does not parse: %v\n%s", err, body)
	}
	got := map[string]map[string]string{}
	for _, e := range cal.Events() {
		uid, _ := e.Props.Text(ical.PropUID)
		got[uid] = map[string]string{}
		for _, name := range []string{ical.PropSummary, ical.PropDescription, ical.PropLocation} {
			got[uid][name], _ = e.Props.Text(name)
		}
	}
	want := map[string]map[string]string{
		old.ID: {ical.PropSummary: "Board\nmeeting\n", ical.PropDescription: "Agenda:\n1. budget\n2. hiring\n" + long, ical.PropLocation: "Room 1\nFloor 2"},
		api:    {ical.PropSummary: "From\nWindows", ical.PropDescription: "a\nb\nc", ical.PropLocation: ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("feed text\n%q\nwant\n%q", got, want)
	}
}
