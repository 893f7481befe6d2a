package caldav_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/caldav"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/internal/testing/testclock"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/world"
	"github.com/emersion/go-ical"
)

// These tests sync with a real CalDAV server: Radicale, which .ci/run
// installs from Debian's packages and starts, and names in
// AMS_TEST_CALDAV_URL (http://user:password@127.0.0.1:5232/user/). Each
// test makes a calendar collection of its own under that URL.

// server is the Radicale the tests talk to.
type server struct {
	base           *url.URL // without credentials, ending in /
	user, password string
}

func radicale(t *testing.T) *server {
	t.Helper()
	raw := os.Getenv("AMS_TEST_CALDAV_URL")
	if raw == "" {
		if os.Getenv("AMS_REQUIRE_CALDAV_TESTS") != "" {
			t.Fatal("AMS_TEST_CALDAV_URL is not set but AMS_REQUIRE_CALDAV_TESTS is")
		}
		t.Skip("CalDAV tests skipped: set AMS_TEST_CALDAV_URL to a Radicale collection URL with credentials, e.g. http://ams:ams-caldav-test@127.0.0.1:5232/ams/ (.ci/run starts one)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{user: u.User.Username()}
	s.password, _ = u.User.Password()
	u.User = nil
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	s.base = u
	return s
}

// do sends a request with the server's credentials.
func (s *server) do(t *testing.T, method, rawURL, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(s.user, s.password)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// calendar creates a calendar collection of the test's own (MKCALENDAR)
// and returns its URL; it is deleted when the test ends.
func (s *server) calendar(t *testing.T) string {
	t.Helper()
	u := *s.base
	u.Path += strings.ToLower(ams.NewID("cal")) + "/"
	resp := s.do(t, "MKCALENDAR", u.String(), `<?xml version="1.0" encoding="utf-8"?>
<C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:set><D:prop><D:displayname>ams test</D:displayname></D:prop></D:set></C:mkcalendar>`,
		"Content-Type", "application/xml")
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("MKCALENDAR %s: %s", u.String(), resp.Status)
	}
	t.Cleanup(func() { s.do(t, "DELETE", u.String(), "").Body.Close() })
	return u.String()
}

// put writes an iCalendar object into the calendar.
func (s *server) put(t *testing.T, calURL, name, ics string) {
	t.Helper()
	resp := s.do(t, "PUT", calURL+name, strings.ReplaceAll(strings.TrimSpace(ics), "\n", "\r\n")+"\r\n", "Content-Type", "text/calendar; charset=utf-8")
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT %s: %s", name, resp.Status)
	}
}

// get reads an object of the calendar: nil if there is none.
func (s *server) get(t *testing.T, calURL, name string) *ical.Calendar {
	t.Helper()
	resp := s.do(t, "GET", calURL+name, "")
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", name, resp.Status)
	}
	cal, err := ical.NewDecoder(resp.Body).Decode()
	if err != nil {
		t.Fatal(err)
	}
	return cal
}

func (s *server) remove(t *testing.T, calURL, name string) {
	t.Helper()
	resp := s.do(t, "DELETE", calURL+name, "")
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE %s: %s", name, resp.Status)
	}
}

var start = testclock.Start

// fixture is an account on a SQLite store with a CalDAV worker.
type fixture struct {
	t         *testing.T
	db        ams.Store
	clock     *testclock.Clock
	user      *ams.User
	assistant *ams.Assistant
	worker    *caldav.Worker
	service   *world.Service // through world.Watch, telling the worker
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := sqlitetest.Open(t)
	return newFixtureOn(t, db)
}

// newFixtureOn is newFixture on store db.
func newFixtureOn(t *testing.T, db ams.Store) *fixture {
	t.Helper()
	f := &fixture{t: t, db: db, clock: testclock.New(start)}
	ctx := context.Background()
	f.user = &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "ann@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: start, UpdatedAt: start}
	if err := db.CreateUser(ctx, f.user); err != nil {
		t.Fatal(err)
	}
	f.assistant = &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: f.user.ID, Name: "A",
		Model: ams.ModelBuiltin, CreatedAt: start, UpdatedAt: start}
	if err := db.CreateAssistant(ctx, f.assistant); err != nil {
		t.Fatal(err)
	}
	f.worker = f.newWorker()
	f.service = &world.Service{Store: world.Watch(db, world.Changes{Calendar: f.worker.Notify}), Clock: f.clock.Now}
	return f
}

// newWorker returns a worker on the fixture's store (another one is
// another process).
func (f *fixture) newWorker() *caldav.Worker {
	guard := &ssrf.Guard{AllowPrivate: true} // Radicale is on loopback: dev mode
	return &caldav.Worker{
		Syncer:   caldav.Syncer{Store: f.db, Client: caldav.NewHTTPClient(guard), Clock: f.clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Guard:    guard,
		Debounce: 10 * time.Millisecond,
	}
}

// connect checks and stores a CalDAV integration as POST /v1/integrations
// does.
func (f *fixture) connect(calURL, user, password string) *ams.Integration {
	f.t.Helper()
	ctx := context.Background()
	secrets := map[string]string{caldav.SecretPassword: password}
	config, err := f.worker.Check(ctx, map[string]any{caldav.ConfigURL: calURL, caldav.ConfigUsername: user}, secrets)
	if err != nil {
		f.t.Fatalf("check: %v", err)
	}
	return f.store(config, secrets)
}

// store stores a connected integration without checking it.
func (f *fixture) store(config map[string]any, secrets map[string]string) *ams.Integration {
	f.t.Helper()
	now := f.clock.Now()
	in := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", UserID: f.user.ID, Provider: caldav.Provider,
		Status: ams.IntegrationConnected, Config: config, ConnectedAt: now, CreatedAt: now, UpdatedAt: now}
	err := f.db.Update(context.Background(), func(tx ams.Tx) error {
		if err := tx.CreateIntegration(context.Background(), in, secrets); err != nil {
			return err
		}
		return tx.Emit(context.Background(), ams.IntegrationEvent(ams.EventIntegrationConnected, in, now))
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return in
}

// sync syncs in now and returns it afterwards.
func (f *fixture) sync(in *ams.Integration) *ams.Integration {
	f.t.Helper()
	out, err := f.worker.SyncNow(context.Background(), in)
	if err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	return out
}

// events returns the account's calendar events by title.
func (f *fixture) events() map[string]*ams.CalendarEvent {
	f.t.Helper()
	page, err := f.db.ListCalendarEvents(context.Background(), f.user.ID, ams.CalendarFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]*ams.CalendarEvent{}
	for _, e := range page.Data {
		out[e.Title] = e
	}
	return out
}

// emitted returns the types and record titles (or statuses) of the
// account's events of the given types, oldest first.
// lastEvent returns the data of the newest event of type typ.
func (f *fixture) lastEvent(typ string) map[string]any {
	f.t.Helper()
	page, err := f.db.ListEvents(context.Background(), f.user.ID, ams.EventFilter{Type: typ}, ams.ListParams{Limit: 1})
	if err != nil || len(page.Data) == 0 {
		f.t.Fatalf("no %s event: %v", typ, err)
	}
	return page.Data[0].Data
}

func (f *fixture) emitted(types ...string) []string {
	f.t.Helper()

	var out []string
	page, err := f.db.ListEvents(context.Background(), f.user.ID, ams.EventFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range page.Data {
		for _, typ := range types {
			if e.Type == typ {
				label, _ := e.Data["title"].(string)
				if label == "" {
					label, _ = e.Data["status"].(string)
				}
				out = append(out, e.Type+" "+label)
			}
		}
	}
	return out
}

func (f *fixture) createEvent(body string) *ams.CalendarEvent {
	f.t.Helper()
	e, err := f.service.CreateEvent(context.Background(), f.user.ID, f.assistant.ID, json.RawMessage(body), "")
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

func prop(t *testing.T, cal *ical.Calendar, name string) string {
	t.Helper()
	for _, c := range cal.Children {
		if c.Name == ical.CompEvent {
			if p := c.Props.Get(name); p != nil {
				return p.Value
			}
			return ""
		}
	}
	t.Fatal("no VEVENT")
	return ""
}

const remoteEvent = `BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//Example//Phone//EN
BEGIN:VEVENT
UID:lunch-1@example.com
DTSTAMP:20261120T090000Z
DTSTART;TZID=Europe/Berlin:20261123T130000
DTEND;TZID=Europe/Berlin:20261123T140000
SUMMARY:Lunch with Bob
LOCATION:Cafe Central
RRULE:FREQ=WEEKLY;COUNT=4
X-PHONE-COLOR:red
BEGIN:VALARM
ACTION:DISPLAY
DESCRIPTION:Lunch
TRIGGER:-PT10M
END:VALARM
END:VEVENT
END:VCALENDAR`

func TestSyncBothWays(t *testing.T) {
	srv := radicale(t)
	f := newFixture(t)
	cal := srv.calendar(t)
	in := f.connect(cal, srv.user, srv.password)
	if !strings.HasSuffix(in.Config[caldav.ConfigURL].(string), "/") || in.Config[caldav.ConfigUsername] != srv.user || len(in.Config) != 2 {
		t.Fatalf("config %v", in.Config)
	}

	// An event created here appears on the server, under its id.
	local := f.createEvent(`{"title":"Dentist","description":"Bring the card","location":"Main St 1",` +
		`"starts_at":"2026-11-22T15:00:00Z","ends_at":"2026-11-22T15:30:00Z","remind_at":"2026-11-22T14:45:00Z"}`)
	if got := f.sync(in); got.Status != ams.IntegrationConnected || got.LastError != nil {
		t.Fatalf("after sync: %+v", got)
	}
	obj := srv.get(t, cal, local.ID+".ics")
	if obj == nil {
		t.Fatal("the local event is not on the server")
	}
	if prop(t, obj, ical.PropUID) != local.ID || prop(t, obj, ical.PropSummary) != "Dentist" || prop(t, obj, ical.PropLocation) != "Main St 1" ||
		prop(t, obj, ical.PropDateTimeStart) != "20261122T150000Z" || prop(t, obj, ical.PropDateTimeEnd) != "20261122T153000Z" ||
		prop(t, obj, ical.PropDescription) != "Bring the card" {
		t.Fatalf("object on the server:\n%v", obj.Children[0].Props)
	}
	if a := obj.Children[0].Children; len(a) != 1 || func() bool {
		d, err := a[0].Props.Get(ical.PropTrigger).Duration()
		return err != nil || d != -15*time.Minute
	}() {
		t.Fatalf("alarm %v", a[0].Props)
	}

	// An event put into the server appears here after a sync, with
	// event.created.
	srv.put(t, cal, "lunch.ics", remoteEvent)
	f.sync(in)
	lunch := f.events()["Lunch with Bob"]
	if lunch == nil {
		t.Fatalf("remote event not here: %v", f.events())
	}
	wantStart := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) // 13:00 in Berlin, CET
	if !lunch.StartsAt.Equal(wantStart) || !lunch.EndsAt.Equal(wantStart.Add(time.Hour)) || lunch.Location != "Cafe Central" ||
		lunch.RemindAt == nil || !lunch.RemindAt.Equal(wantStart.Add(-10*time.Minute)) || lunch.AssistantID != "" {
		t.Fatalf("pulled event %+v", lunch)
	}
	if got := f.emitted(ams.EventEventCreated, ams.EventEventUpdated); strings.Join(got, "|") != "event.created Dentist|event.created Lunch with Bob" {
		t.Fatalf("events %v", got)
	}

	// Nothing changed: a sync changes nothing and emits nothing.
	f.sync(in)
	f.sync(in)
	if got := f.emitted(ams.EventEventCreated, ams.EventEventUpdated); len(got) != 2 {
		t.Fatalf("idle syncs emitted %v", got)
	}

	// Updated on the server: updated here, with event.updated.
	srv.put(t, cal, "lunch.ics", strings.Replace(remoteEvent, "SUMMARY:Lunch with Bob", "SUMMARY:Lunch with Bob and Carol", 1))
	f.sync(in)
	if e := f.events()["Lunch with Bob and Carol"]; e == nil || e.ID != lunch.ID {
		t.Fatalf("remote update not here: %v", f.events())
	}
	if got := f.emitted(ams.EventEventUpdated); len(got) != 1 || got[0] != "event.updated Lunch with Bob and Carol" {
		t.Fatalf("events %v", got)
	}

	// Updated here: updated on the server, keeping what ams does not hold
	// (the recurrence, the phone's colour).
	f.clock.Add(time.Minute)
	if _, err := f.service.UpdateEvent(context.Background(), f.user.ID, lunch.ID, json.RawMessage(`{"title":"Team lunch","location":"Canteen"}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.service.UpdateEvent(context.Background(), f.user.ID, local.ID, json.RawMessage(`{"starts_at":"2026-11-22T16:00:00Z"}`), ""); err != nil {
		t.Fatal(err)
	}
	f.sync(in)
	obj = srv.get(t, cal, "lunch.ics")
	if prop(t, obj, ical.PropSummary) != "Team lunch" || prop(t, obj, ical.PropLocation) != "Canteen" ||
		prop(t, obj, ical.PropRecurrenceRule) != "FREQ=WEEKLY;COUNT=4" || prop(t, obj, "X-PHONE-COLOR") != "red" ||
		prop(t, obj, ical.PropDateTimeStart) != "20261123T130000" {
		t.Fatalf("object after the local update:\n%v", obj.Children[0].Props)
	}
	obj = srv.get(t, cal, local.ID+".ics")
	if prop(t, obj, ical.PropDateTimeStart) != "20261122T160000Z" || prop(t, obj, ical.PropDateTimeEnd) != "20261122T163000Z" {
		t.Fatalf("moved event on the server:\n%v", obj.Children[0].Props)
	}
	// Pushing emits nothing here, and the next sync pulls nothing back.
	before := len(f.emitted(ams.EventEventCreated, ams.EventEventUpdated))
	f.sync(in)
	if got := f.emitted(ams.EventEventCreated, ams.EventEventUpdated); len(got) != before {
		t.Fatalf("the push came back: %v", got)
	}

	// Deleted on the server: deleted here.
	srv.put(t, cal, "gone.ics", strings.NewReplacer("UID:lunch-1@example.com", "UID:gone@example.com", "SUMMARY:Lunch with Bob", "SUMMARY:Soon gone").Replace(remoteEvent))
	f.sync(in)
	if f.events()["Soon gone"] == nil {
		t.Fatal("not pulled")
	}
	gone := f.events()["Soon gone"]
	srv.remove(t, cal, "gone.ics")
	f.sync(in)
	if f.events()["Soon gone"] != nil {
		t.Fatal("deleted on the server, still here")
	}
	// ... with event.deleted, the event as it was, in the deletion's
	// transaction.
	if got := f.emitted(ams.EventEventDeleted); strings.Join(got, "|") != "event.deleted Soon gone" {
		t.Fatalf("event.deleted after a deletion on the server: %v", got)
	}
	if del := f.lastEvent(ams.EventEventDeleted); del["id"] != gone.ID || del["object"] != "calendar_event" {
		t.Fatalf("event.deleted data: %v", del)
	}

	// Deleted here: deleted on the server, both an event made here and
	// one that came from the server.
	for _, id := range []string{local.ID, lunch.ID} {
		if err := f.service.DeleteEvent(context.Background(), f.user.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	f.sync(in)
	if srv.get(t, cal, local.ID+".ics") != nil || srv.get(t, cal, "lunch.ics") != nil {
		t.Fatal("deleted here, still on the server")
	}
	if got := f.emitted(ams.EventEventDeleted); len(got) != 3 {
		t.Fatalf("event.deleted after deletions here: %v", got)
	}
	if len(f.events()) != 0 {
		t.Fatalf("events left: %v", f.events())
	}
}

// An event deleted here while no process remembers it (a restart between
// the deletion and the sync) is still deleted on the server when ams
// made it: its UID is the id of an event that no longer exists.
func TestDeletionOfOwnEventSurvivesRestart(t *testing.T) {
	srv := radicale(t)
	f := newFixture(t)
	cal := srv.calendar(t)
	in := f.connect(cal, srv.user, srv.password)
	e := f.createEvent(`{"title":"Gym","starts_at":"2026-11-22T07:00:00Z"}`)
	f.sync(in)
	if srv.get(t, cal, e.ID+".ics") == nil {
		t.Fatal("not pushed")
	}
	if err := (&world.Service{Store: f.db, Clock: f.clock.Now}).DeleteEvent(context.Background(), f.user.ID, e.ID); err != nil { // not watched
		t.Fatal(err)
	}
	f.worker = f.newWorker() // a new process
	f.sync(in)
	if srv.get(t, cal, e.ID+".ics") != nil {
		t.Fatal("still on the server")
	}
	if len(f.events()) != 0 {
		t.Fatal("came back")
	}
}

// proxy stands between ams and Radicale; while broken it replaces the
// credentials, so that Radicale refuses them (401).
type proxy struct {
	*httptest.Server
	broken atomic.Bool
}

func newProxy(t *testing.T, srv *server) *proxy {
	p := &proxy{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: srv.base.Scheme, Host: srv.base.Host})
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.broken.Load() {
			r.SetBasicAuth(srv.user, "wrong password")
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func TestFailureSetsErrorOnceAndRecovery(t *testing.T) {
	srv := radicale(t)
	f := newFixture(t)
	cal := srv.calendar(t)
	p := newProxy(t, srv)
	in := f.connect(p.URL+strings.TrimPrefix(cal, srv.base.Scheme+"://"+srv.base.Host), srv.user, srv.password)
	f.createEvent(`{"title":"Standup","starts_at":"2026-11-22T09:00:00Z"}`)
	f.sync(in)

	p.broken.Store(true)
	got := f.sync(in)
	if got.Status != ams.IntegrationError || got.LastError == nil || *got.LastError != "The CalDAV server refused the credentials (HTTP 401)." {
		t.Fatalf("after a refused sync: %+v", got)
	}
	f.sync(in)
	f.sync(in)
	stored, err := f.db.FindIntegration(context.Background(), f.user.ID, in.ID)
	if err != nil || stored.Status != ams.IntegrationError {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	if ev := f.emitted(ams.EventIntegrationError, ams.EventIntegrationConnected); strings.Join(ev, "|") != "integration.connected connected|integration.error error" {
		t.Fatalf("three failures emitted %v, want one integration.error", ev)
	}
	page, _ := f.db.ListEvents(context.Background(), f.user.ID, ams.EventFilter{Type: ams.EventIntegrationError}, ams.ListParams{Limit: 10})
	if d := page.Data[0].Data; d["last_error"] != *got.LastError || d["id"] != in.ID {
		t.Fatalf("integration.error data %v", d)
	}
	if strings.Contains(*got.LastError, srv.password) || strings.Contains(*got.LastError, "127.0.0.1") {
		t.Fatalf("last_error leaks: %s", *got.LastError)
	}

	p.broken.Store(false)
	if got := f.sync(in); got.Status != ams.IntegrationConnected || got.LastError != nil {
		t.Fatalf("after recovery: %+v", got)
	}
	if ev := f.emitted(ams.EventIntegrationError, ams.EventIntegrationConnected); len(ev) != 3 || ev[2] != "integration.connected connected" {
		t.Fatalf("recovery emitted %v", ev)
	}
	if srv.get(t, cal, f.events()["Standup"].ID+".ics") == nil {
		t.Fatal("not synced after recovery")
	}
}

func TestCheck(t *testing.T) {
	srv := radicale(t)
	f := newFixture(t)
	cal := srv.calendar(t)
	ctx := context.Background()
	check := func(w *caldav.Worker, u, user, password string) error {
		_, err := w.Check(ctx, map[string]any{caldav.ConfigURL: u, caldav.ConfigUsername: user}, map[string]string{caldav.SecretPassword: password})
		return err
	}
	strict := &caldav.Worker{Syncer: caldav.Syncer{Store: f.db}} // not dev mode
	cases := []struct {
		name        string
		err         error
		kind        ams.ErrorKind
		code, param string
	}{
		{"ok", check(f.worker, cal, srv.user, srv.password), 0, "", ""},
		{"wrong password", check(f.worker, cal, srv.user, "wrong"), ams.EINVALID, "integration_unauthorized", "secrets.password"},
		{"not a calendar", check(f.worker, srv.base.String(), srv.user, srv.password), ams.EINVALID, "integration_not_calendar", "config.url"},
		{"no such calendar", check(f.worker, srv.base.String()+"nope/", srv.user, srv.password), ams.EINVALID, "integration_not_calendar", "config.url"},
		{"unreachable", check(f.worker, "http://127.0.0.1:1/cal/", "", ""), ams.EUPSTREAM, "integration_unreachable", ""},
		{"loopback outside dev mode", check(strict, cal, srv.user, srv.password), ams.EINVALID, "parameter_invalid", "config.url"},
		{"not http", check(f.worker, "ftp://example.com/cal/", "", ""), ams.EINVALID, "parameter_invalid", "config.url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.code == "" {
				if c.err != nil {
					t.Fatal(c.err)
				}
				return
			}
			e, ok := c.err.(*ams.Error)
			if !ok || e.Kind != c.kind || e.Code != c.code || e.Param != c.param {
				t.Fatalf("got %#v, want %v %s %s", c.err, c.kind, c.code, c.param)
			}
		})
	}
	_, err := f.worker.Check(ctx, map[string]any{caldav.ConfigURL: cal, "colour": "red"}, nil)
	if e, ok := err.(*ams.Error); !ok || e.Code != "unknown_parameter" || e.Param != "config.colour" {
		t.Fatalf("unknown config field: %v", err)
	}
	_, err = f.worker.Check(ctx, map[string]any{}, nil)
	if e, ok := err.(*ams.Error); !ok || e.Code != "parameter_missing" || e.Param != "config.url" {
		t.Fatalf("missing url: %v", err)
	}
}

// Two processes syncing one integration at once make no duplicates,
// here or on the server.
func TestConcurrentSyncs(t *testing.T) {
	srv := radicale(t)
	f := newFixture(t)
	cal := srv.calendar(t)
	in := f.connect(cal, srv.user, srv.password)
	for _, title := range []string{"A", "B", "C"} {
		f.createEvent(`{"title":"` + title + `","starts_at":"2026-11-22T09:00:00Z"}`)
	}
	for _, uid := range []string{"x1", "x2", "x3"} {
		srv.put(t, cal, uid+".ics", strings.NewReplacer("UID:lunch-1@example.com", "UID:"+uid, "SUMMARY:Lunch with Bob", "SUMMARY:"+uid).Replace(remoteEvent))
	}
	var wg sync.WaitGroup
	for range 3 {
		w := f.newWorker()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.SyncNow(context.Background(), in); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	f.sync(in)
	if ev := f.events(); len(ev) != 6 {
		t.Fatalf("%d events here, want 6: %v", len(ev), ev)
	}
	resp := srv.do(t, "PROPFIND", cal, "", "Depth", "1")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(body), ".ics</"); n != 6 {
		t.Fatalf("%d objects on the server, want 6:\n%s", n, body)
	}
	if got := f.emitted(ams.EventEventCreated); len(got) != 6 {
		t.Fatalf("event.created %v, want 6", got)
	}
}

// The worker syncs each integration every Interval, and soon after a
// change here.
func TestWorkerRun(t *testing.T) {
	srv := radicale(t)
	f := newFixture(t)
	cal := srv.calendar(t)
	in := f.connect(cal, srv.user, srv.password)
	f.worker.Interval, f.worker.Poll = time.Minute, 10*time.Millisecond
	f.worker.Signals.Pass.Init()
	f.worker.Signals.Started.Init()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.worker.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// A change here is pushed soon, without waiting for the interval.
	e := f.createEvent(`{"title":"Pushed soon","starts_at":"2026-11-22T09:00:00Z"}`)
	wait.Eventually(t, "the push", func() bool { return srv.get(t, cal, e.ID+".ics") != nil })
	_ = in

	// A change on the server comes at the next interval.
	srv.put(t, cal, "later.ics", strings.NewReplacer("UID:lunch-1@example.com", "UID:later", "SUMMARY:Lunch with Bob", "SUMMARY:Pulled later").Replace(remoteEvent))
	f.worker.Signals.Started.Drain()
	f.worker.Signals.Pass.WaitPass(t)
	f.worker.Signals.Started.RequireEmpty(t) // a pass went by: nothing was due
	if f.events()["Pulled later"] != nil {
		t.Fatal("pulled before the interval")
	}
	f.clock.Add(time.Minute)
	wait.Eventually(t, "the periodic sync", func() bool { return f.events()["Pulled later"] != nil })
}
