package caldav

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/emersion/go-ical"
)

func decode(t *testing.T, s string) *ical.Calendar {
	t.Helper()
	cal, err := ical.NewDecoder(strings.NewReader(strings.ReplaceAll(strings.TrimSpace(s), "\n", "\r\n") + "\r\n")).Decode()
	if err != nil {
		t.Fatal(err)
	}
	return cal
}

func vevent(body string) string {
	return "BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//t//t//EN\n" + body + "\nEND:VCALENDAR"
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestReadEvent(t *testing.T) {
	at := func(s string) *time.Time { v := utc(s); return &v }
	cases := []struct {
		name, ics  string
		start, end string
		remind     *time.Time
		title      string
	}{
		{"utc with absolute alarm", "BEGIN:VEVENT\nUID:a\nDTSTART:20261122T150000Z\nDTEND:20261122T160000Z\nSUMMARY:A\nBEGIN:VALARM\nACTION:DISPLAY\nTRIGGER;VALUE=DATE-TIME:20261122T140000Z\nEND:VALARM\nEND:VEVENT",
			"2026-11-22T15:00:00Z", "2026-11-22T16:00:00Z", at("2026-11-22T14:00:00Z"), "A"},
		{"tzid and duration", "BEGIN:VEVENT\nUID:b\nDTSTART;TZID=America/New_York:20260701T090000\nDURATION:PT90M\nSUMMARY:B\nEND:VEVENT",
			"2026-07-01T13:00:00Z", "2026-07-01T14:30:00Z", nil, "B"},
		{"all day", "BEGIN:VEVENT\nUID:c\nDTSTART;VALUE=DATE:20261224\nSUMMARY:C\nEND:VEVENT",
			"2026-12-24T00:00:00Z", "2026-12-25T00:00:00Z", nil, "C"},
		{"alarm related to the end", "BEGIN:VEVENT\nUID:d\nDTSTART:20261122T150000Z\nDTEND:20261122T160000Z\nSUMMARY:D\nBEGIN:VALARM\nACTION:AUDIO\nTRIGGER;RELATED=END:-PT5M\nEND:VALARM\nEND:VEVENT",
			"2026-11-22T15:00:00Z", "2026-11-22T16:00:00Z", at("2026-11-22T15:55:00Z"), "D"},
		{"unknown tzid read as UTC, no end, no title", "BEGIN:VEVENT\nUID:e\nDTSTART;TZID=W. Europe Standard Time:20261122T150000\nEND:VEVENT",
			"2026-11-22T15:00:00Z", "2026-11-22T15:01:00Z", nil, "(no title)"},
		{"recurring: the master, not the override", "BEGIN:VEVENT\nUID:f\nRECURRENCE-ID:20261129T150000Z\nDTSTART:20261129T170000Z\nSUMMARY:moved\nEND:VEVENT\nBEGIN:VEVENT\nUID:f\nDTSTART:20261122T150000Z\nDTEND:20261122T160000Z\nRRULE:FREQ=WEEKLY\nSUMMARY:F\nEND:VEVENT",
			"2026-11-22T15:00:00Z", "2026-11-22T16:00:00Z", nil, "F"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			uid, f, err := readEvent(decode(t, vevent(c.ics)))
			if err != nil {
				t.Fatal(err)
			}
			if uid == "" || f.Title != c.title || !f.StartsAt.Equal(utc(c.start)) || !f.EndsAt.Equal(utc(c.end)) || !timeEqual(f.RemindAt, c.remind) {
				t.Fatalf("got %s %+v", uid, f)
			}
		})
	}
	for _, ics := range []string{"BEGIN:VTODO\nUID:t\nSUMMARY:todo\nEND:VTODO", "BEGIN:VEVENT\nUID:n\nSUMMARY:no start\nEND:VEVENT"} {
		if _, _, err := readEvent(decode(t, vevent(ics))); err != errNoEvent {
			t.Errorf("%q: err %v, want errNoEvent", ics, err)
		}
	}
}

func TestSyncStateAndHash(t *testing.T) {
	st := syncState{ETag: `abc|"def"`, Hash: "0123"}
	if got := parseState(st.String()); got != st {
		t.Fatalf("round trip %+v", got)
	}
	e := &ams.CalendarEvent{Title: "T", StartsAt: utc("2026-11-22T15:00:00Z"), EndsAt: utc("2026-11-22T16:00:00Z")}
	h := fieldsOf(e).hash()
	e.Description = "x"
	if fieldsOf(e).hash() == h {
		t.Fatal("hash ignores the description")
	}
}

func TestWriteFeed(t *testing.T) {
	remind := utc("2026-11-22T14:45:00Z")
	events := []*ams.CalendarEvent{
		{ID: "cev_A", Title: "Dentist, upstairs", Description: "line 1\nline 2; with, punctuation", Location: "Main St 1",
			StartsAt: utc("2026-11-22T15:00:00Z"), EndsAt: utc("2026-11-22T15:30:00Z"), RemindAt: &remind,
			CreatedAt: utc("2026-11-20T10:00:00Z"), UpdatedAt: utc("2026-11-21T10:00:00Z")},
		{ID: "cev_B", Title: "Lunch", StartsAt: utc("2026-11-23T12:00:00Z"), EndsAt: utc("2026-11-23T13:00:00Z"),
			CreatedAt: utc("2026-11-20T10:00:00Z"), UpdatedAt: utc("2026-11-20T10:00:00Z")},
	}
	var b bytes.Buffer
	if err := WriteFeed(&b, "ams", events, utc("2026-11-21T12:00:00Z")); err != nil {
		t.Fatal(err)
	}
	cal, err := ical.NewDecoder(&b).Decode()
	if err != nil {
		t.Fatal(err)
	}
	evs := cal.Events()
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	uid, f, err := readEvent(&ical.Calendar{Component: &ical.Component{Name: ical.CompCalendar, Children: []*ical.Component{evs[0].Component}}})
	if err != nil || uid != "cev_A" || !f.equal(fieldsOf(events[0])) {
		t.Fatalf("read back %s %+v %v", uid, f, err)
	}
	if lm, _ := evs[0].Props.DateTime(ical.PropLastModified, nil); !lm.Equal(events[0].UpdatedAt) {
		t.Fatalf("LAST-MODIFIED %v", lm)
	}

	b.Reset()
	if err := WriteFeed(&b, "ams", nil, utc("2026-11-21T12:00:00Z")); err != nil {
		t.Fatal(err)
	}
	cal, err = ical.NewDecoder(&b).Decode()
	if err != nil || len(cal.Events()) != 0 {
		t.Fatalf("empty feed: %v %v", cal, err)
	}
}
