package caldav_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/emersion/go-ical"
)

// text returns the TEXT value of a property of the object's VEVENT.
func text(t *testing.T, cal *ical.Calendar, name string) string {
	t.Helper()
	for _, c := range cal.Children {
		if c.Name == ical.CompEvent {
			s, err := c.Props.Text(name)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return s
		}
	}
	t.Fatal("no VEVENT")
	return ""
}

// Carriage returns (from the API, and in rows stored before input was
// normalised), control characters and very long multi-byte lines round
// trip through Radicale, both ways.
func TestSyncOddText(t *testing.T) {
	srv := radicale(t)
	f := newFixture(t)
	cal := srv.calendar(t)
	in := f.connect(cal, srv.user, srv.password)
	long := strings.Repeat("Grüße aus Köln — 😀 ", 40) // > 75 octets, characters of 1 to 4 octets across fold points

	// From the API: normalised on input.
	api := f.createEvent(`{"title":"From\r\nWindows","description":"a\r\nb\rc ` + long + `","location":"Room 1\r\nFloor 2","starts_at":"2026-11-22T09:00:00Z"}`)
	// An old row: stored with "\r" and control characters.
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	old := &ams.CalendarEvent{ID: ams.NewID(ams.PrefixCalendar), Object: "calendar_event", UserID: f.user.ID, AssistantID: f.assistant.ID,
		Title: "Old\r\nrow\r", Description: "x\r\ny\x07\x1b\r" + long, Location: "L\r", StartsAt: at, EndsAt: at.Add(time.Hour), CreatedAt: at, UpdatedAt: at}
	if err := f.db.Update(context.Background(), func(tx ams.Tx) error { return tx.CreateCalendarEvent(context.Background(), old) }); err != nil {
		t.Fatal(err)
	}
	if got := f.sync(in); got.Status != ams.IntegrationConnected || got.LastError != nil {
		t.Fatalf("after sync: %+v", got)
	}
	for _, c := range []struct {
		id                      string
		summary, desc, location string
	}{
		{api.ID, "From\nWindows", "a\nb\nc " + long, "Room 1\nFloor 2"},
		{old.ID, "Old\nrow\n", "x\ny\n" + long, "L\n"},
	} {
		obj := srv.get(t, cal, c.id+".ics")
		if obj == nil {
			t.Fatalf("%s not pushed", c.id)
		}
		if s, d, l := text(t, obj, ical.PropSummary), text(t, obj, ical.PropDescription), text(t, obj, ical.PropLocation); s != c.summary || d != c.desc || l != c.location {
			t.Fatalf("%s on the server: %q %q %q", c.id, s, d, l)
		}
	}
	// Nothing comes back: what was pushed is what is here.
	before := len(f.emitted(ams.EventEventCreated, ams.EventEventUpdated))
	f.sync(in)
	if got := f.emitted(ams.EventEventCreated, ams.EventEventUpdated); len(got) != before {
		t.Fatalf("the push came back: %v", got)
	}

	// Written on the server with folded long lines, escaped line breaks
	// and CRLF: read back as "\n".
	desc := "Line one\\nLine two\\, and " + long
	var folded strings.Builder
	line := "DESCRIPTION:" + desc
	for len(line) > 70 {
		n := 70
		for line[n]&0xC0 == 0x80 {
			n--
		}
		folded.WriteString(line[:n] + "\n ")
		line = line[n:]
	}
	folded.WriteString(line)
	srv.put(t, cal, "remote.ics", strings.NewReplacer("UID:lunch-1@example.com", "UID:remote-odd", "LOCATION:Cafe Central", folded.String()).Replace(remoteEvent))
	f.sync(in)
	got := f.events()["Lunch with Bob"]
	if got == nil || got.Description != "Line one\nLine two, and "+long {
		t.Fatalf("pulled %+v", got)
	}
}

// refusingProxy stands between ams and Radicale and answers 400 to the
// writes (PUT) of the objects whose path holds one of the ids in refuse,
// as a server refuses an object it cannot take, and 403 to the DELETEs
// of those whose path holds one in refuseDelete.
type refusingProxy struct {
	*httptest.Server
	refuse       atomic.Value // []string
	refuseDelete atomic.Value // []string
	broken       atomic.Bool  // refuse the credentials (401)
}

func newRefusingProxy(t *testing.T, srv *server) *refusingProxy {
	p := &refusingProxy{}
	p.refuse.Store([]string(nil))
	p.refuseDelete.Store([]string(nil))
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: srv.base.Scheme, Host: srv.base.Host})
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.broken.Load() {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodDelete {
			for _, id := range p.refuseDelete.Load().([]string) {
				if strings.Contains(r.URL.Path, id) {
					http.Error(w, "Forbidden: this one stays", http.StatusForbidden)
					return
				}
			}
		}
		if r.Method == http.MethodPut {
			for _, id := range p.refuse.Load().([]string) {
				if strings.Contains(r.URL.Path, id) {
					http.Error(w, "Bad Request: we do not take this one", http.StatusBadRequest)
					return
				}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// One event the server refuses does not stop the others: it is skipped
// and named in last_error (the integration stays connected), and pushed
// once the server takes it.
func TestRefusedEventSkipped(t *testing.T) {
	srv := radicale(t)
	f := newFixture(t)
	cal := srv.calendar(t)
	p := newRefusingProxy(t, srv)
	in := f.connect(p.URL+strings.TrimPrefix(cal, srv.base.Scheme+"://"+srv.base.Host), srv.user, srv.password)

	// The integration is in error first (refused credentials) ...
	p.broken.Store(true)
	if got := f.sync(in); got.Status != ams.IntegrationError {
		t.Fatalf("broken: %+v", got)
	}
	p.broken.Store(false)
	a := f.createEvent(`{"title":"A","starts_at":"2026-11-22T09:00:00Z"}`)
	b := f.createEvent(`{"title":"B","starts_at":"2026-11-22T10:00:00Z"}`)
	c := f.createEvent(`{"title":"C","starts_at":"2026-11-22T11:00:00Z"}`)
	srv.put(t, cal, "remote.ics", remoteEvent)
	p.refuse.Store([]string{b.ID})

	// ... a run where the server refuses B only pushes A and C, pulls
	// the server's event, and is a success.
	got := f.sync(in)
	want := "The CalDAV server refused 1 event (HTTP 400): " + b.ID + "."
	if got.Status != ams.IntegrationConnected || got.LastError == nil || !strings.HasPrefix(*got.LastError, want) {
		t.Fatalf("after a run with a refusal: %+v (last_error %v)", got, derefOr(got.LastError))
	}
	if strings.Contains(*got.LastError, "127.0.0.1") || strings.Contains(*got.LastError, "we do not take") {
		t.Fatalf("last_error leaks: %s", *got.LastError)
	}
	if srv.get(t, cal, a.ID+".ics") == nil || srv.get(t, cal, c.ID+".ics") == nil || srv.get(t, cal, b.ID+".ics") != nil {
		t.Fatal("A and C should be on the server, B not")
	}
	if f.events()["Lunch with Bob"] == nil {
		t.Fatal("the server's event was not pulled")
	}
	if ev := f.emitted(ams.EventIntegrationError, ams.EventIntegrationConnected); strings.Join(ev, "|") != "integration.connected connected|integration.error error|integration.connected connected" {
		t.Fatalf("integration events %v", ev)
	}
	stored, err := f.db.FindIntegration(context.Background(), f.user.ID, in.ID)
	if err != nil || stored.LastError == nil || *stored.LastError != *got.LastError {
		t.Fatalf("stored %+v %v", stored, err)
	}

	// Still refused: tried again, nothing else changes, no new event.
	f.createEvent(`{"title":"D","starts_at":"2026-11-22T12:00:00Z"}`)
	if got := f.sync(in); got.Status != ams.IntegrationConnected || got.LastError == nil || !strings.HasPrefix(*got.LastError, want) {
		t.Fatalf("second run: %+v", got)
	}
	if srv.get(t, cal, f.events()["D"].ID+".ics") == nil {
		t.Fatal("D not pushed while B is refused")
	}

	// An update refused (PUT with If-Match) is skipped as well.
	if _, err := f.service.UpdateEvent(context.Background(), f.user.ID, a.ID, json.RawMessage(`{"title":"A2"}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.service.UpdateEvent(context.Background(), f.user.ID, c.ID, json.RawMessage(`{"title":"C2"}`), ""); err != nil {
		t.Fatal(err)
	}
	p.refuse.Store([]string{a.ID, b.ID})
	got = f.sync(in)
	if got.Status != ams.IntegrationConnected || got.LastError == nil ||
		!strings.HasPrefix(*got.LastError, "The CalDAV server refused 2 events (HTTP 400): ") || !strings.Contains(*got.LastError, a.ID) {
		t.Fatalf("refused update: %+v", got)
	}
	if text(t, srv.get(t, cal, c.ID+".ics"), ical.PropSummary) != "C2" || text(t, srv.get(t, cal, a.ID+".ics"), ical.PropSummary) != "A" {
		t.Fatal("C's update not pushed, or A's pushed")
	}

	// Taken again: pushed, and last_error cleared.
	p.refuse.Store([]string(nil))
	if got := f.sync(in); got.Status != ams.IntegrationConnected || got.LastError != nil {
		t.Fatalf("after the server takes them: %+v", got)
	}
	if srv.get(t, cal, b.ID+".ics") == nil || text(t, srv.get(t, cal, a.ID+".ics"), ical.PropSummary) != "A2" {
		t.Fatal("A2 and B not pushed")
	}
	if ev := f.emitted(ams.EventIntegrationError, ams.EventIntegrationConnected); len(ev) != 3 {
		t.Fatalf("integration events %v", ev)
	}
}

// A DELETE the server refuses (403) does not stop the sync either: the
// deletion is named in last_error and skipped, the other deletions and
// pushes are done, the refused event does not come back here, and it is
// tried again at each run (by its UID, after a restart too) until the
// server takes it.
func TestRefusedDeletionSkipped(t *testing.T) {
	srv := radicale(t)
	f := newFixture(t)
	cal := srv.calendar(t)
	p := newRefusingProxy(t, srv)
	in := f.connect(p.URL+strings.TrimPrefix(cal, srv.base.Scheme+"://"+srv.base.Host), srv.user, srv.password)
	a := f.createEvent(`{"title":"A","starts_at":"2026-11-22T09:00:00Z"}`)
	b := f.createEvent(`{"title":"B","starts_at":"2026-11-22T10:00:00Z"}`)
	c := f.createEvent(`{"title":"C","starts_at":"2026-11-22T11:00:00Z"}`)
	if got := f.sync(in); got.Status != ams.IntegrationConnected || got.LastError != nil {
		t.Fatalf("first run: %+v (last_error %v)", got, derefOr(got.LastError))
	}
	for _, e := range []*ams.CalendarEvent{a, b, c} {
		if srv.get(t, cal, e.ID+".ics") == nil {
			t.Fatalf("%s not pushed", e.Title)
		}
	}

	p.refuseDelete.Store([]string{b.ID})
	for _, e := range []*ams.CalendarEvent{a, b} {
		if err := f.service.DeleteEvent(context.Background(), f.user.ID, e.ID); err != nil {
			t.Fatal(err)
		}
	}
	d := f.createEvent(`{"title":"D","starts_at":"2026-11-22T12:00:00Z"}`)
	got := f.sync(in)
	want := "The CalDAV server refused 1 event (HTTP 403): " + b.ID + "."
	if got.Status != ams.IntegrationConnected || got.LastError == nil || !strings.HasPrefix(*got.LastError, want) {
		t.Fatalf("after a refused deletion: %+v (last_error %v)", got, derefOr(got.LastError))
	}
	if strings.Contains(*got.LastError, "this one stays") {
		t.Fatalf("last_error leaks: %s", *got.LastError)
	}
	if srv.get(t, cal, a.ID+".ics") != nil || srv.get(t, cal, b.ID+".ics") == nil ||
		srv.get(t, cal, c.ID+".ics") == nil || srv.get(t, cal, d.ID+".ics") == nil {
		t.Fatal("want A deleted on the server, B (refused) kept there, C kept and D pushed")
	}
	if ev := f.events(); ev["B"] != nil || ev["A"] != nil || ev["C"] == nil || ev["D"] == nil {
		t.Fatalf("events here: %v", ev)
	}
	if ev := f.emitted(ams.EventIntegrationError); len(ev) != 0 {
		t.Fatalf("integration events %v", ev)
	}

	// After a restart (the deletion is not remembered), still refused:
	// found by its UID, tried again, reported again.
	f.worker = f.newWorker()
	if got := f.sync(in); got.Status != ams.IntegrationConnected || got.LastError == nil || !strings.HasPrefix(*got.LastError, want) {
		t.Fatalf("second run: %+v (last_error %v)", got, derefOr(got.LastError))
	}
	if f.events()["B"] != nil {
		t.Fatal("the refused deletion came back here")
	}

	// Taken: deleted on the server, and last_error cleared.
	p.refuseDelete.Store([]string(nil))
	if got := f.sync(in); got.Status != ams.IntegrationConnected || got.LastError != nil {
		t.Fatalf("after the server takes it: %+v (last_error %v)", got, derefOr(got.LastError))
	}
	if srv.get(t, cal, b.ID+".ics") != nil {
		t.Fatal("B still on the server")
	}
}

func derefOr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
