package caldav

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/emersion/go-ical"
)

// fuzzNow is the clock of the iCalendar fuzz targets.
var fuzzNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// fuzzLines normalises line endings (\r\n and a lone \r become \n): what
// the calendar text of ams may become on its way to iCalendar.
func fuzzLines(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// fuzzStorable reports whether s is text the API stores in a calendar
// event field of at most max bytes: valid UTF-8 without NUL.
func fuzzStorable(s string, max int) bool {
	return len(s) <= max && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// fuzzSameFields compares the fields read back with those written,
// line endings normalised.
func fuzzSameFields(t *testing.T, what string, got, want fields) {
	t.Helper()
	w := want
	w.Title, w.Description, w.Location = fuzzLines(w.Title), fuzzLines(w.Description), fuzzLines(w.Location)
	g := got
	g.Title, g.Description, g.Location = fuzzLines(g.Title), fuzzLines(g.Description), fuzzLines(g.Location)
	if !g.equal(w) {
		t.Fatalf("%s: read back\n%+v\nwrote\n%+v", what, got, want)
	}
}

// fuzzReadOne decodes an iCalendar object that must hold one event.
func fuzzReadOne(t *testing.T, what string, b []byte) (string, fields) {
	t.Helper()
	cal, err := ical.NewDecoder(bytes.NewReader(b)).Decode()
	if err != nil {
		t.Fatalf("%s does not parse back: %v\n%s", what, err, b)
	}
	uid, f, err := readEvent(cal)
	if err != nil {
		t.Fatalf("%s: no event read back: %v\n%s", what, err, b)
	}
	return uid, f
}

// FuzzWriteFeed: the calendar feed encodes every event ams can store (any
// valid UTF-8 text without NUL in the title, description and location, any
// name), and what it writes parses back to the same event.
func FuzzWriteFeed(f *testing.F) {
	for _, s := range [][4]string{
		{"Dentist", "", "", "ams"},
		{"Dentist, upstairs; \\ back", "line 1\nline 2; with, punctuation", "Main St 1", "Ada's calendar"},
		{"Windows\r\nline", "a\rb", "c\r\n", "name\r"},
		{"   padded   ", "\ttab", " ", "\n"},
		{"émoji 🎉 " + strings.Repeat("x", 120), strings.Repeat("long line without a break ", 400), strings.Repeat("ü", 249), strings.Repeat("n", 300)},
		{"\x01\x1f\x7f control", "\u2028\u2029\u0085", "\"quoted\"", "\"q\";:,"},
		{"BEGIN:VEVENT", "END:VCALENDAR\nBEGIN:VCALENDAR", "a:b;c=d", "X-WR-CALNAME:x"},
	} {
		f.Add(s[0], s[1], s[2], s[3], int64(1795435200), int64(3600), int64(-900))
		f.Add(s[0], s[1], s[2], s[3], int64(0), int64(1), int64(1))
	}
	f.Fuzz(func(t *testing.T, title, desc, place, name string, start, length, remind int64) {
		if !fuzzStorable(title, maxTitle) || strings.TrimSpace(title) == "" || !fuzzStorable(desc, maxText) ||
			!fuzzStorable(place, maxPlace) || !fuzzStorable(name, maxTitle) {
			return // the API refuses these
		}
		// Times as the API takes them: whole seconds in years 1970 to 9999,
		// an end after the start.
		const last = 253402300799 // 9999-12-31T23:59:59Z
		start = min(max(start, 0), last-1)
		length = min(max(length, 1), last-start)
		e := &ams.CalendarEvent{ID: "cev_fuzz", Title: title, Description: desc, Location: place,
			StartsAt: time.Unix(start, 0).UTC(), EndsAt: time.Unix(start+length, 0).UTC(),
			CreatedAt: fuzzNow, UpdatedAt: fuzzNow}
		if r := start + remind; remind != 0 && r >= 0 && r <= last {
			at := time.Unix(r, 0).UTC()
			e.RemindAt = &at
		}
		var b bytes.Buffer
		if err := WriteFeed(&b, name, []*ams.CalendarEvent{e}, fuzzNow); err != nil {
			t.Fatalf("WriteFeed(%q, %q, %q, name %q): %v", title, desc, place, name, err)
		}
		uid, got := fuzzReadOne(t, "the feed", b.Bytes())
		if uid != e.ID {
			t.Fatalf("UID %q, want %q", uid, e.ID)
		}
		fuzzSameFields(t, "the feed", got, fieldsOf(e))
	})
}

// FuzzReadICal: reading a remote calendar object never panics; what it
// reads is an event ams can store (a title, valid UTF-8 without NUL
// within the field limits, an end after the start); and the object
// updated with a changed event (as the sync writes it back) encodes and
// reads back as that event.
func FuzzReadICal(f *testing.F) {
	for _, s := range []string{
		"BEGIN:VEVENT\nDTSTAMP:20261120T000000Z\nUID:a\nDTSTART:20261122T150000Z\nDTEND:20261122T160000Z\nSUMMARY:A\nBEGIN:VALARM\nACTION:DISPLAY\nTRIGGER;VALUE=DATE-TIME:20261122T140000Z\nEND:VALARM\nEND:VEVENT",
		"BEGIN:VEVENT\nDTSTAMP:20261120T000000Z\nUID:b\nDTSTART;TZID=America/New_York:20260701T090000\nDURATION:PT90M\nSUMMARY:B\nDESCRIPTION:x\\ny\\, z\\;\\\\\nLOCATION:here\nEND:VEVENT",
		"BEGIN:VEVENT\nDTSTAMP:20261120T000000Z\nUID:c\nDTSTART;VALUE=DATE:20261224\nSUMMARY:C\nEND:VEVENT",
		"BEGIN:VEVENT\nDTSTAMP:20261120T000000Z\nUID:d\nDTSTART:20261122T150000Z\nDTEND:20261122T160000Z\nSUMMARY:D\nBEGIN:VALARM\nACTION:AUDIO\nTRIGGER;RELATED=END:-PT5M\nEND:VALARM\nEND:VEVENT",
		"BEGIN:VEVENT\nDTSTAMP:20261120T000000Z\nUID:e\nDTSTART;TZID=W. Europe Standard Time:20261122T150000\nEND:VEVENT",
		"BEGIN:VEVENT\nDTSTAMP:20261120T000000Z\nUID:f\nRECURRENCE-ID:20261129T150000Z\nDTSTART:20261129T170000Z\nSUMMARY:moved\nEND:VEVENT\nBEGIN:VEVENT\nDTSTAMP:20261120T000000Z\nUID:f\nDTSTART:20261122T150000Z\nDTEND:20261122T160000Z\nRRULE:FREQ=WEEKLY\nSEQUENCE:3\nSUMMARY:F\nATTENDEE;CN=\"Ann, B\":mailto:a@example.com\nEND:VEVENT",
		"BEGIN:VEVENT\nDTSTAMP:20261120T000000Z\nUID:g\nDTSTART:99991231T235900Z\nDURATION:P2D\nSUMMARY:end of time\nEND:VEVENT",
		"BEGIN:VEVENT\nDTSTAMP:20261120T000000Z\nUID:h\nDTSTART:20261122T150000Z\nSUMMARY:folded\n  line\nDESCRIPTION:bad \\q escape\nEND:VEVENT",
		"BEGIN:VTODO\nUID:t\nSUMMARY:todo\nEND:VTODO",
	} {
		ics := strings.ReplaceAll(vevent(s), "\n", "\r\n") + "\r\n"
		f.Add([]byte(ics), "New title")
		f.Add([]byte(ics), "")
	}
	f.Fuzz(func(t *testing.T, ics []byte, title string) {
		// go-ical's decoder panics on some malformed lines (a parameter and
		// no colon: "0;0="); the sync reads remote objects through
		// decodeSafely, which turns that into an unreadable object.
		cal, err := decodeSafely(func() (*ical.Calendar, error) { return ical.NewDecoder(bytes.NewReader(ics)).Decode() })
		if err != nil || cal == nil {
			return
		}
		uid, got, err := readEvent(cal)
		if err != nil {
			if err != errNoEvent {
				t.Fatalf("readEvent: %v, want errNoEvent", err)
			}
			return
		}
		if uid == "" || strings.TrimSpace(got.Title) == "" || !fuzzStorable(got.Title, maxTitle) ||
			!fuzzStorable(got.Description, maxText) || !fuzzStorable(got.Location, maxPlace) || !got.EndsAt.After(got.StartsAt) {
			t.Fatalf("readEvent read what ams cannot store: %q %+v", uid, got)
		}
		// An object go-ical will not encode as it came (one that breaks
		// RFC 5545, such as a VEVENT without DTSTAMP) is not the sync's
		// to repair; any other must still encode once updated.
		if err := ical.NewEncoder(io.Discard).Encode(cal); err != nil {
			return
		}
		// The sync changes the event here and writes it back.
		e := &ams.CalendarEvent{CreatedAt: fuzzNow, UpdatedAt: fuzzNow}
		got.apply(e)
		if fuzzStorable(title, maxTitle) && strings.TrimSpace(title) != "" {
			e.Title = title
		}
		if err := updateCalendar(cal, e, fuzzNow); err != nil {
			t.Fatalf("updateCalendar: %v", err)
		}
		var b bytes.Buffer
		if err := ical.NewEncoder(&b).Encode(cal); err != nil {
			t.Fatalf("the updated remote object does not encode: %v", err)
		}
		uid2, back := fuzzReadOne(t, "the updated object", b.Bytes())
		if uid2 != uid {
			t.Fatalf("UID %q became %q", uid, uid2)
		}
		fuzzSameFields(t, "the updated object", back, fieldsOf(e))
	})
}
