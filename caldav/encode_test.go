package caldav

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/emersion/go-ical"
)

func TestICalText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                     "plain",
		"a\r\nb":                    "a\nb",
		"a\rb\r":                    "a\nb\n",
		"tab\tstays, \\ ; too":      "tab\tstays, \\ ; too",
		"bell\x07 esc\x1b del\x7f.": "bell esc del.",
		"nul\x00":                   "nul",
		"\x01\x02\x03\x04\x05\x06\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1c\x1d\x1e\x1f": "",
		"bad \xff utf-8":  "bad \uFFFD utf-8",
		"é€😀\u0085\u2028": "é€😀\u0085\u2028", // C1 and U+2028 are not iCalendar control characters
	} {
		if got := icalText(in); got != want {
			t.Errorf("icalText(%q) = %q, want %q", in, got, want)
		}
	}
}

// checkLines checks that data is iCalendar's line structure: CRLF line
// ends only, at most 75 octets a line, each line valid UTF-8 (no
// character cut by a fold).
func checkLines(t *testing.T, data []byte) {
	t.Helper()
	if !bytes.HasSuffix(data, []byte("\r\n")) {
		t.Fatalf("does not end with CRLF: %q", data[max(0, len(data)-20):])
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\r\n"), "\r\n") {
		if strings.ContainsAny(line, "\r\n") {
			t.Fatalf("line %d holds a bare CR or LF: %q", i, line)
		}
		if len(line) > maxLine {
			t.Fatalf("line %d is %d octets: %q", i, len(line), line)
		}
		if !utf8.ValidString(line) {
			t.Fatalf("line %d cuts a character: %q", i, line)
		}
	}
}

func TestFold(t *testing.T) {
	unfold := func(s string) string { return strings.ReplaceAll(s, "\r\n ", "") }
	for _, n := range []int{1, 2, 3, 4} { // octets per character
		r := []string{"a", "é", "€", "😀"}[n-1]
		for length := 60; length <= 400; length += 7 {
			// Every offset of the characters against the fold points.
			for lead := 0; lead < 4; lead++ {
				line := "DESCRIPTION:" + strings.Repeat("x", lead) + strings.Repeat(r, length/n)
				in := "BEGIN:VEVENT\r\n" + line + "\r\nEND:VEVENT\r\n"
				out := fold([]byte(in))
				checkLines(t, out)
				if got := unfold(string(out)); got != in {
					t.Fatalf("unfolds to %q, want %q", got, in)
				}
			}
		}
	}
	short := []byte("A:b\r\nC:d\r\n")
	if got := fold(short); !bytes.Equal(got, short) {
		t.Fatalf("short lines changed: %q", got)
	}
	exact := "X:" + strings.Repeat("y", maxLine-2) + "\r\n"
	if got := string(fold([]byte(exact))); got != exact {
		t.Fatalf("a 75-octet line was folded: %q", got)
	}
}

// oddEvent is an event as an old row may hold it: carriage returns,
// control characters, long lines of multi-byte text.
func oddEvent(id string) *ams.CalendarEvent {
	at := time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC)
	remind := at.Add(-15 * time.Minute)
	return &ams.CalendarEvent{ID: id, Object: "calendar_event",
		Title:       "Board\r\nmeeting\r, with; commas \\ and a bell\x07 " + strings.Repeat("é€😀", 30),
		Description: "Agenda:\r\n1. budget\r2. hiring\r\n" + strings.Repeat("Lorem ipsum dolor sit amet, ", 40) + "\x1b[0m",
		Location:    "Room 1\r\nFloor 2\x7f",
		StartsAt:    at, EndsAt: at.Add(time.Hour), RemindAt: &remind, CreatedAt: at, UpdatedAt: at}
}

func TestWriteFeedOddText(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	e := oddEvent("cev_odd")
	plain := &ams.CalendarEvent{ID: "cev_plain", Title: "Lunch", StartsAt: e.StartsAt, EndsAt: e.EndsAt, CreatedAt: now, UpdatedAt: now}
	var b bytes.Buffer
	if err := WriteFeed(&b, "My\r\ncalendar", []*ams.CalendarEvent{e, plain}, now); err != nil {
		t.Fatal(err)
	}
	checkLines(t, b.Bytes())
	cal, err := ical.NewDecoder(&b).Decode()
	if err != nil {
		t.Fatalf("does not parse back: %v", err)
	}
	if len(cal.Children) != 2 {
		t.Fatalf("%d events", len(cal.Children))
	}
	uid, f, err := readEvent(&ical.Calendar{Component: &ical.Component{Name: ical.CompCalendar, Children: cal.Children[:1]}})
	if err != nil || uid != "cev_odd" {
		t.Fatalf("read back %q %v", uid, err)
	}
	want := fieldsOf(e)
	if !f.equal(want) {
		t.Fatalf("read back\n%+v\nwant\n%+v", f, want)
	}
	if want.Title != "Board\nmeeting\n, with; commas \\ and a bell "+strings.Repeat("é€😀", 30) || want.Location != "Room 1\nFloor 2" ||
		!strings.HasPrefix(want.Description, "Agenda:\n1. budget\n2. hiring\n") || !strings.HasSuffix(want.Description, "[0m") {
		t.Fatalf("normalised fields %+v", want)
	}
	if name, _ := cal.Props.Text(ical.PropName); name != "My\ncalendar" {
		t.Fatalf("NAME %q", name)
	}
}

// A remote object may hold values go-ical refuses to write (a raw line
// break left in a property ams does not know, or in one that is not
// text); writing it back still works.
func TestEncodeRemoteObjectWithLineBreaks(t *testing.T) {
	cal := decode(t, vevent("BEGIN:VEVENT\nUID:r\nDTSTAMP:20261120T090000Z\nDTSTART:20261122T150000Z\nSUMMARY:R\nEND:VEVENT"))
	ev := cal.Children[0]
	ev.Props.Set(&ical.Prop{Name: "X-NOTE", Params: ical.Params{}, Value: "one\rtwo\r\nthree"})
	ev.Props.Set(&ical.Prop{Name: ical.PropURL, Params: ical.Params{}, Value: "https://example.com/\r\na"})
	if err := updateCalendar(cal, oddEvent("cev_x"), time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := encodeCalendar(&b, cal); err != nil {
		t.Fatal(err)
	}
	checkLines(t, b.Bytes())
	back, err := ical.NewDecoder(&b).Decode()
	if err != nil {
		t.Fatal(err)
	}
	ev = back.Children[0]
	if v, _ := ev.Props.Text("X-NOTE"); v != "one\ntwo\nthree" {
		t.Fatalf("X-NOTE %q", v)
	}
	if v := ev.Props.Get(ical.PropURL).Value; v != "https://example.com/ a" {
		t.Fatalf("URL %q", v)
	}
	if _, f, err := readEvent(back); err != nil || !f.equal(fieldsOf(oddEvent("cev_x"))) {
		t.Fatalf("read back %+v %v", f, err)
	}
}

func TestDescribeRefusals(t *testing.T) {
	one := describeRefusals([]refusal{{"cev_a", 400}})
	if !strings.HasPrefix(one, "The CalDAV server refused 1 event (HTTP 400): cev_a.") {
		t.Fatal(one)
	}
	var many []refusal
	for _, id := range []string{"cev_1", "cev_2", "cev_3", "cev_4", "cev_5", "cev_6", "cev_7"} {
		many = append(many, refusal{id, 400})
	}
	many[6].Code = 415
	if got := describeRefusals(many); !strings.HasPrefix(got, "The CalDAV server refused 7 events (HTTP 400, HTTP 415): cev_1, cev_2, cev_3, cev_4, cev_5 and 2 more.") {
		t.Fatal(got)
	}
	for code, want := range map[int]bool{400: true, 403: true, 404: true, 409: true, 413: true, 415: true, 422: true, 500: true,
		401: false, 407: false, 412: false, 429: false, 503: false} {
		if _, got := refused(&statusError{"PUT", code}); got != want {
			t.Errorf("refused(%d) = %v", code, got)
		}
	}
	if _, got := refused(nil); got {
		t.Error("refused(nil)")
	}
	if code, got := refused(remoteErr(&statusError{"PUT", 415})); !got || code != 415 {
		t.Error("a wrapped 415 is not a refusal")
	}
	if code, got := refused(remoteErr(fmt.Errorf("%w: x", errUnwritable))); !got || code != 0 {
		t.Error("an unwritable object is not a refusal")
	}
	if _, got := refused(remoteErr(errors.New("dial tcp: connection refused"))); got {
		t.Error("a network failure is a refusal")
	}
	if got := describeRefusals([]refusal{{"cev_a", 0}}); !strings.HasPrefix(got, "The CalDAV server refused 1 event (not writable as iCalendar): cev_a.") {
		t.Error(got)
	}
}

// A remote object that go-ical cannot read (it panics on some) is left
// out of a fetch; the others are read.
func TestFetchSkipsUnreadableObject(t *testing.T) {
	good := strings.ReplaceAll(vevent("BEGIN:VEVENT\nUID:g\nDTSTAMP:20261120T090000Z\nDTSTART:20261122T150000Z\nSUMMARY:Good\nEND:VEVENT"), "\n", "\r\n") + "\r\n"
	bad := map[string]string{
		"/cal/panic1.ics": "BEGIN:VCALENDAR\r\nX;P=\"a\"b:v\r\nEND:VCALENDAR\r\n",
		"/cal/panic2.ics": "BEGIN:VCALENDAR\r\nX;P=\"a\"\r\nEND:VCALENDAR\r\n",
		"/cal/broken.ics": "BEGIN:VCALENDAR\r\nno colon here\r\nEND:VCALENDAR\r\n",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "no REPORT here", http.StatusInternalServerError)
			return
		}
		body, ok := bad[r.URL.Path]
		if r.URL.Path == "/cal/good.ics" {
			body, ok = good, true
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/calendar")
		w.Header().Set("ETag", `"1"`)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	rc, err := newRemote(srv.Client(), srv.URL+"/cal/", "", "")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := rc.fetch(context.Background(), []string{"/cal/panic1.ics", "/cal/good.ics", "/cal/panic2.ics", "/cal/broken.ics", "/cal/gone.ics"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Path != "/cal/good.ics" {
		t.Fatalf("fetched %+v", objs)
	}
	if _, err := rc.get(context.Background(), "/cal/panic1.ics"); err == nil || !unreadable(err) {
		t.Fatalf("get: %v", err)
	}
}
