package world_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/world"
)

func TestNormalizeNewlines(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                   "",
		"plain":              "plain",
		"a\nb":               "a\nb",
		"a\r\nb\r\n":         "a\nb\n",
		"a\rb":               "a\nb",
		"a\r\r\nb":           "a\n\nb",
		"\r\n\r\n":           "\n\n",
		"a\n\rb":             "a\n\nb",
		"tab\tand \x01 stay": "tab\tand \x01 stay",
		"é\r\n€\r😀":          "é\n€\n😀",
	} {
		if got := ams.NormalizeNewlines(in); got != want {
			t.Errorf("NormalizeNewlines(%q) = %q, want %q", in, got, want)
		}
	}
}

// The service stores no "\r": line endings of every text field of tasks
// and calendar events are made "\n", on creation and on update, whoever
// sends them (the API, the pages and the assistants' tools all come
// here).
func TestTextLineEndingsNormalised(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t)
	ev, err := e.svc.CreateEvent(e.ctx, e.user.ID, e.ast.ID, json.RawMessage(
		`{"title":"Board\r\nmeeting\r","description":"Agenda:\r\n1. budget\r2. hiring\r\n","location":"Room 1\r\nFloor 2","starts_at":"2026-11-24T11:30:00Z"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := e.db.FindCalendarEvent(e.ctx, e.user.ID, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []*ams.CalendarEvent{ev, stored} {
		if got.Title != "Board\nmeeting" || got.Description != "Agenda:\n1. budget\n2. hiring\n" || got.Location != "Room 1\nFloor 2" {
			t.Fatalf("event %q %q %q", got.Title, got.Description, got.Location)
		}
	}
	up, err := e.svc.UpdateEvent(e.ctx, e.user.ID, ev.ID, json.RawMessage(`{"description":"x\ry\r\nz","location":"\r"}`), "")
	if err != nil || up.Description != "x\ny\nz" || up.Location != "\n" {
		t.Fatalf("update: %q %q %v", up.Description, up.Location, err)
	}

	task, err := e.svc.CreateTask(e.ctx, e.user.ID, e.ast.ID, json.RawMessage(`{"title":"Call\r\nAnn","notes":"a\r\nb\rc"}`), "")
	if err != nil || task.Title != "Call\nAnn" || task.Notes != "a\nb\nc" {
		t.Fatalf("task %+v %v", task, err)
	}
	task, err = e.svc.UpdateTask(e.ctx, e.user.ID, task.ID, json.RawMessage(`{"title":"Call\rBob","notes":"\r\n"}`), "")
	if err != nil || task.Title != "Call\nBob" || task.Notes != "\n" {
		t.Fatalf("task update %+v %v", task, err)
	}
	// The length limit applies to the normalised text: MaxTitle bytes of
	// "\r\n" pairs are half as long once stored.
	long := strings.Repeat(`a\r\n`, world.MaxTitle/2)
	if _, err := e.svc.CreateTask(e.ctx, e.user.ID, e.ast.ID, json.RawMessage(`{"title":"`+long+`"}`), ""); err != nil {
		t.Fatalf("%d bytes with CRLF: %v", 3*world.MaxTitle/2, err)
	}
	// An assistant's tool goes through the same service.
	a, err := e.svc.RunAction(e.ctx, e.user.ID, e.ast, "", world.ToolCreateCalendarEvent, json.RawMessage(`{"title":"Tool\r\nmade","starts_at":"2026-11-25T09:00:00Z"}`))
	if err != nil || a.Status != ams.ActionSucceeded || !strings.Contains(string(a.Result), `"Tool\nmade"`) {
		t.Fatalf("tool: %+v %v", a, err)
	}
}
