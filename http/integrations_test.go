package http_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/caldav"
	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/ssrf"
)

// withCalDAV gives the fixture's server a CalDAV worker on its store (dev
// mode: loopback servers allowed), as ams serve does.
func withCalDAV(f *fixture) *caldav.Worker {
	guard := &ssrf.Guard{AllowPrivate: true}
	w := &caldav.Worker{
		Syncer: caldav.Syncer{Store: f.Store, Client: caldav.NewHTTPClient(guard), Clock: f.Clock.Now,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Guard: guard,
	}
	f.API.World.Integrations = map[string]amshttp.Integrator{caldav.Provider: w}
	return w
}

// radicaleCalendar makes a calendar collection on the test Radicale
// (AMS_TEST_CALDAV_URL, started by .ci/run) and returns its URL, user and
// password; it skips the test when there is none.
func radicaleCalendar(t *testing.T) (string, string, string) {
	t.Helper()
	raw := os.Getenv("AMS_TEST_CALDAV_URL")
	if raw == "" {
		if os.Getenv("AMS_REQUIRE_CALDAV_TESTS") != "" {
			t.Fatal("AMS_TEST_CALDAV_URL is not set but AMS_REQUIRE_CALDAV_TESTS is")
		}
		t.Skip("CalDAV test skipped: set AMS_TEST_CALDAV_URL, e.g. http://ams:ams-caldav-test@127.0.0.1:5232/ams/ (.ci/run starts a Radicale)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	user := u.User.Username()
	password, _ := u.User.Password()
	u.User = nil
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + strings.ToLower(ams.NewID("cal")) + "/"
	req, _ := http.NewRequest("MKCALENDAR", u.String(), nil)
	req.SetBasicAuth(user, password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("MKCALENDAR: %s", resp.Status)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", u.String(), nil)
		req.SetBasicAuth(user, password)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return u.String(), user, password
}

func (f *fixture) eventTypes(prefix string) []string {
	f.T.Helper()
	page, err := f.Store.ListEvents(context.Background(), f.User.ID, ams.EventFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil {
		f.T.Fatal(err)
	}
	var out []string
	for _, e := range page.Data {
		if strings.HasPrefix(e.Type, prefix) {
			out = append(out, e.Type)
		}
	}
	return out
}

func (f *fixture) integrationCount() int {
	f.T.Helper()
	p, err := f.Store.ListIntegrations(context.Background(), f.User.ID, ams.ListParams{Limit: 100})
	if err != nil {
		f.T.Fatal(err)
	}
	return len(p.Data)
}

func TestIntegrationLifecycle(t *testing.T) {
	t.Parallel()
	cal, user, password := radicaleCalendar(t)
	f := setup(t)
	withCalDAV(f)
	r := f.do("POST", "/v1/integrations", `{"provider":"caldav","config":{"url":"`+strings.TrimSuffix(cal, "/")+`","username":"`+user+`"},"secrets":{"password":"`+password+`"}}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	in := r.json(t)
	id, _ := in["id"].(string)
	if !ams.HasPrefixID(id, ams.PrefixIntegration) || r.header.Get("Location") != "/v1/integrations/"+id || in["object"] != "integration" ||
		in["provider"] != "caldav" || in["status"] != "connected" || in["last_error"] != nil || strings.Contains(string(r.body), password) {
		t.Fatalf("created: %s", r.body)
	}
	if c := in["config"].(map[string]any); c["url"] != cal || c["username"] != user || len(c) != 2 {
		t.Fatalf("config %v", c)
	}
	if g := f.do("GET", "/v1/integrations/"+id, ""); g.status != 200 || g.json(t)["id"] != id || strings.Contains(string(g.body), password) {
		t.Fatalf("get: %d %s", g.status, g.body)
	}
	if l := f.do("GET", "/v1/integrations", "").json(t); len(l["data"].([]any)) != 1 {
		t.Fatalf("list: %v", l)
	}
	if s := f.do("POST", "/v1/integrations/"+id+"/sync", ""); s.status != 200 || s.json(t)["status"] != "connected" {
		t.Fatalf("sync: %d %s", s.status, s.body)
	}
	if d := f.do("DELETE", "/v1/integrations/"+id, ""); d.status != 204 || len(d.body) != 0 {
		t.Fatalf("delete: %d %s", d.status, d.body)
	}
	if g := f.do("GET", "/v1/integrations/"+id, "").json(t); g["status"] != "disconnected" {
		t.Fatalf("after delete: %v", g)
	}
	if d := f.do("DELETE", "/v1/integrations/"+id, ""); d.status != 204 {
		t.Fatalf("second delete: %d %s", d.status, d.body)
	}
	if got := strings.Join(f.eventTypes("integration."), " "); got != "integration.connected integration.disconnected" {
		t.Fatalf("events %s", got)
	}
	wantError(t, f.do("POST", "/v1/integrations/"+id+"/sync", ""), 409, "invalid_request_error", "integration_disconnected", "")
	wantError(t, f.do("GET", "/v1/integrations/int_nope", ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("DELETE", "/v1/integrations/wh_nope", ""), 404, "invalid_request_error", "resource_missing", "")

	// Another account sees none of it.
	other := f.NewKey(f.NewUser("bob@example.com", ams.PlanStandard), "read,integrations")
	if r := f.Do("GET", "/v1/integrations/"+id, other, ""); r.Status != 404 {
		t.Fatalf("other account: %d", r.Status)
	}
}

func TestIntegrationRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	withCalDAV(f)
	cases := []struct{ name, body, code, param string }{
		{"missing provider", `{"config":{"url":"http://127.0.0.1:1/cal/"}}`, "parameter_missing", "provider"},
		{"unknown provider", `{"provider":"exchange","config":{}}`, "parameter_invalid", "provider"},
		{"feed provider", `{"provider":"ical_feed","config":{}}`, "parameter_invalid", "provider"},
		{"missing url", `{"provider":"caldav","config":{"username":"ann"}}`, "parameter_missing", "config.url"},
		{"unknown config field", `{"provider":"caldav","config":{"url":"http://127.0.0.1:1/cal/","calendar":"x"}}`, "unknown_parameter", "config.calendar"},
		{"unknown secret", `{"provider":"caldav","config":{"url":"http://127.0.0.1:1/cal/"},"secrets":{"token":"x"}}`, "unknown_parameter", "secrets.token"},
		{"secret not a string", `{"provider":"caldav","config":{"url":"http://127.0.0.1:1/cal/"},"secrets":{"password":1}}`, "invalid_type", "secrets.password"},
		{"unknown field", `{"provider":"caldav","config":{"url":"http://127.0.0.1:1/cal/"},"colour":"red"}`, "unknown_parameter", "colour"},
		{"bad url", `{"provider":"caldav","config":{"url":"ftp://example.com/cal/"}}`, "parameter_invalid", "config.url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, f.do("POST", "/v1/integrations", c.body), 400, "invalid_request_error", c.code, c.param)
		})
	}
	wantError(t, f.do("POST", "/v1/integrations", `{"provider":"caldav","config":{"url":"http://127.0.0.1:1/cal/"}}`),
		502, "api_error", "integration_unreachable", "")
	if n := f.integrationCount(); n != 0 {
		t.Fatalf("%d integrations stored", n)
	}
	if ev := f.eventTypes("integration."); len(ev) != 0 {
		t.Fatalf("events %v", ev)
	}
}

// Without --dev, a CalDAV URL on loopback is refused like a webhook URL.
func TestIntegrationURLGuard(t *testing.T) {
	t.Parallel()
	f := setup(t)
	w := withCalDAV(f)
	w.Guard = &ssrf.Guard{}
	wantError(t, f.do("POST", "/v1/integrations", `{"provider":"caldav","config":{"url":"https://127.0.0.1/cal/"}}`),
		400, "invalid_request_error", "parameter_invalid", "config.url")
	wantError(t, f.do("POST", "/v1/integrations", `{"provider":"caldav","config":{"url":"http://dav.example.com/cal/"}}`),
		400, "invalid_request_error", "parameter_invalid", "config.url")
}

func TestIntegrationWrongPassword(t *testing.T) {
	t.Parallel()
	cal, user, _ := radicaleCalendar(t)
	f := setup(t)
	withCalDAV(f)
	wantError(t, f.do("POST", "/v1/integrations", `{"provider":"caldav","config":{"url":"`+cal+`","username":"`+user+`"},"secrets":{"password":"wrong"}}`),
		400, "invalid_request_error", "integration_unauthorized", "secrets.password")
	if n := f.integrationCount(); n != 0 {
		t.Fatalf("%d integrations stored", n)
	}
}

func TestIntegrationPermissions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	withCalDAV(f)
	readOnly := f.NewKey(f.User, "read")
	integ := f.NewKey(f.User, "integrations")
	write := f.NewKey(f.User, "write")
	body := `{"provider":"caldav","config":{"url":"http://127.0.0.1:1/cal/"}}`
	for _, key := range []string{readOnly, write} {
		r := f.Do("POST", "/v1/integrations", key, body)
		if r.Status != 403 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `scope="integrations"`) {
			t.Fatalf("POST without integrations: %d %s", r.Status, r.Header.Get("WWW-Authenticate"))
		}
	}
	if r := f.Do("POST", "/v1/calendar/feed", readOnly, ""); r.Status != 403 {
		t.Fatalf("feed with read: %d", r.Status)
	}
	if r := f.Do("POST", "/v1/calendar/feed", integ, ""); r.Status != 201 {
		t.Fatalf("feed with integrations: %d %s", r.Status, r.Body)
	}
	id := f.do("GET", "/v1/integrations", "").json(t)["data"].([]any)[0].(map[string]any)["id"].(string)
	for _, key := range []string{readOnly, integ} {
		if r := f.Do("GET", "/v1/integrations/"+id, key, ""); r.Status != 200 {
			t.Fatalf("GET: %d", r.Status)
		}
	}
	if r := f.Do("GET", "/v1/integrations/"+id, write, ""); r.Status != 403 {
		t.Fatalf("GET with write: %d", r.Status)
	}
	if r := f.Do("DELETE", "/v1/integrations/"+id, readOnly, ""); r.Status != 403 {
		t.Fatalf("DELETE with read: %d", r.Status)
	}
	wantError(t, f.do("POST", "/v1/integrations/"+id+"/sync", ""), 400, "invalid_request_error", "integration_not_syncable", "")
}

// A new integration's first sync starts at once, in the background.
func TestIntegrationFirstSync(t *testing.T) {
	t.Parallel()
	cal, user, password := radicaleCalendar(t)
	f := setup(t)
	w := withCalDAV(f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	ev := f.do("POST", "/v1/calendar/events", `{"assistant_id":"`+f.Assistant.ID+`","title":"Lunch","starts_at":"2026-11-22T12:00:00Z"}`)
	if ev.status != 201 {
		t.Skipf("POST /v1/calendar/events not served here: %d", ev.status)
	}
	id := ev.json(t)["id"].(string)
	if r := f.do("POST", "/v1/integrations", `{"provider":"caldav","config":{"url":"`+cal+`","username":"`+user+`"},"secrets":{"password":"`+password+`"}}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	wait.Eventually(t, "the event to reach the server", func() bool {
		req, _ := http.NewRequest("GET", cal+id+".ics", nil)
		req.SetBasicAuth(user, password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}
