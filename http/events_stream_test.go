package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/amsdev/ams"
)

// openEvents opens GET /v1/events/stream (with query q) with key and the
// headers hdr, and returns the answer unread.
func (f *fixture) openEvents(ctx context.Context, t *testing.T, key, q string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.Server.URL+"/v1/events/stream"+q, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestEventStream: GET /v1/events/stream sends the events that come after
// it opened, live, each with its id, type and the event as GET
// /v1/events/{id} answers it; Last-Event-ID resumes after an event, none
// skipped, none twice; management events need admin; bad cursors are 400.
func TestEventStream(t *testing.T) {
	f := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old := f.emitAt(f.User, ams.EventTaskCreated, f.Clock.Now()) // before the stream: not sent

	resp := f.openEvents(ctx, t, f.Key, "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	// A trigger and a management event (left out: the key has no admin).
	r := f.do("POST", "/v1/events/trigger", `{"type":"task.updated"}`)
	if r.status != 201 || r.header.Get("Location") == "" {
		t.Fatalf("trigger: %d %s", r.status, r.body)
	}
	trig := r.json(t)
	if trig["type"] != "task.updated" || trig["test"] != true || trig["data"].(map[string]any)["object"] != "task" || r.header.Get("Location") != "/v1/events/"+trig["id"].(string) {
		t.Fatalf("trigger: %s", r.body)
	}
	f.emitAt(f.User, ams.EventAPIKeyCreated, f.Clock.Now())
	second := f.emitAt(f.User, ams.EventMessageCreated, f.Clock.Now())
	ev, err := readEvent(br)
	if err != nil || ev.id != trig["id"] || ev.name != "task.updated" {
		t.Fatalf("first event: %+v %v (the one before the stream was %s)", ev, err, old.ID)
	}
	got := f.do("GET", "/v1/events/"+ev.id, "")
	var sent, fetched map[string]any
	json.Unmarshal([]byte(ev.data), &sent)
	json.Unmarshal(got.body, &fetched)
	if string(mustJSON(sent)) != string(mustJSON(fetched)) {
		t.Fatalf("stream data %s, GET %s", ev.data, got.body)
	}
	ev, err = readEvent(br)
	if err != nil || ev.id != second.ID || ev.name != ams.EventMessageCreated {
		t.Fatalf("second event: %+v %v", ev, err)
	}

	// Resume after the first: the second again, then what comes.
	resp2 := f.openEvents(ctx, t, f.Key, "", "Last-Event-ID", trig["id"].(string))
	br2 := bufio.NewReader(resp2.Body)
	if ev, err := readEvent(br2); err != nil || ev.id != second.ID {
		t.Fatalf("resumed: %+v %v", ev, err)
	}
	resp3 := f.openEvents(ctx, t, f.Key, "?type=task.deleted") // ?type= keeps one type
	f.emitAt(f.User, ams.EventTaskUpdated, f.Clock.Now())
	third := f.emitAt(f.User, ams.EventTaskDeleted, f.Clock.Now())
	if ev, err := readEvent(br2); err != nil || ev.id == third.ID {
		t.Fatalf("resumed, live: %+v %v", ev, err)
	}
	if ev, err := readEvent(br2); err != nil || ev.id != third.ID {
		t.Fatalf("resumed, live: %+v %v", ev, err)
	}
	if ev, err := readEvent(bufio.NewReader(resp3.Body)); err != nil || ev.id != third.ID {
		t.Fatalf("type: %+v %v", ev, err)
	}
	// An admin key gets the management events too; ?after= is the
	// cursor as Last-Event-ID is.
	resp4 := f.openEvents(ctx, t, f.NewKey(f.User, "admin"), "?after="+old.ID)
	br4 := bufio.NewReader(resp4.Body)
	var types []string
	for range 4 {
		ev, err := readEvent(br4)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.name)
	}
	if types[1] != ams.EventAPIKeyCreated {
		t.Fatalf("admin stream: %v", types)
	}

	// Refusals: JSON errors with their status, before any stream.
	wantStreamError := func(r *http.Response, status int, code, param string) {
		t.Helper()
		body := make([]byte, 4096)
		n, _ := r.Body.Read(body)
		wantError(t, &response{r.StatusCode, r.Header, body[:n]}, status, map[int]string{400: "invalid_request_error", 403: "permission_error"}[status], code, param)
	}
	wantStreamError(f.openEvents(ctx, t, f.Key, "", "Last-Event-ID", "42"), 400, "parameter_invalid", "Last-Event-ID")
	wantStreamError(f.openEvents(ctx, t, f.Key, "", "Last-Event-ID", "evt_nosuchevent"), 400, "resource_missing", "Last-Event-ID")
	wantStreamError(f.openEvents(ctx, t, f.Key, "?type=nope"), 400, "parameter_invalid", "type")
	wantStreamError(f.openEvents(ctx, t, f.Key, "?limit=3"), 400, "unknown_parameter", "limit")
	wantStreamError(f.openEvents(ctx, t, f.Key, "?type=api_key.created"), 403, "insufficient_scope", "type")
	wantStreamError(f.openEvents(ctx, t, f.NewKey(f.User, "messages"), ""), 403, "insufficient_scope", "")
}

// TestTriggerEvent: POST /v1/events/trigger refuses what it must and
// stores nothing then.
func TestTriggerEvent(t *testing.T) {
	f := setup(t)
	before := f.counts()
	wantError(t, f.do("POST", "/v1/events/trigger", `{}`), 400, "invalid_request_error", "parameter_missing", "type")
	wantError(t, f.do("POST", "/v1/events/trigger", `{"type":"nope"}`), 400, "invalid_request_error", "parameter_invalid", "type")
	wantError(t, f.do("POST", "/v1/events/trigger", `{"type":"webhook.ping"}`), 400, "invalid_request_error", "parameter_invalid", "type")
	wantError(t, f.do("POST", "/v1/events/trigger", `{"type":"task.created","x":1}`), 400, "invalid_request_error", "unknown_parameter", "x")
	wantError(t, f.do("POST", "/v1/events/trigger", `{"type":"account.updated"}`), 403, "permission_error", "insufficient_scope", "type")
	wantError(t, f.do("POST", "/v1/events/trigger", `{"type":"task.created"}`, "Authorization", "Bearer "+f.NewKey(f.User, "read")), 403, "permission_error", "insufficient_scope", "")
	if after := f.counts(); after != before {
		t.Fatalf("refused triggers stored something: %v -> %v", before, after)
	}
	r := f.do("POST", "/v1/events/trigger", `{"type":"account.updated"}`, "Authorization", "Bearer "+f.NewKey(f.User, "admin"))
	if r.status != 201 {
		t.Fatalf("admin trigger: %d %s", r.status, r.body)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
