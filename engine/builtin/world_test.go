package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// testNow is Saturday 21 November 2026, 10:00 UTC: 11:00 in Berlin, 05:00
// in New York.
var testNow = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

// The records the fake toolbox starts with.
func cannedTasks() []*ams.Task {
	return []*ams.Task{
		{ID: "task_passport", Object: "task", Title: "Renew passport", Status: ams.TaskOpen, DueAt: ts("2026-11-27T23:59:00Z")},
		{ID: "task_anna", Object: "task", Title: "Call Anna", Status: ams.TaskOpen, DueAt: ts("2026-11-22T09:00:00Z"), RemindAt: ts("2026-11-22T09:00:00Z")},
		{ID: "task_report", Object: "task", Title: "Write quarterly report", Status: ams.TaskOpen},
		{ID: "task_dana", Object: "task", Title: "Send report to Dana", Status: ams.TaskOpen, DueAt: ts("2026-11-23T12:00:00Z")},
	}
}

func cannedEvents() []*ams.CalendarEvent {
	return []*ams.CalendarEvent{
		{ID: "evt_lunch", Object: "calendar_event", Title: "Lunch with Sam", Location: "Cafe Luna",
			StartsAt: *ts("2026-11-24T11:30:00Z"), EndsAt: *ts("2026-11-24T12:30:00Z")},
		{ID: "evt_dentist", Object: "calendar_event", Title: "Dentist",
			StartsAt: *ts("2026-11-22T08:00:00Z"), EndsAt: *ts("2026-11-22T08:45:00Z")},
	}
}

// toolCall is one run the fake toolbox saw: the tool and its decoded input.
type toolCall struct {
	Name  string
	Input map[string]any
}

func (c toolCall) String() string {
	b, _ := json.Marshal(c.Input)
	return c.Name + " " + string(b)
}

// fakeTools records the calls and answers like the real toolbox would,
// from canned tasks and events; fail makes a tool's action fail, runErr
// makes Run fail outright.
type fakeTools struct {
	tasks  []*ams.Task
	events []*ams.CalendarEvent
	fail   map[string]*ams.ActionError
	runErr error
	calls  []toolCall
}

func (f *fakeTools) Specs() []ams.ToolSpec { return nil }

func (f *fakeTools) Run(ctx context.Context, name string, input json.RawMessage) (*ams.Action, error) {
	var in map[string]any
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("fake: input of %s: %w", name, err)
	}
	f.calls = append(f.calls, toolCall{name, in})
	if f.runErr != nil {
		return nil, f.runErr
	}
	a := &ams.Action{ID: fmt.Sprintf("act_%d", len(f.calls)), Object: "action", Type: name, Input: input, CreatedAt: testNow}
	fail := func(code, msg, param string) (*ams.Action, error) {
		a.Status = ams.ActionFailed
		a.Error = &ams.ActionError{Type: "invalid_request_error", Code: code, Message: msg, Param: param}
		return a, nil
	}
	if e := f.fail[name]; e != nil {
		a.Status, a.Error = ams.ActionFailed, e
		return a, nil
	}
	str := func(k string) string { s, _ := in[k].(string); return s }
	tm := func(k string) *time.Time {
		if s := str(k); s != "" {
			return ts(s)
		}
		return nil
	}
	findTask := func() *ams.Task {
		for _, t := range f.tasks {
			if t.ID == str("task_id") {
				return t
			}
		}
		return nil
	}
	var result any
	switch name {
	case "create_task":
		result = &ams.Task{ID: "task_new", Object: "task", Title: str("title"), Notes: str("notes"), Status: ams.TaskOpen,
			DueAt: tm("due_at"), RemindAt: tm("remind_at"), CreatedAt: testNow, UpdatedAt: testNow}
	case "update_task", "complete_task":
		t := findTask()
		if t == nil {
			return fail("resource_missing", "No such task: "+str("task_id")+".", "task_id")
		}
		u := *t
		if _, ok := in["title"]; ok {
			u.Title = str("title")
		}
		if _, ok := in["due_at"]; ok {
			u.DueAt = tm("due_at")
		}
		if name == "complete_task" {
			u.Status, u.CompletedAt = ams.TaskCompleted, &testNow
		}
		result = &u
	case "list_tasks":
		var data []*ams.Task
		for _, t := range f.tasks {
			if s := str("status"); s == "" || s == t.Status {
				data = append(data, t)
			}
		}
		result = map[string]any{"object": "list", "data": data, "has_more": false}
	case "create_calendar_event":
		result = &ams.CalendarEvent{ID: "evt_new", Object: "calendar_event", Title: str("title"), Location: str("location"),
			StartsAt: *tm("starts_at"), EndsAt: *tm("ends_at"), CreatedAt: testNow, UpdatedAt: testNow}
	case "update_calendar_event":
		var e *ams.CalendarEvent
		for _, x := range f.events {
			if x.ID == str("event_id") {
				e = x
			}
		}
		if e == nil {
			return fail("resource_missing", "No such event.", "event_id")
		}
		u := *e
		if s := tm("starts_at"); s != nil {
			u.StartsAt = *s
		}
		if s := tm("ends_at"); s != nil {
			u.EndsAt = *s
		}
		result = &u
	case "list_calendar_events":
		after, before := tm("starts_after"), tm("starts_before")
		var data []*ams.CalendarEvent
		for _, e := range f.events {
			if (after == nil || e.EndsAt.After(*after)) && (before == nil || e.StartsAt.Before(*before)) {
				data = append(data, e)
			}
		}
		result = map[string]any{"object": "list", "data": data, "has_more": false}
	default:
		return fail("unknown_tool", "No tool "+name+".", "type")
	}
	a.Status = ams.ActionSucceeded
	a.Result, _ = json.Marshal(result)
	return a, nil
}

func mustLoad(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

const (
	berlin  = "Europe/Berlin"
	newYork = "America/New_York"
)

// TestWorld is the table of plain-language requests with the exact tool
// calls each must make (tool, then its input as JSON), at testNow unless
// the case says otherwise.
func TestWorld(t *testing.T) {
	tests := []struct {
		name    string
		msg     string
		loc     string    // time zone; UTC if ""
		now     time.Time // testNow if zero
		noTools bool
		empty   bool // no canned tasks or events
		fail    map[string]*ams.ActionError
		calls   []string // "tool {input}"
		reply   string   // the exact reply, if set
		has     []string // substrings of the reply
	}{
		// Reminders.
		{name: "remind tomorrow at 9", msg: "remind me to call Anna tomorrow at 9",
			calls: []string{`create_task {"title":"Call Anna","due_at":"2026-11-22T09:00:00Z","remind_at":"2026-11-22T09:00:00Z"}`},
			reply: "I'll remind you to call Anna tomorrow at 09:00."},
		{name: "remind tomorrow at 9 in Berlin", msg: "Remind me to call Anna tomorrow at 9", loc: berlin,
			calls: []string{`create_task {"title":"Call Anna","due_at":"2026-11-22T08:00:00Z","remind_at":"2026-11-22T08:00:00Z"}`},
			reply: "I'll remind you to call Anna tomorrow at 09:00."},
		{name: "remind tomorrow at 9 in New York", msg: "remind me to call Anna tomorrow at 9", loc: newYork,
			calls: []string{`create_task {"title":"Call Anna","due_at":"2026-11-22T14:00:00Z","remind_at":"2026-11-22T14:00:00Z"}`}},
		{name: "time before the task", msg: "Remind me tomorrow at 9 to call Anna.",
			calls: []string{`create_task {"title":"Call Anna","due_at":"2026-11-22T09:00:00Z","remind_at":"2026-11-22T09:00:00Z"}`}},
		{name: "remind at 5pm, in the second person", msg: "can you remind me to call my mom at 5pm?",
			calls: []string{`create_task {"title":"Call my mom","due_at":"2026-11-21T17:00:00Z","remind_at":"2026-11-21T17:00:00Z"}`},
			reply: "I'll remind you to call your mom today at 17:00."},
		{name: "remind in 2 hours", msg: "remind me to take out the trash in 2 hours",
			calls: []string{`create_task {"title":"Take out the trash","due_at":"2026-11-21T12:00:00Z","remind_at":"2026-11-21T12:00:00Z"}`}},
		{name: "a day alone reminds at 9", msg: "remind me to water the plants on Monday",
			calls: []string{`create_task {"title":"Water the plants","due_at":"2026-11-23T09:00:00Z","remind_at":"2026-11-23T09:00:00Z"}`},
			reply: "I'll remind you to water the plants on Mon 23 Nov at 09:00."},
		{name: "a passed hour is tomorrow's", msg: "remind me to call Anna at 9",
			calls: []string{`create_task {"title":"Call Anna","due_at":"2026-11-22T09:00:00Z","remind_at":"2026-11-22T09:00:00Z"}`}},
		{name: "tonight", msg: "remind me to pay the rent tonight",
			calls: []string{`create_task {"title":"Pay the rent","due_at":"2026-11-21T23:00:00Z","remind_at":"2026-11-21T23:00:00Z"}`}},
		{name: "midnight in Berlin is tomorrow 00:00", msg: "remind me at midnight to lock the door", loc: berlin,
			calls: []string{`create_task {"title":"Lock the door","due_at":"2026-11-21T23:00:00Z","remind_at":"2026-11-21T23:00:00Z"}`},
			reply: "I'll remind you to lock the door tomorrow at 00:00."},
		{name: "after local midnight, tomorrow is the local one", msg: "remind me to call Anna tomorrow at 9", loc: berlin,
			now:   time.Date(2026, 11, 21, 23, 30, 0, 0, time.UTC), // Sunday 00:30 in Berlin
			calls: []string{`create_task {"title":"Call Anna","due_at":"2026-11-23T08:00:00Z","remind_at":"2026-11-23T08:00:00Z"}`}},
		{name: "before local midnight, tomorrow is the local one", msg: "remind me to call Anna tomorrow at 9", loc: newYork,
			now:   time.Date(2026, 11, 22, 4, 30, 0, 0, time.UTC), // Saturday 23:30 in New York
			calls: []string{`create_task {"title":"Call Anna","due_at":"2026-11-22T14:00:00Z","remind_at":"2026-11-22T14:00:00Z"}`}},
		{name: "across the end of summer time", msg: "remind me to call Anna on Monday at 9", loc: berlin,
			now:   time.Date(2026, 10, 24, 10, 0, 0, 0, time.UTC), // Saturday, CEST; Monday is CET
			calls: []string{`create_task {"title":"Call Anna","due_at":"2026-10-26T08:00:00Z","remind_at":"2026-10-26T08:00:00Z"}`}},
		{name: "remind me about, on a day of a month", msg: "remind me of Sam's birthday on 3 December",
			calls: []string{`create_task {"title":"Sam's birthday","due_at":"2026-12-03T09:00:00Z","remind_at":"2026-12-03T09:00:00Z"}`},
			reply: "I'll remind you about Sam's birthday on Thu 3 Dec at 09:00."},
		{name: "a weekday abbreviation in a name is no date", msg: "remind me to call Sun Li tomorrow", loc: berlin,
			calls: []string{`create_task {"title":"Call Sun Li","due_at":"2026-11-22T08:00:00Z","remind_at":"2026-11-22T08:00:00Z"}`}},
		{name: "no time: ask, do not act", msg: "remind me to call Anna someday",
			has: []string{"When should I remind you to call Anna someday?"}},
		{name: "unreadable time: ask, do not act", msg: "remind me to call Anna at 25:99",
			has: []string{`I couldn't read "at 25:99" as a time`, "When should I remind you to call Anna?"}},
		{name: "13pm is no time", msg: "remind me to call Anna tomorrow at 13pm",
			has: []string{`I couldn't read "13pm" as a time`}},
		{name: "a passed day: ask", msg: "remind me to stretch today",
			has: []string{"Today at 09:00 has already passed."}},
		{name: "nothing to remind", msg: "remind me tomorrow at 9", has: []string{"What should I remind you about?"}},

		// Adding tasks.
		{name: "add a task by Friday", msg: "add a task: renew passport by Friday",
			calls: []string{`create_task {"title":"Renew passport","due_at":"2026-11-27T23:59:00Z"}`},
			reply: "Added a task: Renew passport, due Fri 27 Nov."},
		{name: "add a task by Friday in Berlin", msg: "Add a task: renew passport by Friday.", loc: berlin,
			calls: []string{`create_task {"title":"Renew passport","due_at":"2026-11-27T22:59:00Z"}`},
			reply: "Added a task: Renew passport, due Fri 27 Nov."},
		{name: "by Friday on a Friday is today", msg: "add a task: renew passport by Friday",
			now:   time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC),
			calls: []string{`create_task {"title":"Renew passport","due_at":"2026-11-20T23:59:00Z"}`},
			reply: "Added a task: Renew passport, due today."},
		{name: "on Friday on a Friday is next week's", msg: "add a task: call the bank on Friday",
			now:   time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC),
			calls: []string{`create_task {"title":"Call the bank","due_at":"2026-11-27T23:59:00Z"}`}},
		{name: "todo without a date", msg: "todo: buy milk",
			calls: []string{`create_task {"title":"Buy milk"}`}, reply: "Added a task: Buy milk."},
		{name: "add to my to-do list", msg: "Add buy milk to my to-do list",
			calls: []string{`create_task {"title":"Buy milk"}`}},
		{name: "I need to, by next Friday", msg: "I need to renew my passport by next Friday",
			calls: []string{`create_task {"title":"Renew my passport","due_at":"2026-11-27T23:59:00Z"}`}},
		{name: "next week is next Monday", msg: "create a task to file taxes next week",
			calls: []string{`create_task {"title":"File taxes","due_at":"2026-11-23T23:59:00Z"}`}},
		{name: "a month date", msg: "new task: send the invoice by December 3rd",
			calls: []string{`create_task {"title":"Send the invoice","due_at":"2026-12-03T23:59:00Z"}`}},
		{name: "a day/month date", msg: "add a task: book flights by 5/1",
			calls: []string{`create_task {"title":"Book flights","due_at":"2027-01-05T23:59:00Z"}`}},
		{name: "a due time", msg: "add a task: submit the report tomorrow at 17:00",
			calls: []string{`create_task {"title":"Submit the report","due_at":"2026-11-22T17:00:00Z"}`},
			reply: "Added a task: Submit the report, due tomorrow at 17:00."},
		{name: "an unreadable date adds nothing", msg: "add a task: pay rent by 12/25",
			has: []string{`I couldn't read "12/25" as a date or time, so I didn't add the task.`}},
		{name: "I need to without a date is no task", msg: "I need to think about it",
			has: []string{"You said:"}},

		// Listing tasks.
		{name: "what are my tasks", msg: "what are my tasks?", calls: []string{`list_tasks {"status":"open"}`},
			reply: "You have 4 open tasks:\n1. Renew passport, due Fri 27 Nov\n2. Call Anna, due tomorrow at 09:00\n3. Write quarterly report\n4. Send report to Dana, due Mon 23 Nov at 12:00"},
		{name: "what's on my list, in New York", msg: "What's on my list?", loc: newYork, calls: []string{`list_tasks {"status":"open"}`},
			has: []string{"1. Renew passport, due Fri 27 Nov at 18:59", "2. Call Anna, due tomorrow at 04:00", "Mon 23 Nov at 07:00"}},
		{name: "show open tasks", msg: "show open tasks", calls: []string{`list_tasks {"status":"open"}`}, has: []string{"4 open tasks"}},
		{name: "no tasks", msg: "what do I have to do?", empty: true, calls: []string{`list_tasks {"status":"open"}`},
			has: []string{"You have no open tasks."}},

		// Completing tasks.
		{name: "done with the passport task", msg: "done with the passport task",
			calls: []string{`list_tasks {"status":"open","limit":100}`, `complete_task {"task_id":"task_passport"}`},
			reply: `Done: "Renew passport" is marked as completed.`},
		{name: "mark as done", msg: "Mark call Anna as done",
			calls: []string{`list_tasks {"status":"open","limit":100}`, `complete_task {"task_id":"task_anna"}`}},
		{name: "I finished", msg: "I've finished the quarterly report!",
			calls: []string{`list_tasks {"status":"open","limit":100}`, `complete_task {"task_id":"task_report"}`}},
		{name: "ambiguous: ask", msg: "I'm done with the report",
			calls: []string{`list_tasks {"status":"open","limit":100}`},
			has:   []string{`Several open tasks match "report": "Write quarterly report" or "Send report to Dana". Which one`}},
		{name: "no such task: say so", msg: "done with the dishes",
			calls: []string{`list_tasks {"status":"open","limit":100}`},
			has:   []string{`I couldn't find an open task matching "dishes". Your open tasks are "Renew passport", "Call Anna"`}},

		// Changing tasks.
		{name: "rename a task", msg: "rename the passport task to Renew passport and visa",
			calls: []string{`list_tasks {"status":"open","limit":100}`, `update_task {"task_id":"task_passport","title":"Renew passport and visa"}`},
			reply: `Renamed "Renew passport" to "Renew passport and visa".`},
		{name: "change a due date", msg: "change the due date of the passport task to Monday",
			calls: []string{`list_tasks {"status":"open","limit":100}`, `update_task {"task_id":"task_passport","due_at":"2026-11-23T23:59:00Z"}`},
			reply: `"Renew passport" is now due Mon 23 Nov.`},
		{name: "postpone a task", msg: "postpone the passport task to December 4th at 10:00", loc: berlin,
			calls: []string{`list_tasks {"status":"open","limit":100}`, `update_task {"task_id":"task_passport","due_at":"2026-12-04T09:00:00Z"}`}},

		// Scheduling.
		{name: "schedule lunch on Tuesday 12:30 for an hour", msg: "schedule lunch with Sam on Tuesday 12:30 for an hour",
			calls: []string{`create_calendar_event {"title":"Lunch with Sam","starts_at":"2026-11-24T12:30:00Z","ends_at":"2026-11-24T13:30:00Z"}`},
			reply: "Scheduled: Lunch with Sam on Tue 24 Nov, 12:30–13:30."},
		{name: "schedule lunch in Berlin", msg: "Schedule lunch with Sam on Tuesday 12:30 for an hour.", loc: berlin,
			calls: []string{`create_calendar_event {"title":"Lunch with Sam","starts_at":"2026-11-24T11:30:00Z","ends_at":"2026-11-24T12:30:00Z"}`},
			reply: "Scheduled: Lunch with Sam on Tue 24 Nov, 12:30–13:30."},
		{name: "book with duration and location", msg: "book a meeting with Dana on Friday at 3pm for 30 minutes at the office",
			calls: []string{`create_calendar_event {"title":"Meeting with Dana","starts_at":"2026-11-27T15:00:00Z","ends_at":"2026-11-27T15:30:00Z","location":"the office"}`},
			reply: "Scheduled: Meeting with Dana on Fri 27 Nov, 15:00–15:30, at the office."},
		{name: "put on my calendar from to", msg: "put dentist on my calendar on Monday from 8:30 to 9:15",
			calls: []string{`create_calendar_event {"title":"Dentist","starts_at":"2026-11-23T08:30:00Z","ends_at":"2026-11-23T09:15:00Z"}`}},
		{name: "from 2 to 3pm", msg: "schedule a call with Bob tomorrow from 2 to 3pm", loc: newYork,
			calls: []string{`create_calendar_event {"title":"Call with Bob","starts_at":"2026-11-22T19:00:00Z","ends_at":"2026-11-22T20:00:00Z"}`},
			reply: "Scheduled: Call with Bob tomorrow, 14:00–15:00."},
		{name: "location first, hours and a half", msg: "schedule team dinner at Luigi's tomorrow at 7pm for an hour and a half",
			calls: []string{`create_calendar_event {"title":"Team dinner","starts_at":"2026-11-22T19:00:00Z","ends_at":"2026-11-22T20:30:00Z","location":"Luigi's"}`}},
		{name: "a place with words after it", msg: "schedule lunch with Sam on Tuesday at 12:30 at the Cafe on Main Street",
			calls: []string{`create_calendar_event {"title":"Lunch with Sam","starts_at":"2026-11-24T12:30:00Z","ends_at":"2026-11-24T13:30:00Z","location":"the Cafe on Main Street"}`}},
		{name: "repeating events are refused", msg: "schedule yoga every Monday at 7",
			reply: `I can't schedule repeating events yet. I can schedule one at a time: "schedule yoga on Monday at 7".`},
		{name: "tonight at 8 in New York", msg: "book dinner with Sam tonight at 8", loc: newYork,
			calls: []string{`create_calendar_event {"title":"Dinner with Sam","starts_at":"2026-11-22T01:00:00Z","ends_at":"2026-11-22T02:00:00Z"}`},
			reply: "Scheduled: Dinner with Sam today, 20:00–21:00."},
		{name: "ISO date", msg: "schedule the board meeting on 2026-12-01 at 10:00 for 2 hours",
			calls: []string{`create_calendar_event {"title":"Board meeting","starts_at":"2026-12-01T10:00:00Z","ends_at":"2026-12-01T12:00:00Z"}`}},
		{name: "end before start: refuse", msg: "schedule lunch with Sam on Tuesday from 14:00 to 13:00",
			has: []string{"Lunch with Sam would end at 13:00, before it starts at 14:00, so I didn't schedule it."}},
		{name: "a day without a time: ask", msg: "schedule lunch with Sam on Tuesday",
			reply: `What time on Tue 24 Nov should I schedule lunch with Sam? For example "at 12:30".`},
		{name: "no day or time: ask", msg: "book a haircut",
			has: []string{"When should I schedule haircut?"}},
		{name: "unreadable time: refuse", msg: "schedule lunch with Sam tomorrow at 25:00",
			has: []string{`I couldn't read "at 25:00" as a time, so I didn't schedule lunch with Sam.`}},
		{name: "in the past: refuse", msg: "schedule standup today at 8:00",
			has: []string{"Today at 08:00 has already passed."}},

		// Reading the calendar.
		{name: "calendar tomorrow", msg: "what's on my calendar tomorrow?",
			calls: []string{`list_calendar_events {"starts_after":"2026-11-22T00:00:00Z","starts_before":"2026-11-23T00:00:00Z","limit":100}`},
			reply: "You have 1 event tomorrow (Sun 22 Nov):\n- 08:00–08:45 Dentist"},
		{name: "calendar tomorrow in Berlin", msg: "What's on my calendar tomorrow?", loc: berlin,
			calls: []string{`list_calendar_events {"starts_after":"2026-11-21T23:00:00Z","starts_before":"2026-11-22T23:00:00Z","limit":100}`},
			reply: "You have 1 event tomorrow (Sun 22 Nov):\n- 09:00–09:45 Dentist"},
		{name: "calendar this week", msg: "what's on my calendar this week?",
			calls: []string{`list_calendar_events {"starts_after":"2026-11-16T00:00:00Z","starts_before":"2026-11-23T00:00:00Z","limit":100}`},
			reply: "You have 1 event this week (Mon 16 – Sun 22 Nov):\n- Sun 22 Nov 08:00–08:45 Dentist"},
		{name: "calendar next week", msg: "show my calendar for next week",
			calls: []string{`list_calendar_events {"starts_after":"2026-11-23T00:00:00Z","starts_before":"2026-11-30T00:00:00Z","limit":100}`},
			has:   []string{"next week (Mon 23 – Sun 29 Nov)", "- Tue 24 Nov 11:30–12:30 Lunch with Sam, at Cafe Luna"}},
		{name: "what do I have on Tuesday", msg: "What do I have on Tuesday?", loc: berlin,
			calls: []string{`list_calendar_events {"starts_after":"2026-11-23T23:00:00Z","starts_before":"2026-11-24T23:00:00Z","limit":100}`},
			reply: "You have 1 event on Tue 24 Nov:\n- 12:30–13:30 Lunch with Sam, at Cafe Luna"},
		{name: "what's happening on Friday", msg: "what's happening on Friday?",
			calls: []string{`list_calendar_events {"starts_after":"2026-11-27T00:00:00Z","starts_before":"2026-11-28T00:00:00Z","limit":100}`}},
		{name: "an empty day", msg: "anything on my agenda today?",
			calls: []string{`list_calendar_events {"starts_after":"2026-11-21T00:00:00Z","starts_before":"2026-11-22T00:00:00Z","limit":100}`},
			reply: "Nothing on your calendar today (Sat 21 Nov)."},

		// Moving events.
		{name: "move to another day, same time", msg: "move lunch with Sam to Wednesday",
			calls: []string{`list_calendar_events {"starts_after":"2026-11-21T00:00:00Z","starts_before":"2027-01-20T00:00:00Z","limit":100}`,
				`update_calendar_event {"event_id":"evt_lunch","starts_at":"2026-11-25T11:30:00Z","ends_at":"2026-11-25T12:30:00Z"}`},
			reply: `Moved "Lunch with Sam" to Wed 25 Nov, 11:30–12:30.`},
		{name: "reschedule to another time, same day", msg: "reschedule the dentist to 10:30", loc: berlin,
			calls: []string{`list_calendar_events {"starts_after":"2026-11-20T23:00:00Z","starts_before":"2027-01-19T23:00:00Z","limit":100}`,
				`update_calendar_event {"event_id":"evt_dentist","starts_at":"2026-11-22T09:30:00Z","ends_at":"2026-11-22T10:15:00Z"}`},
			reply: `Moved "Dentist" to tomorrow, 10:30–11:15.`},
		{name: "move, no such event", msg: "move the yoga class to Friday",
			calls: []string{`list_calendar_events {"starts_after":"2026-11-21T00:00:00Z","starts_before":"2027-01-20T00:00:00Z","limit":100}`},
			has:   []string{`I couldn't find an event matching "yoga class"`}},

		// Failures and no tools.
		{name: "a failed action is explained", msg: "add a task: renew passport by Friday",
			fail:  map[string]*ams.ActionError{"create_task": {Type: "invalid_request_error", Code: "parameter_invalid", Message: "Title is too long.", Param: "title"}},
			calls: []string{`create_task {"title":"Renew passport","due_at":"2026-11-27T23:59:00Z"}`},
			reply: "I couldn't add the task: title is too long."},
		{name: "a failed list is explained", msg: "done with the passport task",
			fail:  map[string]*ams.ActionError{"list_tasks": {Type: "api_error", Code: "unavailable", Message: "The task store is unavailable."}},
			calls: []string{`list_tasks {"status":"open","limit":100}`},
			reply: "I couldn't read your tasks: the task store is unavailable."},
		{name: "no tools: remind", msg: "remind me to call Anna tomorrow at 9", noTools: true,
			has: []string{"I can't create tasks, reminders or calendar events here"}},
		{name: "no tools: list", msg: "what are my tasks?", noTools: true, has: []string{"I can't create tasks"}},
		{name: "no tools: calendar", msg: "what's on my calendar tomorrow?", noTools: true, has: []string{"I can't create tasks"}},
		{name: "small talk runs no tool", msg: "Hi!", has: []string{"Hello!"}},
		{name: "the time runs no tool", msg: "what time is it?", has: []string{"It's Saturday, 21 Nov 2026 10:00 UTC."}},
		{name: "deleting is not supported", msg: "delete the passport task", has: []string{"I can't delete tasks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = testNow
			}
			run := func() (*ams.Reply, *fakeTools) {
				req := &ams.EngineRequest{Assistant: ava, History: history(in(tt.msg)), Now: now, Location: mustLoad(tt.loc)}
				tools := &fakeTools{fail: tt.fail}
				if !tt.empty {
					tools.tasks, tools.events = cannedTasks(), cannedEvents()
				}
				if !tt.noTools {
					req.Tools = tools
				}
				r, err := New().Reply(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				return r, tools
			}
			r, tools := run()
			var got []string
			for _, c := range tools.calls {
				got = append(got, c.String())
			}
			if len(got) != len(tt.calls) {
				t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.calls, "\n"))
			} else {
				for i, want := range tt.calls {
					name, input, _ := strings.Cut(want, " ")
					var in map[string]any
					if err := json.Unmarshal([]byte(input), &in); err != nil {
						t.Fatalf("bad want %q: %v", want, err)
					}
					if c := tools.calls[i]; c.Name != name || !reflect.DeepEqual(c.Input, in) {
						t.Errorf("call %d = %s\nwant     %s", i, c, want)
					}
				}
			}
			if len(r.Actions) != len(tools.calls) {
				t.Errorf("%d actions in the reply, %d calls", len(r.Actions), len(tools.calls))
			}
			for i, a := range r.Actions {
				if a.Type != tools.calls[i].Name {
					t.Errorf("action %d is %s, call %s", i, a.Type, tools.calls[i].Name)
				}
			}
			if tt.reply != "" && r.Content != tt.reply {
				t.Errorf("reply:\n%s\nwant:\n%s", r.Content, tt.reply)
			}
			for _, w := range tt.has {
				if !strings.Contains(r.Content, w) {
					t.Errorf("reply lacks %q:\n%s", w, r.Content)
				}
			}
			if again, _ := run(); again.Content != r.Content {
				t.Errorf("reply is not deterministic:\n%s\n%s", r.Content, again.Content)
			}
		})
	}
	if len(tests) < 40 {
		t.Errorf("only %d sentences", len(tests))
	}
}

func TestWorldToolboxError(t *testing.T) {
	boom := errors.New("database is down")
	req := &ams.EngineRequest{Assistant: ava, History: history(in("add a task: renew passport by Friday")), Now: testNow,
		Tools: &fakeTools{runErr: boom}}
	r, err := New().Reply(context.Background(), req)
	if !errors.Is(err, boom) || r != nil {
		t.Fatalf("Reply = %v, %v; want the toolbox's error", r, err)
	}
}

func TestWorldStream(t *testing.T) {
	var streamed strings.Builder
	req := &ams.EngineRequest{Assistant: ava, History: history(in("todo: buy milk")), Now: testNow,
		Tools: &fakeTools{}, Stream: func(s string) error { streamed.WriteString(s); return nil }}
	r, err := New().Reply(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if streamed.String() != r.Content || r.Content != "Added a task: Buy milk." || len(r.Actions) != 1 {
		t.Fatalf("streamed %q, reply %q with %d actions", streamed.String(), r.Content, len(r.Actions))
	}
}

// TestFind checks the date reading on its own, in Berlin at testNow
// (Saturday 11:00 local).
func TestFind(t *testing.T) {
	c := newClock(testNow, mustLoad(berlin))
	for _, tt := range []struct {
		text, want string // want: local time, "date" or "time" if only one was named, "" for none
		rest       string
	}{
		{"call Anna tomorrow at 9", "Sun 22 Nov 09:00", "call Anna"},
		{"renew passport by Friday", "Fri 27 Nov date", "renew passport"},
		{"lunch with Sam on Tuesday 12:30", "Tue 24 Nov 12:30", "lunch with Sam"},
		{"next Monday", "Mon 23 Nov date", ""},
		{"in 2 hours", "Sat 21 Nov 13:00", ""},
		{"tonight", "Sat 21 Nov 23:00", ""},
		{"tonight at 9", "Sat 21 Nov 21:00", ""},
		{"at 3", "Sat 21 Nov 15:00 time", ""},
		{"at 7", "Sun 22 Nov 07:00 time", ""},
		{"tomorrow at midnight", "Mon 23 Nov 00:00", ""},
		{"Sam may come tomorrow at 9", "Sun 22 Nov 09:00", "Sam may come"},
		{"at 9 to call Anna tomorrow", "Sun 22 Nov 09:00", "to call Anna"},
		{"prepare for the SAT exam", "", "prepare for the SAT exam"},
		{"March 3", "Wed 3 Mar date", ""},
		{"this Friday", "Fri 27 Nov date", ""},
		{"at 9.30 on 3/12", "Thu 3 Dec 09:30", ""},
		{"someday", "", "someday"},
		{"pay rent the day after tomorrow at 10:00", "Mon 23 Nov 10:00", "pay rent"},
		{"in a fortnight", "", "in a fortnight"},
	} {
		m, bad := c.find(tt.text)
		if bad != "" {
			t.Errorf("find(%q): bad %q", tt.text, bad)
			continue
		}
		got, rest := "", tt.text
		if m != nil {
			got = m.at.Format("Mon 2 Jan 15:04")
			switch {
			case !m.hasTime:
				got = m.at.Format("Mon 2 Jan") + " date"
			case !m.hasDate:
				got += " time"
			}
			rest = without(tt.text, m.spans)
		}
		if got != tt.want || rest != tt.rest {
			t.Errorf("find(%q) = %q, rest %q; want %q, rest %q", tt.text, got, rest, tt.want, tt.rest)
		}
	}
}

func FuzzWorld(f *testing.F) {
	for _, s := range []string{
		"remind me to call Anna tomorrow at 9", "add a task: renew passport by Friday", "what are my tasks?",
		"done with the passport task", "schedule lunch with Sam on Tuesday 12:30 for an hour", "what's on my calendar tomorrow?",
		"move lunch with Sam to Wednesday", "rename the passport task to X", "schedule x at at at 9 from 9 to", "remind me at 31/2",
		"book at  on 2026-13-45 at 99:99 for 1,5 h and 90 m", "mark as done", "I need to go on may 5",
	} {
		f.Add(s, "Europe/Berlin")
	}
	f.Fuzz(func(t *testing.T, msg, zone string) {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			loc = time.UTC
		}
		req := &ams.EngineRequest{Assistant: ava, History: history(in(msg)), Now: testNow, Location: loc,
			Tools: &fakeTools{tasks: cannedTasks(), events: cannedEvents()}}
		r, err := New().Reply(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(r.Content) == "" {
			t.Fatalf("empty reply to %q", msg)
		}
	})
}
