package hostile_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/caldav"
	"github.com/amsdev/ams/internal/race"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/hostile"
	"github.com/amsdev/ams/ssrf"
)

// calendarAnswer is a well-behaved answer to PROPFIND Depth 0: the URL is
// a calendar collection.
const calendarAnswer = `<?xml version="1.0" encoding="utf-8"?>
<d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:response><d:href>/cal/</d:href>
<d:propstat><d:prop><d:resourcetype><d:collection/><c:calendar/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>
</d:response></d:multistatus>`

// listingStart and listingItem make a multistatus listing of the
// collection without end (PROPFIND Depth 1).
var (
	listingStart = []byte(`<?xml version="1.0" encoding="utf-8"?>
<d:multistatus xmlns:d="DAV:">`)
	listingItem = []byte(`<d:response><d:href>/cal/event.ics</d:href><d:propstat><d:prop><d:getetag>"1"</d:getetag>` +
		`<d:resourcetype/><d:getcontenttype>text/calendar</d:getcontenttype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>`)
)

// TestCalDAVServer syncs a CalDAV integration with servers that answer
// the sync's listing (PROPFIND Depth 1) as an attacker would. Finding H1:
// an endless multistatus (113 MB in 20 s) took ams past 1.5 GB and
// killed it, at every sync. Now the sync fails with a clear last_error
// (status error, integration.error) and its memory stays bounded.
//
// Decoding a multistatus allocates some 20 times its size, and many times
// slower under the race detector: with it, the test bounds answers to
// 512 KiB rather than caldav.MaxResponseBytes.
func TestCalDAVServer(t *testing.T) {
	maxBody := int64(caldav.MaxResponseBytes)
	if race.Enabled {
		maxBody = 512 << 10
	}
	cases := []calDAVCase{
		{name: "endless multistatus", act: hostile.EndlessBody(207, "application/xml", listingStart, listingItem),
			budget: 24 * maxBody, want: "its body exceeds the limit of " + ssrf.Size(maxBody)},
		{name: "gzip bomb", act: hostile.GzipBomb(207, "application/xml", hostile.NewBomb(listingStart, listingItem)),
			budget: 24 * maxBody, want: "its body exceeds the limit of " + ssrf.Size(maxBody)},
		{name: "huge headers", act: hostile.HugeHeaders(207), budget: 4 << 20,
			want: "its headers exceed the limit of 64 KiB"},
		{name: "trickled multistatus", act: hostile.Trickle(207, "application/xml", listingStart, listingItem, 5*time.Millisecond),
			budget: 4 << 20, want: "did not answer in time", timeout: 300 * time.Millisecond},
		{name: "hang", act: hostile.Hang(), budget: 4 << 20, want: "did not answer in time", timeout: 300 * time.Millisecond},
		{name: "not HTTP", act: hostile.Garbage(), budget: 4 << 20, want: "Could not connect"},
		{name: "malformed XML", act: hostile.Answer(207, "application/xml", []byte(`<d:multistatus xmlns:d="DAV:"><d:response><d:href>`)),
			budget: 4 << 20, want: "could not"},
	}
	onEngines(t, func(t *testing.T, opts ...amstest.Option) {
		f := amstest.New(t, opts...)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { testCalDAVServer(t, f, tc, maxBody) })
		}
	})
}

// calDAVCase is a server's behaviour and what it must lead to.
type calDAVCase struct {
	name   string
	act    hostile.Act
	budget int64
	want   string // in last_error
	// timeout bounds each request of the sync: short for the
	// peers that a time bound stops; the others must be stopped
	// by a size bound, long before it.
	timeout time.Duration
}

func testCalDAVServer(t *testing.T, f *amstest.Fixture, tc calDAVCase, maxBody int64) {
	timeout := tc.timeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	f.App.Calendars.Client = caldav.NewHTTPClientWith(&ssrf.Guard{AllowPrivate: true}, ssrf.Limits{Timeout: timeout, MaxBodyBytes: maxBody})
	listed := make(chan struct{}, 1)
	peer := hostile.NewHTTP(t, func(req *http.Request) hostile.Act {
		switch {
		case req.Method == "PROPFIND" && req.Header.Get("Depth") == "0":
			return hostile.Answer(207, "application/xml; charset=utf-8", []byte(calendarAnswer))
		case req.Method == "PROPFIND":
			select {
			case listed <- struct{}{}:
			default:
			}
			return tc.act
		}
		return hostile.Answer(404, "text/plain", []byte("not found"))
	})
	r := f.Do("POST", "/v1/integrations", f.Key, `{"provider":"caldav","config":{"url":"`+peer.URL+`/cal/"},"secrets":{"password":"pw"}}`)
	if r.Status != 201 {
		t.Fatalf("create integration: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)

	m := hostile.Measure()
	r = f.Do("POST", "/v1/integrations/"+id+"/sync", f.Key, "")
	used := m.Allocated()
	select {
	case <-listed:
	default:
		t.Fatal("the sync did not list the collection")
	}
	t.Logf("the sync allocated %s; the server sent %s", hostile.MiB(used), hostile.MiB(peer.Sent()))
	if used > tc.budget {
		t.Errorf("the sync allocated %s, more than %s: the server's answer is not bounded (it sent %s)",
			hostile.MiB(used), hostile.MiB(tc.budget), hostile.MiB(peer.Sent()))
	}

	// What the account's owner sees: the integration in error,
	// saying why, and the integration.error event.
	if r.Status != 200 {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	in := r.JSON(t)
	msg, _ := in["last_error"].(string)
	if in["status"] != "error" || !strings.Contains(msg, tc.want) {
		t.Fatalf("integration after the sync: status %v, last_error %q; want error saying %q", in["status"], msg, tc.want)
	}
	if got := f.Do("GET", "/v1/integrations/"+id, f.Key, "").JSON(t); got["status"] != "error" || got["last_error"] != msg {
		t.Fatalf("integration as stored: %v", got)
	}
	// On PostgreSQL an event is listed once no older transaction runs
	// (in any test sharing the server): wait for the store to show it.
	waitFor(t, "the integration.error event", func() bool {
		evs, err := f.Data.ListEvents(context.Background(), f.User.ID, ams.EventFilter{}, ams.ListParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Data {
			if b, _ := json.Marshal(e.Data); e.Type == ams.EventIntegrationError && strings.Contains(string(b), id) {
				return true
			}
		}
		return false
	})
}
