package caldav

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	_ "time/tzdata" // TZIDs of remote events resolve on machines without a zoneinfo database
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/emersion/go-ical"
)

// What one calendar event is in iCalendar, both ways.
//
// An event is one VEVENT: UID, DTSTART and DTEND in UTC, SUMMARY,
// DESCRIPTION, LOCATION, and a VALARM (ACTION:DISPLAY) whose trigger is
// remind_at. Reading a remote object takes its master VEVENT (the one
// without RECURRENCE-ID): a recurring event is its first instance here,
// and writing it back changes only the properties ams holds, so its
// RRULE, exceptions, attendees and whatever else it has stay as they are.

// ProdID is the PRODID of the iCalendar objects ams writes.
const ProdID = "-//ams//Assistant Messaging Service " + ams.Version + "//EN"

// Field limits of ams's calendar events (those of package world), to which
// remote text is cut.
const (
	maxTitle = 500
	maxText  = 10_000
	maxPlace = 500
)

// fields are the parts of a calendar event that a sync carries.
type fields struct {
	Title, Description, Location string
	StartsAt, EndsAt             time.Time
	RemindAt                     *time.Time
}

// fieldsOf returns the fields of e as iCalendar carries them: text
// through icalText, so that a row stored with a "\r" (before input was
// normalised) is written, hashed and compared as it reads back; and a
// title left blank by that (one of control characters only) as a blank
// title reads back, "(no title)".
func fieldsOf(e *ams.CalendarEvent) fields {
	return fields{Title: titleOf(icalText(e.Title)), Description: icalText(e.Description), Location: icalText(e.Location),
		StartsAt: e.StartsAt.UTC(), EndsAt: e.EndsAt.UTC(), RemindAt: e.RemindAt}
}

// noTitle is the title of an event whose SUMMARY is missing or blank:
// ams's events have a title.
const noTitle = "(no title)"

// titleOf returns title, or noTitle when it is blank.
func titleOf(title string) string {
	if strings.TrimSpace(title) == "" {
		return noTitle
	}
	return title
}

func (f fields) apply(e *ams.CalendarEvent) {
	e.Title, e.Description, e.Location = f.Title, f.Description, f.Location
	e.StartsAt, e.EndsAt = f.StartsAt, f.EndsAt
	if !timeEqual(e.RemindAt, f.RemindAt) {
		e.RemindAt = f.RemindAt
		e.RemindedAt = nil
	}
}

func (f fields) equal(g fields) bool {
	return f.Title == g.Title && f.Description == g.Description && f.Location == g.Location &&
		f.StartsAt.Equal(g.StartsAt) && f.EndsAt.Equal(g.EndsAt) && timeEqual(f.RemindAt, g.RemindAt)
}

// hash identifies the fields' values: the sync keeps the hash of what it
// last wrote or read, to tell a local change.
func (f fields) hash() string {
	h := sha256.New()
	remind := ""
	if f.RemindAt != nil {
		remind = f.RemindAt.UTC().Format(time.RFC3339Nano)
	}
	for _, s := range []string{f.Title, f.Description, f.Location, f.StartsAt.UTC().Format(time.RFC3339Nano),
		f.EndsAt.UTC().Format(time.RFC3339Nano), remind} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func timeEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// syncState is what CalendarEvent.ExternalETag holds: the remote object's
// ETag when the event was last in step with it, and the hash of the
// event's fields then ("<etag>|<hash>"). A different remote ETag is a
// remote change; a different hash, a local one.
type syncState struct{ ETag, Hash string }

func parseState(s string) syncState {
	i := strings.LastIndexByte(s, '|')
	if i < 0 {
		return syncState{ETag: s}
	}
	return syncState{ETag: s[:i], Hash: s[i+1:]}
}

func (s syncState) String() string { return s.ETag + "|" + s.Hash }

// errNoEvent marks a remote object that holds no usable VEVENT (a task, a
// journal entry, an event without a start): the sync leaves it alone.
var errNoEvent = errors.New("caldav: no usable VEVENT")

// master returns the VEVENT of cal that is not an override of one
// instance, or the first VEVENT.
func master(cal *ical.Calendar) *ical.Component {
	var first *ical.Component
	for _, c := range cal.Children {
		if c.Name != ical.CompEvent {
			continue
		}
		if first == nil {
			first = c
		}
		if c.Props.Get(ical.PropRecurrenceID) == nil {
			return c
		}
	}
	return first
}

// readEvent reads the master VEVENT of cal: its UID and fields.
func readEvent(cal *ical.Calendar) (string, fields, error) {
	var f fields
	ev := master(cal)
	if ev == nil {
		return "", f, errNoEvent
	}
	uid, _ := ev.Props.Text(ical.PropUID)
	if uid == "" {
		return "", f, errNoEvent
	}
	start, allDay, err := dateTime(ev.Props.Get(ical.PropDateTimeStart))
	if err != nil {
		return "", f, errNoEvent
	}
	end := start
	switch {
	case ev.Props.Get(ical.PropDateTimeEnd) != nil:
		if end, _, err = dateTime(ev.Props.Get(ical.PropDateTimeEnd)); err != nil {
			end = start
		}
	case ev.Props.Get(ical.PropDuration) != nil:
		if d, err := ev.Props.Get(ical.PropDuration).Duration(); err == nil {
			end = start.Add(d)
		}
	case allDay:
		end = start.Add(24 * time.Hour)
	}
	if !end.After(start) {
		// ams's events end after they start; a zero-length (or broken)
		// remote event lasts a minute here.
		end = start.Add(time.Minute)
	}
	f.StartsAt, f.EndsAt = start, end
	f.Title = titleOf(clip(text(ev, ical.PropSummary), maxTitle))
	f.Description = clip(text(ev, ical.PropDescription), maxText)
	f.Location = clip(text(ev, ical.PropLocation), maxPlace)
	f.RemindAt = alarm(ev, start, end)
	return uid, f, nil
}

func text(c *ical.Component, name string) string {
	s, err := c.Props.Text(name)
	if err != nil {
		return ""
	}
	return icalText(strings.ToValidUTF8(s, ""))
}

// dateTime reads a DTSTART or DTEND: a DATE is midnight UTC of that day; a
// DATE-TIME in a TZID unknown to Go is read as UTC.
func dateTime(p *ical.Prop) (time.Time, bool, error) {
	if p == nil {
		return time.Time{}, false, errNoEvent
	}
	allDay := p.ValueType() == ical.ValueDate || (p.ValueType() == ical.ValueDefault && len(p.Value) == len("20060102"))
	t, err := p.DateTime(time.UTC)
	if err != nil && p.Params.Get(ical.PropTimezoneID) != "" {
		q := *p
		q.Params = ical.Params{}
		t, err = q.DateTime(time.UTC)
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return t.UTC().Truncate(time.Millisecond), allDay, nil
}

// alarm returns the time of the first VALARM of ev: an absolute trigger,
// or a duration from the start (or the end, RELATED=END).
func alarm(ev *ical.Component, start, end time.Time) *time.Time {
	for _, a := range ev.Children {
		if a.Name != ical.CompAlarm {
			continue
		}
		p := a.Props.Get(ical.PropTrigger)
		if p == nil {
			continue
		}
		if p.ValueType() == ical.ValueDateTime {
			if t, err := p.DateTime(time.UTC); err == nil {
				t = t.UTC().Truncate(time.Millisecond)
				return &t
			}
			continue
		}
		d, err := p.Duration()
		if err != nil {
			continue
		}
		base := start
		if strings.EqualFold(p.Params.Get(ical.ParamRelated), "END") {
			base = end
		}
		t := base.Add(d).UTC().Truncate(time.Millisecond)
		return &t
	}
	return nil
}

// clip cuts s to at most max bytes on a character boundary.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// newCalendar returns a VCALENDAR holding one new VEVENT for e.
func newCalendar(e *ams.CalendarEvent, uid string, now time.Time) *ical.Calendar {
	cal := ical.NewCalendar()
	cal.Props.SetText(ical.PropVersion, "2.0")
	cal.Props.SetText(ical.PropProductID, ProdID)
	ev := ical.NewComponent(ical.CompEvent)
	ev.Props.SetText(ical.PropUID, uid)
	ev.Props.SetDateTime(ical.PropDateTimeStamp, now.UTC())
	ev.Props.SetDateTime(ical.PropCreated, e.CreatedAt.UTC())
	writeEvent(ev, fields{}, fieldsOf(e), now)
	cal.Children = append(cal.Children, ev)
	return cal
}

// updateCalendar writes the fields of e into the master VEVENT of cal (a
// remote object), changing only the properties whose value differs from
// what the object holds (was), so that what ams does not know of is kept.
func updateCalendar(cal *ical.Calendar, e *ams.CalendarEvent, now time.Time) error {
	ev := master(cal)
	if ev == nil {
		return errNoEvent
	}
	_, was, err := readEvent(cal)
	if err != nil {
		return err
	}
	writeEvent(ev, was, fieldsOf(e), now)
	if ev.Props.Get(ical.PropDateTimeStamp) == nil {
		ev.Props.SetDateTime(ical.PropDateTimeStamp, now.UTC())
	}
	seq := 0
	if p := ev.Props.Get(ical.PropSequence); p != nil {
		seq, _ = p.Int()
	}
	sp := ical.NewProp(ical.PropSequence)
	sp.Value = fmt.Sprint(seq + 1)
	ev.Props.Set(sp)
	return nil
}

// writeEvent sets the properties of ev that differ between was and f.
func writeEvent(ev *ical.Component, was, f fields, now time.Time) {
	setText := func(name, old, v string) {
		if old == v && ev.Props.Get(name) != nil {
			return
		}
		if v == "" {
			ev.Props.Del(name)
			return
		}
		ev.Props.SetText(name, icalText(v))
	}
	setText(ical.PropSummary, was.Title, f.Title)
	setText(ical.PropDescription, was.Description, f.Description)
	setText(ical.PropLocation, was.Location, f.Location)
	if !was.StartsAt.Equal(f.StartsAt) || !was.EndsAt.Equal(f.EndsAt) || ev.Props.Get(ical.PropDateTimeStart) == nil {
		ev.Props.SetDateTime(ical.PropDateTimeStart, f.StartsAt.UTC())
		ev.Props.Del(ical.PropDuration)
		ev.Props.SetDateTime(ical.PropDateTimeEnd, f.EndsAt.UTC())
	}
	if !timeEqual(was.RemindAt, f.RemindAt) || (f.RemindAt != nil && !hasAlarm(ev)) {
		kept := ev.Children[:0]
		for _, c := range ev.Children {
			if c.Name != ical.CompAlarm {
				kept = append(kept, c)
			}
		}
		ev.Children = kept
		if f.RemindAt != nil {
			ev.Children = append(ev.Children, newAlarm(f.Title, f.StartsAt, *f.RemindAt))
		}
	}
	ev.Props.SetDateTime(ical.PropLastModified, now.UTC())
}

func hasAlarm(ev *ical.Component) bool {
	for _, c := range ev.Children {
		if c.Name == ical.CompAlarm {
			return true
		}
	}
	return false
}

// newAlarm returns a display alarm at remind: a trigger relative to the
// start when the reminder comes before it (what every calendar app
// shows), an absolute one otherwise.
func newAlarm(title string, start, remind time.Time) *ical.Component {
	a := ical.NewComponent(ical.CompAlarm)
	a.Props.SetText(ical.PropAction, "DISPLAY")
	a.Props.SetText(ical.PropDescription, icalText(title))
	p := ical.NewProp(ical.PropTrigger)
	if d := remind.Sub(start); d <= 0 && d%time.Second == 0 {
		p.SetDuration(d)
	} else {
		p.SetDateTime(remind.UTC())
	}
	a.Props.Set(p)
	return a
}

// WriteFeed writes events as one iCalendar object (RFC 5545) named name:
// the calendar feed that calendar apps subscribe to. Each VEVENT's UID is
// the event's cev_ id; times are UTC; remind_at is a VALARM. Any text
// that can be stored is written (see icalText), and long lines are
// folded.
func WriteFeed(w io.Writer, name string, events []*ams.CalendarEvent, now time.Time) error {
	cal := ical.NewCalendar()
	cal.Props.SetText(ical.PropVersion, "2.0")
	cal.Props.SetText(ical.PropProductID, ProdID)
	cal.Props.SetText(ical.PropCalendarScale, "GREGORIAN")
	cal.Props.SetText(ical.PropName, icalText(name))
	xname := ical.NewProp("X-WR-CALNAME") // the name Apple and Google read
	xname.SetText(icalText(name))
	xname.Params.Del(ical.ParamValue)
	cal.Props.Set(xname)
	// How often subscribers should fetch the feed again (RFC 7986, and
	// the older name Outlook and Apple read).
	ri := ical.NewProp(ical.PropRefreshInterval)
	ri.SetDuration(15 * time.Minute)
	ri.Params.Set(ical.ParamValue, string(ical.ValueDuration))
	cal.Props.Set(ri)
	ttl := ical.NewProp("X-PUBLISHED-TTL")
	ttl.Value = "PT15M"
	cal.Props.Set(ttl)
	for _, e := range events {
		ev := ical.NewComponent(ical.CompEvent)
		ev.Props.SetText(ical.PropUID, e.ID)
		ev.Props.SetDateTime(ical.PropDateTimeStamp, now.UTC())
		ev.Props.SetDateTime(ical.PropCreated, e.CreatedAt.UTC())
		writeEvent(ev, fields{}, fieldsOf(e), now)
		ev.Props.SetDateTime(ical.PropLastModified, e.UpdatedAt.UTC())
		cal.Children = append(cal.Children, ev)
	}
	if len(cal.Children) == 0 {
		// go-ical refuses an empty VCALENDAR; RFC 5545 wants a component
		// too, but calendar apps read an empty feed as an empty calendar.
		var b bytes.Buffer
		b.WriteString("BEGIN:VCALENDAR\r\n")
		for _, p := range []string{"VERSION:2.0", "PRODID:" + ProdID, "CALSCALE:GREGORIAN"} {
			b.WriteString(p + "\r\n")
		}
		b.WriteString("END:VCALENDAR\r\n")
		_, err := w.Write(b.Bytes())
		return err
	}
	return encodeCalendar(w, cal)
}
