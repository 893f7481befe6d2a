package http_test

import (
	"context"
	"testing"
)

// TestEventsNameTheirCause (issue 31, point 3): an event of a change made
// through the API carries request {id, idempotency_key} (the request's
// X-Request-Id and its Idempotency-Key, or null without one); the events
// of a turn's messages and of its tool effects carry turn_id (the
// X-Turn-Id of POST /v1/messages) beside the request; a change made
// otherwise (here by the store on its own, as a reminder or a sync would)
// carries null for both. GET /v1/events/{id} and the delivery body
// (webhook.Body) show the same.
func TestEventsNameTheirCause(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// A task through the API, with a key.
	r := f.do("POST", "/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"keyed"}`, "Idempotency-Key", "cause-1")
	if r.status != 201 {
		t.Fatalf("create task: %d %s", r.status, r.body)
	}
	task := r.json(t)["id"].(string)
	ev := f.eventOf("task.created", task)
	req, _ := ev["request"].(map[string]any)
	if req == nil || req["id"] != r.header.Get("X-Request-Id") || req["idempotency_key"] != "cause-1" || ev["turn_id"] != nil {
		t.Fatalf("task.created of a keyed request: request %v, turn_id %v; want id %s, key cause-1", ev["request"], ev["turn_id"], r.header.Get("X-Request-Id"))
	}
	// Without a key: the request, idempotency_key null.
	u := f.do("PATCH", "/v1/tasks/"+task, `{"title":"renamed"}`)
	if u.status != 200 {
		t.Fatalf("update task: %d %s", u.status, u.body)
	}
	ev = f.eventOf("task.updated", task)
	if req, _ := ev["request"].(map[string]any); req == nil || req["id"] != u.header.Get("X-Request-Id") || req["idempotency_key"] != nil {
		t.Fatalf("task.updated: request %v", ev["request"])
	}

	// A turn: its messages' events and the task its tool made carry the
	// turn and the request.
	m := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"Remind me to call Bob tomorrow at 9"}`)
	if m.status != 201 {
		t.Fatalf("send: %d %s", m.status, m.body)
	}
	turn, rid := m.header.Get("X-Turn-Id"), m.header.Get("X-Request-Id")
	var turnEvents int
	for _, e := range f.allEvents() {
		if e["turn_id"] == nil {
			continue
		}
		turnEvents++
		req, _ := e["request"].(map[string]any)
		if e["turn_id"] != turn || req == nil || req["id"] != rid {
			t.Errorf("%s of the turn: turn_id %v, request %v; want %s, %s", e["type"], e["turn_id"], e["request"], turn, rid)
		}
	}
	// The conversation the send made, the inbound message, the reply and
	// the task the tool created.
	if turnEvents != 4 {
		t.Errorf("%d events name the turn, want 4 (conversation.created, two message.created, task.created)", turnEvents)
	}

	// A change made outside a request names neither.
	e := f.emitAt(f.User, "task.reminder", f.Clock.Now())
	got := f.ok(200, "GET", "/v1/events/"+e.ID, "")
	if v, ok := got["request"]; !ok || v != nil || got["turn_id"] != nil {
		t.Fatalf("an event made outside a request: %v", got)
	}
	_ = context.Background()
}

// eventOf returns the newest event of type typ whose data's id is id.
func (f *fixture) eventOf(typ, id string) map[string]any {
	f.T.Helper()
	for _, e := range f.allEvents() {
		if e["type"] == typ && e["data"].(map[string]any)["id"] == id {
			return e
		}
	}
	f.T.Fatalf("no %s of %s", typ, id)
	return nil
}

// allEvents lists the fixture user's events, newest first.
func (f *fixture) allEvents() []map[string]any {
	f.T.Helper()
	var out []map[string]any
	for _, e := range f.ok(200, "GET", "/v1/events?limit=100", "")["data"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}
