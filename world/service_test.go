package world_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/sqlite"
	"github.com/amsdev/ams/world"
)

// svcEnv is a world service on a fresh SQLite store with one user and
// assistant, at a fixed time.
type svcEnv struct {
	ctx  context.Context
	db   *sqlite.DB
	svc  *world.Service
	user *ams.User
	ast  *ams.Assistant
	now  time.Time
}

func newSvcEnv(t *testing.T) *svcEnv {
	t.Helper()
	ctx := context.Background()
	db := sqlitetest.Open(t)
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "w@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: u.ID, Name: "Ava", Model: ams.ModelBuiltin, CreatedAt: now, UpdatedAt: now}
	if err := db.CreateAssistant(ctx, a); err != nil {
		t.Fatal(err)
	}
	return &svcEnv{ctx: ctx, db: db, svc: &world.Service{Store: db, Clock: func() time.Time { return now }}, user: u, ast: a, now: now}
}

// events returns the types of the user's events, oldest first.
func (e *svcEnv) events(t *testing.T) []string {
	t.Helper()
	p, err := e.db.ListEvents(e.ctx, e.user.ID, ams.EventFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range p.Data {
		types = append(types, ev.Type)
	}
	return types
}

// counts returns how many tasks, calendar events and actions the user has.
func (e *svcEnv) counts(t *testing.T) [3]int {
	t.Helper()
	ts, err := e.db.ListTasks(e.ctx, e.user.ID, ams.TaskFilter{}, ams.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := e.db.ListCalendarEvents(e.ctx, e.user.ID, ams.CalendarFilter{}, ams.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	as, err := e.db.ListActions(e.ctx, e.user.ID, ams.ActionFilter{}, ams.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return [3]int{len(ts.Data), len(cs.Data), len(as.Data)}
}

func wantParam(t *testing.T, err error, kind ams.ErrorKind, param string) {
	t.Helper()
	e, ok := err.(*ams.Error)
	if !ok || e.Kind != kind || e.Param != param {
		t.Fatalf("error %#v, want kind %d on param %q", err, kind, param)
	}
	if e.Message == "" || e.Code == "" {
		t.Fatalf("error without code or message: %#v", e)
	}
}

func TestTaskLifecycle(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t)
	task, err := e.svc.CreateTask(e.ctx, e.user.ID, e.ast.ID, json.RawMessage(`{"title":"  Renew passport ","due_at":"2026-11-27T17:00:00+01:00"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if task.Title != "Renew passport" || task.Status != ams.TaskOpen || task.DueAt == nil || !task.DueAt.Equal(time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)) || task.RemindAt != nil {
		t.Fatalf("created %+v", task)
	}
	// An update naming the same values changes nothing and emits nothing.
	if _, err := e.svc.UpdateTask(e.ctx, e.user.ID, task.ID, json.RawMessage(`{"title":"Renew passport"}`), ""); err != nil {
		t.Fatal(err)
	}
	// null clears a time.
	up, err := e.svc.UpdateTask(e.ctx, e.user.ID, task.ID, json.RawMessage(`{"due_at":null,"notes":"bring photos"}`), "")
	if err != nil || up.DueAt != nil || up.Notes != "bring photos" {
		t.Fatalf("update: %+v %v", up, err)
	}
	got, err := e.db.FindTask(e.ctx, e.user.ID, task.ID)
	if err != nil || got.DueAt != nil || got.Notes != "bring photos" {
		t.Fatalf("stored: %+v %v", got, err)
	}
	// null clears notes too.
	if up, err := e.svc.UpdateTask(e.ctx, e.user.ID, task.ID, json.RawMessage(`{"notes":null}`), ""); err != nil || up.Notes != "" {
		t.Fatalf("notes null: %+v %v", up, err)
	}
	done, err := e.svc.CompleteTask(e.ctx, e.user.ID, task.ID)
	if err != nil || done.Status != ams.TaskCompleted || done.CompletedAt == nil || !done.CompletedAt.Equal(e.now) {
		t.Fatalf("complete: %+v %v", done, err)
	}
	// Completing again is a no-op: no second task.completed.
	if _, err := e.svc.CompleteTask(e.ctx, e.user.ID, task.ID); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.events(t), ","); got != "task.created,task.updated,task.updated,task.completed" {
		t.Fatalf("events %s", got)
	}
	if err := e.svc.DeleteTask(e.ctx, e.user.ID, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.FindTask(e.ctx, e.user.ID, task.ID); !ams.IsNotFound(err) {
		t.Fatalf("deleted task: %v", err)
	}
	if err := e.svc.DeleteTask(e.ctx, e.user.ID, task.ID); !ams.IsNotFound(err) {
		t.Fatalf("delete twice: %v", err)
	}
}

// TestBadInputStoresNothing: each refused input names its field and
// leaves no record and no event.
func TestBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t)
	for _, tc := range []struct {
		name, input, param string
		kind               ams.ErrorKind
		event              bool
	}{
		{"missing title", `{"notes":"x"}`, "title", ams.EINVALID, false},
		{"empty title", `{"title":"   "}`, "title", ams.EINVALID, false},
		{"title not a string", `{"title":42}`, "title", ams.EINVALID, false},
		{"unknown field", `{"title":"a","colour":"red"}`, "colour", ams.EINVALID, false},
		{"time does not parse", `{"title":"a","due_at":"next friday"}`, "due_at", ams.EINVALID, false},
		{"time without zone", `{"title":"a","due_at":"2026-11-27T17:00:00"}`, "due_at", ams.EINVALID, false},
		{"time not a string", `{"title":"a","remind_at":1700000000}`, "remind_at", ams.EINVALID, false},
		{"not an object", `["title"]`, "", ams.EINVALID, false},
		{"not JSON", `{"title":`, "", ams.EINVALID, false},
		{"NUL in title", `{"title":"a\u0000b"}`, "title", ams.EINVALID, false},
		{"title too long", `{"title":"` + strings.Repeat("x", world.MaxTitle+1) + `"}`, "title", ams.EINVALID, false},
		{"event ends before start", `{"title":"Lunch","starts_at":"2026-11-24T12:30:00Z","ends_at":"2026-11-24T12:00:00Z"}`, "ends_at", ams.EINVALID, true},
		{"event ends at start", `{"title":"Lunch","starts_at":"2026-11-24T12:30:00Z","ends_at":"2026-11-24T12:30:00Z"}`, "ends_at", ams.EINVALID, true},
		{"event without start", `{"title":"Lunch"}`, "starts_at", ams.EINVALID, true},
		{"event start null", `{"title":"Lunch","starts_at":null}`, "starts_at", ams.EINVALID, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.event {
				_, err = e.svc.CreateEvent(e.ctx, e.user.ID, e.ast.ID, json.RawMessage(tc.input), "")
			} else {
				_, err = e.svc.CreateTask(e.ctx, e.user.ID, e.ast.ID, json.RawMessage(tc.input), "")
			}
			wantParam(t, err, tc.kind, tc.param)
		})
	}
	// Another account's assistant is not found, naming the field.
	_, err := e.svc.CreateTask(e.ctx, e.user.ID, "", json.RawMessage(`{"assistant_id":"ast_nothere","title":"a"}`), "")
	wantParam(t, err, ams.ENOTFOUND, "assistant_id")
	if c := e.counts(t); c != [3]int{} {
		t.Fatalf("records after refused input: %v", c)
	}
	if ev := e.events(t); len(ev) != 0 {
		t.Fatalf("events after refused input: %v", ev)
	}
}

func TestEventUpdateKeepsLength(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t)
	ev, err := e.svc.CreateEvent(e.ctx, e.user.ID, e.ast.ID, json.RawMessage(`{"title":"Lunch with Sam","starts_at":"2026-11-24T11:30:00Z","location":"Café"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if !ev.EndsAt.Equal(ev.StartsAt.Add(time.Hour)) {
		t.Fatalf("default length: %v..%v", ev.StartsAt, ev.EndsAt)
	}
	moved, err := e.svc.UpdateEvent(e.ctx, e.user.ID, ev.ID, json.RawMessage(`{"starts_at":"2026-11-25T12:00:00Z"}`), "")
	if err != nil || !moved.EndsAt.Equal(time.Date(2026, 11, 25, 13, 0, 0, 0, time.UTC)) {
		t.Fatalf("moved: %+v %v", moved, err)
	}
	// An end before the (stored) start is refused, and nothing changes.
	_, err = e.svc.UpdateEvent(e.ctx, e.user.ID, ev.ID, json.RawMessage(`{"ends_at":"2026-11-25T11:00:00Z"}`), "")
	wantParam(t, err, ams.EINVALID, "ends_at")
	got, _ := e.db.FindCalendarEvent(e.ctx, e.user.ID, ev.ID)
	if !got.EndsAt.Equal(moved.EndsAt) {
		t.Fatalf("refused update changed the event: %+v", got)
	}
	if got := strings.Join(e.events(t), ","); got != "event.created,event.updated" {
		t.Fatalf("events %s", got)
	}
}

// TestRunAction: the API's direct run stores the action with the change;
// bad input is an error and stores nothing.
func TestRunAction(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t)
	act, err := e.svc.RunAction(e.ctx, e.user.ID, e.ast, "", world.ToolCreateTask, json.RawMessage(`{"title":"Call Anna","remind_at":"2026-11-22T09:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	var task ams.Task
	if err := json.Unmarshal(act.Result, &task); err != nil || task.Title != "Call Anna" || act.Status != ams.ActionSucceeded || act.Type != "create_task" {
		t.Fatalf("action %+v (%v)", act, err)
	}
	stored, err := e.db.FindAction(e.ctx, e.user.ID, act.ID)
	if err != nil || string(stored.Result) != string(act.Result) || string(stored.Input) != `{"remind_at":"2026-11-22T09:00:00Z","title":"Call Anna"}` {
		t.Fatalf("stored action %+v %v", stored, err)
	}
	act, err = e.svc.RunAction(e.ctx, e.user.ID, e.ast, "", world.ToolCompleteTask, json.RawMessage(`{"task_id":"`+task.ID+`"}`))
	if err != nil || act.Status != ams.ActionSucceeded || !strings.Contains(string(act.Result), `"status":"completed"`) {
		t.Fatalf("complete: %+v %v", act, err)
	}
	act, err = e.svc.RunAction(e.ctx, e.user.ID, e.ast, "", world.ToolListTasks, json.RawMessage(`{"status":"completed"}`))
	if err != nil || !strings.Contains(string(act.Result), task.ID) || !strings.HasPrefix(string(act.Result), `{"data":[`) {
		t.Fatalf("list: %+v %v", act, err)
	}
	before := e.counts(t)
	events := len(e.events(t))
	for _, tc := range []struct{ typ, input, param string }{
		{"send_email", `{}`, "type"},
		{world.ToolCreateTask, `{"title":"x","due_at":"tomorrow"}`, "input.due_at"},
		{world.ToolCreateTask, `{"title":"x","extra":1}`, "input.extra"},
		{world.ToolCompleteTask, `{}`, "input.task_id"},
		{world.ToolCreateCalendarEvent, `{"title":"x","starts_at":"2026-11-24T12:00:00Z","ends_at":"2026-11-24T11:00:00Z"}`, "input.ends_at"},
		{world.ToolListTasks, `{"limit":1000}`, "input.limit"},
		{world.ToolListTasks, `{"status":"done"}`, "input.status"},
	} {
		_, err := e.svc.RunAction(e.ctx, e.user.ID, e.ast, "", tc.typ, json.RawMessage(tc.input))
		wantParam(t, err, ams.EINVALID, tc.param)
	}
	_, err = e.svc.RunAction(e.ctx, e.user.ID, e.ast, "", world.ToolCompleteTask, json.RawMessage(`{"task_id":"task_nothere"}`))
	wantParam(t, err, ams.ENOTFOUND, "input.task_id")
	_, err = e.svc.RunAction(e.ctx, e.user.ID, e.ast, "", world.ToolUpdateCalendarEvent, json.RawMessage(`{"event_id":"cev_nothere","title":"x"}`))
	wantParam(t, err, ams.ENOTFOUND, "input.event_id")
	if after := e.counts(t); after != before || len(e.events(t)) != events {
		t.Fatalf("refused actions stored something: %v -> %v", before, after)
	}
}

// TestToolboxRecordsFailures: an engine's failed tool run is a stored
// failed action carrying the error, not an error.
func TestToolboxRecordsFailures(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t)
	box := e.svc.Toolbox(e.user.ID, e.ast, "conv_1")
	if len(box.Specs()) != 7 {
		t.Fatalf("%d tools", len(box.Specs()))
	}
	for _, s := range box.Specs() {
		var schema map[string]any
		if err := json.Unmarshal(s.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Fatalf("tool %s: bad schema %v", s.Name, err)
		}
	}
	act, err := box.Run(e.ctx, "create_calendar_event", json.RawMessage(`{"title":"Lunch","starts_at":"Tuesday"}`))
	if err != nil || act.Status != ams.ActionFailed || act.Error == nil || act.Error.Param != "input.starts_at" || act.Error.Type != "invalid_request_error" || act.ConversationID != "conv_1" {
		t.Fatalf("failed run: %+v %v", act, err)
	}
	act, err = box.Run(e.ctx, "fly_to_moon", json.RawMessage(`not json`))
	if err != nil || act.Status != ams.ActionFailed || string(act.Input) != `"not json"` {
		t.Fatalf("unknown tool: %+v %v", act, err)
	}
	if c := e.counts(t); c != [3]int{0, 0, 2} {
		t.Fatalf("counts %v, want two failed actions only", c)
	}
	act, err = box.Run(e.ctx, "create_calendar_event", json.RawMessage(`{"title":"Lunch","starts_at":"2026-11-24T11:30:00Z"}`))
	if err != nil || act.Status != ams.ActionSucceeded || act.ConversationID != "conv_1" {
		t.Fatalf("good run: %+v %v", act, err)
	}
}
