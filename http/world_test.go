package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/openapi"
	"github.com/amsdev/ams/world"
	"github.com/getkin/kin-openapi/openapi3"
)

// worldCounts returns how many tasks, calendar events, actions (of the
// fixture's assistant) and events the fixture user has, to show that a
// refused request stored nothing.
func (f *fixture) worldCounts() [4]int {
	f.T.Helper()
	ctx := context.Background()
	p := ams.ListParams{Limit: 100}
	t, err := f.Store.ListTasks(ctx, f.User.ID, ams.TaskFilter{}, p)
	if err != nil {
		f.T.Fatal(err)
	}
	c, err := f.Store.ListCalendarEvents(ctx, f.User.ID, ams.CalendarFilter{}, p)
	if err != nil {
		f.T.Fatal(err)
	}
	a, err := f.Store.ListActions(ctx, f.User.ID, ams.ActionFilter{AssistantID: f.Assistant.ID}, p)
	if err != nil {
		f.T.Fatal(err)
	}
	e, err := f.Store.ListEvents(ctx, f.User.ID, ams.EventFilter{}, p)
	if err != nil {
		f.T.Fatal(err)
	}
	return [4]int{len(t.Data), len(c.Data), len(a.Data), len(e.Data)}
}

// create POSTs body to path, wants 201 with a Location of the new record,
// and returns the record.
func (f *fixture) create(path, body string) map[string]any {
	f.T.Helper()
	r := f.do("POST", path, body)
	if r.status != 201 {
		f.T.Fatalf("POST %s: %d %s", path, r.status, r.body)
	}
	m := r.json(f.T)
	if loc := r.header.Get("Location"); loc != path+"/"+m["id"].(string) {
		f.T.Fatalf("POST %s: Location %q for %s", path, loc, m["id"])
	}
	return m
}

// ok sends a request that must answer status, and returns its JSON body
// (nil for 204).
func (f *fixture) ok(status int, method, path, body string, hdr ...string) map[string]any {
	f.T.Helper()
	r := f.do(method, path, body, hdr...)
	if r.status != status {
		f.T.Fatalf("%s %s: %d, want %d: %s", method, path, r.status, status, r.body)
	}
	if status == 204 {
		if len(r.body) != 0 {
			f.T.Fatalf("%s %s: 204 with a body: %s", method, path, r.body)
		}
		return nil
	}
	return r.json(f.T)
}

// events returns the data of the events of type typ, newest first.
func (f *fixture) events(typ string) []map[string]any {
	f.T.Helper()
	l := f.ok(200, "GET", "/v1/events?limit=100&type="+typ, "")
	var out []map[string]any
	for _, e := range l["data"].([]any) {
		ev := e.(map[string]any)
		if ev["type"] != typ || !strings.HasPrefix(ev["id"].(string), "evt_") {
			f.T.Fatalf("event %v", ev)
		}
		out = append(out, ev["data"].(map[string]any))
	}
	return out
}

// ids returns the ids of a list answer's data.
func ids(l map[string]any) []string {
	var out []string
	for _, d := range l["data"].([]any) {
		out = append(out, d.(map[string]any)["id"].(string))
	}
	return out
}

// sameRecord checks that an event's data is the record as the API shows it.
func sameRecord(t *testing.T, data, record map[string]any) {
	t.Helper()
	a, _ := json.Marshal(data)
	b, _ := json.Marshal(record)
	if string(a) != string(b) {
		t.Fatalf("event data %s\nwant the record %s", a, b)
	}
}

func TestTaskLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	task := f.create("/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"  Call Bob  ","notes":"about the offer","due_at":"2026-11-22T09:00:00+01:00","remind_at":"2026-11-22T07:30:00Z"}`)
	id := task["id"].(string)
	if !strings.HasPrefix(id, "task_") || task["object"] != "task" || task["assistant_id"] != f.Assistant.ID || task["title"] != "Call Bob" ||
		task["notes"] != "about the offer" || task["status"] != "open" || task["due_at"] != "2026-11-22T08:00:00.000Z" ||
		task["remind_at"] != "2026-11-22T07:30:00.000Z" || task["completed_at"] != nil || task["created_at"] != "2026-11-21T10:00:00.000Z" ||
		task["updated_at"] != task["created_at"] {
		t.Fatalf("created task: %v", task)
	}
	created := f.events("task.created")
	if len(created) != 1 {
		t.Fatalf("task.created events: %v", created)
	}
	sameRecord(t, created[0], task)
	got := f.ok(200, "GET", "/v1/tasks/"+id, "")
	sameRecord(t, got, task)

	// PATCH changes the given fields; null clears a time.
	f.Clock.Add(time.Minute)
	upd := f.ok(200, "PATCH", "/v1/tasks/"+id, `{"title":"Call Bob back","due_at":null}`)
	if upd["title"] != "Call Bob back" || upd["due_at"] != nil || upd["notes"] != "about the offer" || upd["remind_at"] != "2026-11-22T07:30:00.000Z" ||
		upd["updated_at"] != "2026-11-21T10:01:00.000Z" || upd["created_at"] != task["created_at"] {
		t.Fatalf("patched task: %v", upd)
	}
	updated := f.events("task.updated")
	if len(updated) != 1 {
		t.Fatalf("task.updated events: %v", updated)
	}
	sameRecord(t, updated[0], upd)
	// A PATCH that changes nothing emits nothing.
	f.ok(200, "PATCH", "/v1/tasks/"+id, `{"title":"Call Bob back"}`)
	f.ok(200, "PATCH", "/v1/tasks/"+id, `{}`)
	if n := len(f.events("task.updated")); n != 1 {
		t.Fatalf("%d task.updated events after no-op PATCHes", n)
	}

	// Completing twice: the second is a no-op answering the same task.
	f.Clock.Add(time.Minute)
	done := f.ok(200, "POST", "/v1/tasks/"+id+"/complete", "")
	if done["status"] != "completed" || done["completed_at"] != "2026-11-21T10:02:00.000Z" || done["updated_at"] != "2026-11-21T10:02:00.000Z" {
		t.Fatalf("completed task: %v", done)
	}
	f.Clock.Add(time.Minute)
	again := f.ok(200, "POST", "/v1/tasks/"+id+"/complete", "{}")
	sameRecord(t, again, done)
	completed := f.events("task.completed")
	if len(completed) != 1 {
		t.Fatalf("task.completed events after completing twice: %d", len(completed))
	}
	sameRecord(t, completed[0], done)
	wantError(t, f.do("POST", "/v1/tasks/"+id+"/complete", `{"now":true}`), 400, "invalid_request_error", "unknown_parameter", "now")

	// Delete: 204, then 404 everywhere.
	f.ok(204, "DELETE", "/v1/tasks/"+id, "")
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/tasks/" + id, ""},
		{"PATCH", "/v1/tasks/" + id, `{"title":"x"}`},
		{"DELETE", "/v1/tasks/" + id, ""},
		{"POST", "/v1/tasks/" + id + "/complete", ""},
		{"GET", "/v1/tasks/task_unknown", ""},
		{"GET", "/v1/tasks/cev_wrongprefix", ""},
	} {
		wantError(t, f.do(c.method, c.path, c.body), 404, "invalid_request_error", "resource_missing", "")
	}
	if l := f.ok(200, "GET", "/v1/tasks", ""); len(l["data"].([]any)) != 0 {
		t.Fatalf("list after delete: %v", l)
	}
}

func TestTaskListFilters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	second := f.NewAssistant(f.User, "Second")
	var all []string
	for i, due := range []string{"2026-11-22T09:00:00Z", "2026-11-23T09:00:00Z", "2026-11-24T09:00:00Z", "", "2026-11-25T09:00:00Z"} {
		ast := f.Assistant.ID
		if i == 4 {
			ast = second.ID
		}
		body := `{"assistant_id":"` + ast + `","title":"task ` + fmt.Sprint(i) + `"`
		if due != "" {
			body += `,"due_at":"` + due + `"`
		}
		all = append(all, f.create("/v1/tasks", body+"}")["id"].(string))
		f.Clock.Add(time.Second)
	}
	f.ok(200, "POST", "/v1/tasks/"+all[1]+"/complete", "")
	rev := func(xs ...string) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[len(xs)-1-i] = x
		}
		return out
	}
	cases := []struct {
		query string
		want  []string
	}{
		{"", rev(all...)},
		{"order=asc", all},
		{"assistant_id=" + second.ID, []string{all[4]}},
		{"assistant_id=" + f.Assistant.ID + "&order=asc", all[:4]},
		{"status=completed", []string{all[1]}},
		{"status=open&order=asc", []string{all[0], all[2], all[3], all[4]}},
		{"due_after=2026-11-23T09:00:00Z&order=asc", []string{all[1], all[2], all[4]}},
		{"due_before=2026-11-24T09:00:00Z&order=asc", []string{all[0], all[1]}},
		{"due_after=2026-11-22T11:00:00%2B01:00&due_before=2026-11-25T00:00:00Z&status=open", []string{all[2]}},
		{"assistant_id=ast_nobody", nil},
	}
	for _, c := range cases {
		if got := ids(f.ok(200, "GET", "/v1/tasks?"+c.query, "")); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("GET /v1/tasks?%s: %v, want %v", c.query, got, c.want)
		}
	}
	// Pages of two, following last_id.
	var seen []string
	path := "/v1/tasks?limit=2&order=asc"
	for {
		l := f.ok(200, "GET", path, "")
		seen = append(seen, ids(l)...)
		if l["has_more"] != true {
			break
		}
		path = "/v1/tasks?limit=2&order=asc&after=" + l["last_id"].(string)
	}
	if fmt.Sprint(seen) != fmt.Sprint(all) {
		t.Fatalf("paged %v, want %v", seen, all)
	}
	if got := ids(f.ok(200, "GET", "/v1/tasks?status=open&limit=1&after="+all[2], "")); len(got) != 1 || got[0] != all[0] {
		t.Fatalf("filtered page after a cursor: %v", got)
	}
	for _, c := range []struct{ query, code, param string }{
		{"due_after=tomorrow", "parameter_invalid", "due_after"},
		{"due_before=2026-11-22", "parameter_invalid", "due_before"},
		{"due_after=2026-13-01T00:00:00Z", "parameter_invalid", "due_after"},
		{"status=done", "parameter_invalid", "status"},
		{"assistant_id=robot", "parameter_invalid", "assistant_id"},
		{"starts_after=2026-11-22T00:00:00Z", "unknown_parameter", "starts_after"},
		{"limit=0", "parameter_invalid", "limit"},
		{"after=task_unknown", "resource_missing", "after"},
	} {
		wantError(t, f.do("GET", "/v1/tasks?"+c.query, ""), 400, "invalid_request_error", c.code, c.param)
	}
	wantError(t, f.do("GET", "/v1/tasks/"+all[0]+"?expand=1", ""), 400, "invalid_request_error", "unknown_parameter", "expand")
}

func TestTaskBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	bob := f.NewUser("bob@example.com", ams.PlanStandard)
	bobs := f.NewAssistant(bob, "Bob's")
	ast := `"assistant_id":"` + f.Assistant.ID + `"`
	big := `{` + ast + `,"title":"t","notes":"` + strings.Repeat("n", amshttp.MaxBodyBytes) + `"}`
	cases := []struct {
		name, body, ctype string
		status            int
		code, param       string
	}{
		{"missing title", `{` + ast + `}`, "", 400, "parameter_missing", "title"},
		{"blank title", `{` + ast + `,"title":"  "}`, "", 400, "parameter_invalid", "title"},
		{"title too long", `{` + ast + `,"title":"` + strings.Repeat("t", 501) + `"}`, "", 400, "parameter_invalid", "title"},
		{"title not a string", `{` + ast + `,"title":42}`, "", 400, "parameter_invalid", "title"},
		{"unknown field", `{` + ast + `,"title":"t","colour":"red"}`, "", 400, "unknown_parameter", "colour"},
		{"due_at does not parse", `{` + ast + `,"title":"t","due_at":"tomorrow at 9"}`, "", 400, "parameter_invalid", "due_at"},
		{"due_at without zone", `{` + ast + `,"title":"t","due_at":"2026-11-22T09:00:00"}`, "", 400, "parameter_invalid", "due_at"},
		{"remind_at not a string", `{` + ast + `,"title":"t","remind_at":12}`, "", 400, "parameter_invalid", "remind_at"},
		{"missing assistant", `{"title":"t"}`, "", 400, "parameter_missing", "assistant_id"},
		{"bad assistant id", `{"assistant_id":"robot","title":"t"}`, "", 400, "parameter_invalid", "assistant_id"},
		{"unknown assistant", `{"assistant_id":"ast_nothere","title":"t"}`, "", 404, "resource_missing", "assistant_id"},
		{"another account's assistant", `{"assistant_id":"` + bobs.ID + `","title":"t"}`, "", 404, "resource_missing", "assistant_id"},
		{"malformed", `{` + ast + `,"title":`, "", 400, "invalid_json", ""},
		{"not an object", `["t"]`, "", 400, "invalid_json", ""},
		{"trailing data", `{` + ast + `,"title":"t"} {}`, "", 400, "invalid_json", ""},
		{"empty body", ``, "", 400, "invalid_json", ""},
		{"wrong content type", `{` + ast + `,"title":"t"}`, "text/plain", 415, "unsupported_media_type", ""},
		{"too large", big, "", 413, "request_too_large", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.worldCounts()
			var hdr []string
			if c.ctype != "" {
				hdr = []string{"Content-Type", c.ctype}
			}
			wantError(t, f.do("POST", "/v1/tasks", c.body, hdr...), c.status, "invalid_request_error", c.code, c.param)
			if after := f.worldCounts(); after != before {
				t.Fatalf("stored: %v -> %v", before, after)
			}
		})
	}
	// PATCH: bad input changes nothing.
	task := f.create("/v1/tasks", `{`+ast+`,"title":"keep me","due_at":"2026-11-22T09:00:00Z"}`)
	path := "/v1/tasks/" + task["id"].(string)
	for _, c := range []struct{ body, code, param string }{
		{`{"title":""}`, "parameter_invalid", "title"},
		{`{"title":null}`, "parameter_invalid", "title"},
		{`{"due_at":"soon"}`, "parameter_invalid", "due_at"},
		{`{"status":"completed"}`, "unknown_parameter", "status"},
		{`{"assistant_id":"` + f.Assistant.ID + `"}`, "unknown_parameter", "assistant_id"},
		{`[]`, "invalid_json", ""},
	} {
		before := f.worldCounts()
		wantError(t, f.do("PATCH", path, c.body), 400, "invalid_request_error", c.code, c.param)
		if after := f.worldCounts(); after != before {
			t.Fatalf("PATCH %s stored: %v -> %v", c.body, before, after)
		}
	}
	wantError(t, f.do("PATCH", path, `{"title":"x"}`, "Content-Type", "text/plain"), 415, "invalid_request_error", "unsupported_media_type", "")
	sameRecord(t, f.ok(200, "GET", path, ""), task)
}

func TestCalendarEventLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ev := f.create("/v1/calendar/events", `{"assistant_id":"`+f.Assistant.ID+`","title":"Dentist","location":"Main St 1","starts_at":"2026-11-23T14:00:00Z","remind_at":"2026-11-23T13:00:00Z"}`)
	id := ev["id"].(string)
	if !strings.HasPrefix(id, "cev_") || ev["object"] != "calendar_event" || ev["assistant_id"] != f.Assistant.ID || ev["title"] != "Dentist" ||
		ev["description"] != "" || ev["location"] != "Main St 1" || ev["starts_at"] != "2026-11-23T14:00:00.000Z" ||
		ev["ends_at"] != "2026-11-23T15:00:00.000Z" || ev["remind_at"] != "2026-11-23T13:00:00.000Z" {
		t.Fatalf("created event: %v", ev)
	}
	created := f.events("event.created")
	if len(created) != 1 {
		t.Fatalf("event.created: %v", created)
	}
	sameRecord(t, created[0], ev)
	sameRecord(t, f.ok(200, "GET", "/v1/calendar/events/"+id, ""), ev)

	// Moving starts_at alone keeps the length; null clears remind_at.
	f.Clock.Add(time.Minute)
	upd := f.ok(200, "PATCH", "/v1/calendar/events/"+id, `{"starts_at":"2026-11-24T10:30:00Z","remind_at":null,"description":"bring the card"}`)
	if upd["starts_at"] != "2026-11-24T10:30:00.000Z" || upd["ends_at"] != "2026-11-24T11:30:00.000Z" || upd["remind_at"] != nil ||
		upd["description"] != "bring the card" || upd["updated_at"] != "2026-11-21T10:01:00.000Z" {
		t.Fatalf("patched event: %v", upd)
	}
	updated := f.events("event.updated")
	if len(updated) != 1 {
		t.Fatalf("event.updated: %v", updated)
	}
	sameRecord(t, updated[0], upd)
	// Ending before it starts is refused and changes nothing.
	before := f.worldCounts()
	wantError(t, f.do("PATCH", "/v1/calendar/events/"+id, `{"ends_at":"2026-11-24T10:00:00Z"}`), 400, "invalid_request_error", "parameter_invalid", "ends_at")
	if f.worldCounts() != before {
		t.Fatal("refused PATCH stored something")
	}
	sameRecord(t, f.ok(200, "GET", "/v1/calendar/events/"+id, ""), upd)

	f.ok(204, "DELETE", "/v1/calendar/events/"+id, "")
	wantError(t, f.do("GET", "/v1/calendar/events/"+id, ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("DELETE", "/v1/calendar/events/"+id, ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("PATCH", "/v1/calendar/events/"+id, `{"title":"x"}`), 404, "invalid_request_error", "resource_missing", "")
}

func TestCalendarEventBadInputAndFilters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ast := `"assistant_id":"` + f.Assistant.ID + `"`
	for _, c := range []struct {
		name, body  string
		status      int
		code, param string
	}{
		{"missing starts_at", `{` + ast + `,"title":"x"}`, 400, "parameter_missing", "starts_at"},
		{"starts_at does not parse", `{` + ast + `,"title":"x","starts_at":"next monday"}`, 400, "parameter_invalid", "starts_at"},
		{"ends before it starts", `{` + ast + `,"title":"x","starts_at":"2026-11-23T14:00:00Z","ends_at":"2026-11-23T13:00:00Z"}`, 400, "parameter_invalid", "ends_at"},
		{"ends when it starts", `{` + ast + `,"title":"x","starts_at":"2026-11-23T14:00:00Z","ends_at":"2026-11-23T14:00:00Z"}`, 400, "parameter_invalid", "ends_at"},
		{"ends_at null", `{` + ast + `,"title":"x","starts_at":"2026-11-23T14:00:00Z","ends_at":null}`, 400, "parameter_invalid", "ends_at"},
		{"missing title", `{` + ast + `,"starts_at":"2026-11-23T14:00:00Z"}`, 400, "parameter_missing", "title"},
		{"location too long", `{` + ast + `,"title":"x","starts_at":"2026-11-23T14:00:00Z","location":"` + strings.Repeat("l", 501) + `"}`, 400, "parameter_invalid", "location"},
		{"unknown field", `{` + ast + `,"title":"x","starts_at":"2026-11-23T14:00:00Z","all_day":true}`, 400, "unknown_parameter", "all_day"},
		{"unknown assistant", `{"assistant_id":"ast_nothere","title":"x","starts_at":"2026-11-23T14:00:00Z"}`, 404, "resource_missing", "assistant_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := f.worldCounts()
			wantError(t, f.do("POST", "/v1/calendar/events", c.body), c.status, "invalid_request_error", c.code, c.param)
			if after := f.worldCounts(); after != before {
				t.Fatalf("stored: %v -> %v", before, after)
			}
		})
	}

	second := f.NewAssistant(f.User, "Second")
	var all []string
	for i, span := range [][2]string{
		{"2026-11-22T09:00:00Z", "2026-11-22T10:00:00Z"},
		{"2026-11-22T11:00:00Z", "2026-11-22T13:00:00Z"},
		{"2026-11-23T09:00:00Z", "2026-11-23T09:30:00Z"},
	} {
		a := f.Assistant.ID
		if i == 2 {
			a = second.ID
		}
		all = append(all, f.create("/v1/calendar/events", `{"assistant_id":"`+a+`","title":"e","starts_at":"`+span[0]+`","ends_at":"`+span[1]+`"}`)["id"].(string))
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"order=asc", all},
		{"assistant_id=" + second.ID, all[2:]},
		// Events overlapping [12:00, 23rd 00:00): the second only.
		{"starts_after=2026-11-22T12:00:00Z&starts_before=2026-11-23T00:00:00Z", all[1:2]},
		{"starts_after=2026-11-22T10:00:00Z&order=asc", all[1:]},
		{"starts_before=2026-11-22T11:00:00Z", all[:1]},
		{"limit=1&order=asc&after=" + all[0], all[1:2]},
	} {
		if got := ids(f.ok(200, "GET", "/v1/calendar/events?"+c.query, "")); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("GET /v1/calendar/events?%s: %v, want %v", c.query, got, c.want)
		}
	}
	for _, c := range []struct{ query, code, param string }{
		{"starts_after=yesterday", "parameter_invalid", "starts_after"},
		{"starts_before=2026-11-22T25:00:00Z", "parameter_invalid", "starts_before"},
		{"assistant_id=robot", "parameter_invalid", "assistant_id"},
		{"status=open", "unknown_parameter", "status"},
	} {
		wantError(t, f.do("GET", "/v1/calendar/events?"+c.query, ""), 400, "invalid_request_error", c.code, c.param)
	}
}

func TestWorldTenantScoping(t *testing.T) {
	t.Parallel()
	f := setup(t)
	task := f.create("/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"mine"}`)["id"].(string)
	ev := f.create("/v1/calendar/events", `{"assistant_id":"`+f.Assistant.ID+`","title":"mine","starts_at":"2026-11-23T14:00:00Z"}`)["id"].(string)
	act := f.create("/v1/assistants/"+f.Assistant.ID+"/actions", `{"type":"list_tasks"}`)["id"].(string)
	m := f.send("hello", "")
	bob := f.NewUser("bob@example.com", ams.PlanStandard)
	bobKey := f.NewKey(bob, "read,write,messages")
	before := f.worldCounts()
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/tasks/" + task, ""},
		{"PATCH", "/v1/tasks/" + task, `{"title":"theirs"}`},
		{"POST", "/v1/tasks/" + task + "/complete", ""},
		{"DELETE", "/v1/tasks/" + task, ""},
		{"GET", "/v1/calendar/events/" + ev, ""},
		{"PATCH", "/v1/calendar/events/" + ev, `{"title":"theirs"}`},
		{"DELETE", "/v1/calendar/events/" + ev, ""},
		{"GET", "/v1/assistants/" + f.Assistant.ID + "/actions/" + act, ""},
		{"GET", "/v1/assistants/" + f.Assistant.ID + "/actions", ""},
		{"POST", "/v1/assistants/" + f.Assistant.ID + "/actions", `{"type":"list_tasks"}`},
		{"PATCH", "/v1/assistants/" + f.Assistant.ID, `{"name":"theirs"}`},
		{"DELETE", "/v1/assistants/" + f.Assistant.ID, ""},
		{"PATCH", "/v1/messages/" + m["id"].(string), `{"content":"theirs"}`},
		{"DELETE", "/v1/messages/" + m["id"].(string), ""},
	} {
		r := f.do(c.method, c.path, c.body, "Authorization", "Bearer "+bobKey)
		if r.status != 404 || r.json(t)["error"].(map[string]any)["code"] != "resource_missing" {
			t.Errorf("Bob's %s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	// Bob cannot file a task under Ann's assistant either.
	wantError(t, f.do("POST", "/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"x"}`, "Authorization", "Bearer "+bobKey),
		404, "invalid_request_error", "resource_missing", "assistant_id")
	for _, p := range []string{"/v1/tasks", "/v1/calendar/events", "/v1/tasks?assistant_id=" + f.Assistant.ID} {
		if got := ids(f.ok(200, "GET", p, "", "Authorization", "Bearer "+bobKey)); len(got) != 0 {
			t.Errorf("Bob lists %s: %v", p, got)
		}
	}
	wantError(t, f.do("GET", "/v1/tasks?after="+task, "", "Authorization", "Bearer "+bobKey), 400, "invalid_request_error", "resource_missing", "after")
	if after := f.worldCounts(); after != before {
		t.Fatalf("Bob's requests changed Ann's records: %v -> %v", before, after)
	}
	if got := f.ok(200, "GET", "/v1/messages/"+m["id"].(string), ""); got["content"] != m["content"] {
		t.Fatalf("Ann's message changed: %v", got)
	}
}

func TestWorldPermissions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	task := f.create("/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"t"}`)["id"].(string)
	ev := f.create("/v1/calendar/events", `{"assistant_id":"`+f.Assistant.ID+`","title":"e","starts_at":"2026-11-23T14:00:00Z"}`)["id"].(string)
	act := f.create("/v1/assistants/"+f.Assistant.ID+"/actions", `{"type":"list_tasks"}`)["id"].(string)
	inbound := f.send("hi", "")
	msgs, _ := f.Store.ListMessages(context.Background(), f.User.ID, inbound["conversation_id"].(string), ams.ListParams{Limit: 10, Order: ams.OrderAsc})
	msg := msgs.Data[0].ID
	read, write, messages := f.NewKey(f.User, "read"), f.NewKey(f.User, "write"), f.NewKey(f.User, "messages")
	admin, integ := f.NewKey(f.User, "admin"), f.NewKey(f.User, "integrations")
	ast := "/v1/assistants/" + f.Assistant.ID
	cases := []struct {
		method, path, body string
		allowed, denied    []string
		scope              string
	}{
		{"GET", "/v1/tasks", "", []string{read, admin}, []string{write, messages, integ}, "read"},
		{"GET", "/v1/tasks/" + task, "", []string{read}, []string{write, messages}, "read"},
		{"POST", "/v1/tasks", `{"assistant_id":"` + f.Assistant.ID + `","title":"t"}`, []string{write, admin}, []string{read, messages, integ}, "write"},
		{"PATCH", "/v1/tasks/" + task, `{"notes":"n"}`, []string{write}, []string{read, messages}, "write"},
		{"POST", "/v1/tasks/" + task + "/complete", "", []string{write}, []string{read, messages}, "write"},
		{"GET", "/v1/calendar/events", "", []string{read}, []string{write, messages}, "read"},
		{"GET", "/v1/calendar/events/" + ev, "", []string{read}, []string{write, messages}, "read"},
		{"POST", "/v1/calendar/events", `{"assistant_id":"` + f.Assistant.ID + `","title":"e","starts_at":"2026-11-23T14:00:00Z"}`, []string{write}, []string{read, messages}, "write"},
		{"PATCH", "/v1/calendar/events/" + ev, `{"notes":"x"}`, nil, []string{read, messages}, "write"},
		{"POST", ast + "/actions", `{"type":"list_tasks"}`, []string{messages, admin}, []string{read, write, integ}, "messages"},
		{"GET", ast + "/actions", "", []string{read, messages}, []string{write, integ}, "read messages"},
		{"GET", ast + "/actions/" + act, "", []string{read, messages}, []string{write, integ}, "read messages"},
		{"POST", "/v1/assistants", `{"name":"New"}`, []string{write, admin}, []string{read, messages, integ}, "write"},
		{"PATCH", ast, `{"description":"d"}`, []string{write}, []string{read, messages}, "write"},
		{"PATCH", "/v1/messages/" + msg, `{"content":"hi again"}`, []string{messages, admin}, []string{read, write, integ}, "messages"},
		{"DELETE", "/v1/calendar/events/" + ev, "", nil, []string{read, messages}, "write"},
		{"DELETE", "/v1/tasks/" + task, "", nil, []string{read, messages}, "write"},
		{"DELETE", "/v1/messages/" + msg, "", nil, []string{read, write}, "messages"},
		{"DELETE", ast, "", nil, []string{read, messages}, "write"},
	}
	for _, c := range cases {
		f.Clock.Add(time.Minute) // a fresh rate-limit window for each case
		for _, k := range c.denied {
			before := f.worldCounts()
			r := f.do(c.method, c.path, c.body, "Authorization", "Bearer "+k)
			wantError(t, r, 403, "permission_error", "insufficient_scope", "")
			if h := r.header.Get("WWW-Authenticate"); h != `Bearer error="insufficient_scope", scope="`+c.scope+`"` {
				t.Errorf("%s %s: WWW-Authenticate %q", c.method, c.path, h)
			}
			if f.worldCounts() != before {
				t.Fatalf("forbidden %s %s stored something", c.method, c.path)
			}
		}
		for _, k := range c.allowed {
			if r := f.do(c.method, c.path, c.body, "Authorization", "Bearer "+k); r.status >= 300 {
				t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
			}
		}
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	base := "/v1/assistants/" + f.Assistant.ID + "/actions"
	act := f.create(base, `{"type":"create_task","input":{"title":"Buy milk","due_at":"2026-11-22T18:00:00Z"}}`)
	if !strings.HasPrefix(act["id"].(string), "act_") || act["object"] != "action" || act["assistant_id"] != f.Assistant.ID ||
		act["conversation_id"] != "" || act["type"] != "create_task" || act["status"] != "succeeded" || act["error"] != nil ||
		act["created_at"] != "2026-11-21T10:00:00.000Z" {
		t.Fatalf("action: %v", act)
	}
	if in := act["input"].(map[string]any); in["title"] != "Buy milk" || in["due_at"] != "2026-11-22T18:00:00Z" {
		t.Fatalf("action input: %v", in)
	}
	res := act["result"].(map[string]any)
	taskID := res["id"].(string)
	task := f.ok(200, "GET", "/v1/tasks/"+taskID, "")
	sameRecord(t, res, task)
	if task["title"] != "Buy milk" || task["assistant_id"] != f.Assistant.ID {
		t.Fatalf("task made by the action: %v", task)
	}
	if created := f.events("task.created"); len(created) != 1 || created[0]["id"] != taskID {
		t.Fatalf("task.created of the action: %v", created)
	}
	sameRecord(t, f.ok(200, "GET", base+"/"+act["id"].(string), ""), act)

	f.Clock.Add(time.Minute)
	done := f.create(base, `{"type":"complete_task","input":{"task_id":"`+taskID+`"}}`)
	if done["result"].(map[string]any)["status"] != "completed" || len(f.events("task.completed")) != 1 {
		t.Fatalf("complete_task: %v", done)
	}
	f.Clock.Add(time.Minute)
	cev := f.create(base, `{"type":"create_calendar_event","input":{"title":"Standup","starts_at":"2026-11-23T09:00:00Z","ends_at":"2026-11-23T09:15:00Z"}}`)
	evID := cev["result"].(map[string]any)["id"].(string)
	if e := f.ok(200, "GET", "/v1/calendar/events/"+evID, ""); e["title"] != "Standup" || len(f.events("event.created")) != 1 {
		t.Fatalf("create_calendar_event: %v", e)
	}
	f.Clock.Add(time.Minute)
	list := f.create(base, `{"type":"list_tasks","input":{"status":"completed"}}`)
	if l := list["result"].(map[string]any); len(l["data"].([]any)) != 1 || l["data"].([]any)[0].(map[string]any)["id"] != taskID {
		t.Fatalf("list_tasks: %v", list)
	}
	// Input may be left out when no field is required.
	f.Clock.Add(time.Minute)
	noInput := f.create(base, `{"type":"list_calendar_events"}`)
	if len(noInput["result"].(map[string]any)["data"].([]any)) != 1 {
		t.Fatalf("list_calendar_events: %v", noInput)
	}

	l := f.ok(200, "GET", base, "")
	want := []string{noInput["id"].(string), list["id"].(string), cev["id"].(string), done["id"].(string), act["id"].(string)}
	if got := ids(l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("actions %v, want %v", got, want)
	}
	if got := ids(f.ok(200, "GET", base+"?limit=2&order=asc&after="+want[4], "")); fmt.Sprint(got) != fmt.Sprint([]string{want[3], want[2]}) {
		t.Fatalf("actions page: %v", got)
	}
	// Another assistant's path does not show the action.
	second := f.NewAssistant(f.User, "Second")
	wantError(t, f.do("GET", "/v1/assistants/"+second.ID+"/actions/"+act["id"].(string), ""), 404, "invalid_request_error", "resource_missing", "")
	if got := ids(f.ok(200, "GET", "/v1/assistants/"+second.ID+"/actions", "")); len(got) != 0 {
		t.Fatalf("second assistant's actions: %v", got)
	}
	wantError(t, f.do("GET", base+"/act_unknown", ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("GET", base+"/task_wrongprefix", ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("GET", "/v1/assistants/ast_unknown/actions", ""), 404, "invalid_request_error", "resource_missing", "id")
}

func TestActionBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	task := f.create("/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"t"}`)["id"].(string)
	bob := f.NewUser("bob@example.com", ams.PlanStandard)
	bobs := f.NewAssistant(bob, "Bob's")
	base := "/v1/assistants/" + f.Assistant.ID + "/actions"
	cases := []struct {
		name, path, body string
		status           int
		code, param      string
	}{
		{"unknown tool", base, `{"type":"launch_rocket","input":{}}`, 400, "parameter_invalid", "type"},
		{"missing type", base, `{"input":{"title":"x"}}`, 400, "parameter_missing", "type"},
		{"type not a string", base, `{"type":7}`, 400, "invalid_type", "type"},
		{"input not an object", base, `{"type":"create_task","input":"Buy milk"}`, 400, "invalid_type", "input"},
		{"input an array", base, `{"type":"create_task","input":["Buy milk"]}`, 400, "invalid_type", "input"},
		{"missing input field", base, `{"type":"create_task","input":{}}`, 400, "parameter_missing", "input.title"},
		{"time does not parse", base, `{"type":"create_task","input":{"title":"x","due_at":"tomorrow"}}`, 400, "parameter_invalid", "input.due_at"},
		{"unknown input field", base, `{"type":"create_task","input":{"title":"x","priority":1}}`, 400, "unknown_parameter", "input.priority"},
		{"assistant_id in input", base, `{"type":"create_task","input":{"title":"x","assistant_id":"` + f.Assistant.ID + `"}}`, 400, "unknown_parameter", "input.assistant_id"},
		{"event ends before it starts", base, `{"type":"create_calendar_event","input":{"title":"x","starts_at":"2026-11-23T09:00:00Z","ends_at":"2026-11-23T08:00:00Z"}}`, 400, "parameter_invalid", "input.ends_at"},
		{"missing task id", base, `{"type":"complete_task","input":{}}`, 400, "parameter_missing", "input.task_id"},
		{"unknown task", base, `{"type":"complete_task","input":{"task_id":"task_nothere"}}`, 404, "resource_missing", "input.task_id"},
		{"unknown task to update", base, `{"type":"update_task","input":{"task_id":"task_nothere","title":"y"}}`, 404, "resource_missing", "input.task_id"},
		{"bad limit", base, `{"type":"list_tasks","input":{"limit":1000}}`, 400, "parameter_invalid", "input.limit"},
		{"unknown body field", base, `{"type":"list_tasks","conversation_id":"conv_x"}`, 400, "unknown_parameter", "conversation_id"},
		{"unknown assistant", "/v1/assistants/ast_nothere/actions", `{"type":"list_tasks"}`, 404, "resource_missing", "id"},
		{"another account's assistant", "/v1/assistants/" + bobs.ID + "/actions", `{"type":"list_tasks"}`, 404, "resource_missing", "id"},
		{"malformed", base, `{"type":`, 400, "invalid_json", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.worldCounts()
			wantError(t, f.do("POST", c.path, c.body), c.status, "invalid_request_error", c.code, c.param)
			if after := f.worldCounts(); after != before {
				t.Fatalf("stored: %v -> %v", before, after)
			}
		})
	}
	// The task of the failed complete_task runs is untouched.
	if got := f.ok(200, "GET", "/v1/tasks/"+task, ""); got["status"] != "open" {
		t.Fatalf("task: %v", got)
	}
}

func TestMessageEditAndDelete(t *testing.T) {
	t.Parallel()
	f := setup(t)
	reply := f.send("Remind me to call Bob", "")
	conv := reply["conversation_id"].(string)
	page, err := f.Store.ListMessages(context.Background(), f.User.ID, conv, ams.ListParams{Limit: 10, Order: ams.OrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	inbound := page.Data[0]
	f.Clock.Add(time.Minute)
	m := f.ok(200, "PATCH", "/v1/messages/"+inbound.ID, `{"content":"Remind me to call Alice"}`)
	if m["id"] != inbound.ID || m["content"] != "Remind me to call Alice" || m["direction"] != "inbound" ||
		m["updated_at"] != "2026-11-21T10:01:00.000Z" || m["created_at"] != "2026-11-21T10:00:00.000Z" {
		t.Fatalf("edited: %v", m)
	}
	sameRecord(t, f.ok(200, "GET", "/v1/messages/"+inbound.ID, ""), m)
	upd := f.events("message.updated")
	if len(upd) != 1 || upd[0]["message_id"] != inbound.ID || upd[0]["content"] != "Remind me to call Alice" ||
		upd[0]["direction"] != "inbound" || upd[0]["conversation_id"] != conv || upd[0]["assistant_id"] != f.Assistant.ID {
		t.Fatalf("message.updated: %v", upd)
	}
	// The same content again changes nothing and emits nothing.
	f.ok(200, "PATCH", "/v1/messages/"+inbound.ID, `{"content":"Remind me to call Alice"}`)
	if n := len(f.events("message.updated")); n != 1 {
		t.Fatalf("%d message.updated after a no-op edit", n)
	}

	before := f.worldCounts()
	for _, c := range []struct {
		name, id, body string
		code, param    string
	}{
		{"outbound", reply["id"].(string), `{"content":"I said something else"}`, "message_not_editable", ""},
		{"missing content", inbound.ID, `{}`, "parameter_missing", "content"},
		{"null content", inbound.ID, `{"content":null}`, "parameter_missing", "content"},
		{"empty content", inbound.ID, `{"content":" \n "}`, "parameter_invalid", "content"},
		{"too long", inbound.ID, `{"content":"` + strings.Repeat("x", ams.MaxMessageLength+1) + `"}`, "parameter_invalid", "content"},
		{"NUL", inbound.ID, `{"content":"a\u0000b"}`, "invalid_encoding", "content"},
		{"not a string", inbound.ID, `{"content":5}`, "invalid_type", "content"},
		{"unknown field", inbound.ID, `{"content":"x","direction":"outbound"}`, "unknown_parameter", "direction"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, f.do("PATCH", "/v1/messages/"+c.id, c.body), 400, "invalid_request_error", c.code, c.param)
		})
	}
	if f.worldCounts() != before {
		t.Fatal("refused edits stored something")
	}
	wantError(t, f.do("PATCH", "/v1/messages/msg_nothere", `{"content":"x"}`), 404, "invalid_request_error", "resource_missing", "")

	// Delete the inbound message: 204, gone, counted out, message.deleted.
	f.Clock.Add(time.Minute)
	f.ok(204, "DELETE", "/v1/messages/"+inbound.ID, "")
	wantError(t, f.do("GET", "/v1/messages/"+inbound.ID, ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("DELETE", "/v1/messages/"+inbound.ID, ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("PATCH", "/v1/messages/"+inbound.ID, `{"content":"x"}`), 404, "invalid_request_error", "resource_missing", "")
	// message.deleted carries ids, not the text; the events that carried
	// the text keep their ids and lose it (issue 31, point 4).
	del := f.events("message.deleted")
	if _, has := del[0]["content"]; len(del) != 1 || del[0]["message_id"] != inbound.ID || has || del[0]["metadata"] != nil || del[0]["direction"] != "inbound" {
		t.Fatalf("message.deleted: %v", del)
	}
	carried := 0
	for _, typ := range []string{"message.created", "message.updated"} {
		for _, e := range f.events(typ) {
			if e["message_id"] != inbound.ID {
				continue
			}
			carried++
			if v, has := e["content"]; !has || v != nil {
				t.Errorf("%s of the deleted message still carries %q", typ, v)
			}
		}
	}
	if carried < 2 {
		t.Errorf("%d events of the deleted message, want its message.created and message.updated", carried)
	}
	c := f.ok(200, "GET", "/v1/conversations/"+conv, "")
	if c["message_count"] != 1.0 {
		t.Fatalf("conversation after delete: %v", c)
	}
	if got := ids(f.ok(200, "GET", "/v1/conversations/"+conv+"/messages", "")); len(got) != 1 || got[0] != reply["id"] {
		t.Fatalf("messages after delete: %v", got)
	}
	// An outbound message may be deleted too.
	f.ok(204, "DELETE", "/v1/messages/"+reply["id"].(string), "")
	if n := len(f.events("message.deleted")); n != 2 {
		t.Fatalf("%d message.deleted", n)
	}
	// The conversation goes on.
	if r := f.send("hello again", conv); r["conversation_id"] != conv {
		t.Fatalf("send after deletes: %v", r)
	}
}

// toolEngine is an engine that runs one tool before replying.
type toolEngine struct {
	tool  string
	input string
}

func (e toolEngine) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	if req.Tools == nil {
		return &ams.Reply{Content: "I cannot act."}, nil
	}
	act, err := req.Tools.Run(ctx, e.tool, json.RawMessage(e.input))
	if err != nil {
		return nil, err
	}
	return &ams.Reply{Content: "Done: " + act.Status, Actions: []*ams.Action{act}}, nil
}

func TestEngineToolRunStoresAction(t *testing.T) {
	t.Parallel()
	f := &fixture{amstest.New(t, amstest.WithEngine(toolEngine{tool: "create_task", input: `{"title":"Call Ana","due_at":"2026-11-22T09:00:00Z"}`}))}
	reply := f.send("Remind me to call Ana tomorrow at 9", "")
	conv := reply["conversation_id"].(string)
	if reply["content"] != "Done: succeeded" {
		t.Fatalf("reply: %v", reply)
	}
	acts := f.ok(200, "GET", "/v1/assistants/"+f.Assistant.ID+"/actions", "")["data"].([]any)
	if len(acts) != 1 {
		t.Fatalf("actions: %v", acts)
	}
	act := acts[0].(map[string]any)
	if act["conversation_id"] != conv || act["type"] != "create_task" || act["status"] != "succeeded" {
		t.Fatalf("action: %v", act)
	}
	tasks := f.ok(200, "GET", "/v1/tasks", "")["data"].([]any)
	if len(tasks) != 1 || tasks[0].(map[string]any)["title"] != "Call Ana" || tasks[0].(map[string]any)["id"] != act["result"].(map[string]any)["id"] {
		t.Fatalf("tasks: %v", tasks)
	}
	if n := len(f.events("task.created")); n != 1 {
		t.Fatalf("%d task.created", n)
	}

	// A tool input that does not validate is a failed action the engine
	// sees; nothing else is stored.
	g := &fixture{amstest.New(t, amstest.WithEngine(toolEngine{tool: "create_task", input: `{"title":"x","due_at":"whenever"}`}))}
	r := g.send("Remind me whenever", "")
	if r["content"] != "Done: failed" {
		t.Fatalf("reply: %v", r)
	}
	acts = g.ok(200, "GET", "/v1/assistants/"+g.Assistant.ID+"/actions", "")["data"].([]any)
	failed := acts[0].(map[string]any)
	if len(acts) != 1 || failed["status"] != "failed" || failed["conversation_id"] != r["conversation_id"] || failed["result"] != nil ||
		failed["error"].(map[string]any)["param"] != "input.due_at" {
		t.Fatalf("failed action: %v", acts)
	}
	if n := g.worldCounts(); n[0] != 0 || n[1] != 0 {
		t.Fatalf("a failed tool run stored records: %v", n)
	}
}

// TestWorldAnswersMatchOpenAPI checks the answers of the world's
// operations, successes and errors, against the schemas openapi.json
// gives them, and that the document gives each tool's input the JSON
// Schema the engines get (world.Specs).
func TestWorldAnswersMatchOpenAPI(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document)
	if err != nil {
		t.Fatal(err)
	}
	// An engine whose tool input is not JSON: a failed action whose input
	// is kept as a string.
	f := &fixture{amstest.New(t, amstest.WithEngine(toolEngine{tool: "create_task", input: `{"title": unquoted}`}))}
	check := func(method, pattern, path, body string) map[string]any {
		t.Helper()
		r := f.do(method, path, body)
		item := doc.Paths.Value(pattern)
		if item == nil || item.GetOperation(method) == nil {
			t.Fatalf("%s %s is not documented", method, pattern)
		}
		resp := item.GetOperation(method).Responses.Status(r.status)
		if resp == nil {
			t.Fatalf("%s %s answered %d, which is not documented: %s", method, path, r.status, r.body)
		}
		if r.status == 204 {
			return nil
		}
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		if err := resp.Value.Content.Get("application/json").Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Fatalf("%s %s: answer %d does not match its schema: %v\n%s", method, path, r.status, err, r.body)
		}
		m, _ := v.(map[string]any)
		return m
	}
	ast := f.Assistant.ID
	a := check("POST", "/v1/assistants", "/v1/assistants", `{"name":"Doc","model":"some/model:1"}`)
	check("PATCH", "/v1/assistants/{id}", "/v1/assistants/"+a["id"].(string), `{"description":null,"instructions":"Be brief."}`)
	check("PATCH", "/v1/assistants/{id}", "/v1/assistants/"+a["id"].(string), `{"name":""}`)
	check("DELETE", "/v1/assistants/{id}", "/v1/assistants/"+a["id"].(string), "")
	task := check("POST", "/v1/tasks", "/v1/tasks", `{"assistant_id":"`+ast+`","title":"t","due_at":"2026-11-22T09:00:00.5+02:00"}`)["id"].(string)
	check("POST", "/v1/tasks", "/v1/tasks", `{"assistant_id":"`+ast+`","title":"t","due_at":"later"}`)
	check("GET", "/v1/tasks", "/v1/tasks?status=open", "")
	check("GET", "/v1/tasks/{id}", "/v1/tasks/"+task, "")
	check("PATCH", "/v1/tasks/{id}", "/v1/tasks/"+task, `{"due_at":null,"remind_at":"2026-11-22T08:00:00Z"}`)
	check("POST", "/v1/tasks/{id}/complete", "/v1/tasks/"+task+"/complete", "")
	cev := check("POST", "/v1/calendar/events", "/v1/calendar/events", `{"assistant_id":"`+ast+`","title":"e","starts_at":"2026-11-23T14:00:00Z"}`)["id"].(string)
	check("GET", "/v1/calendar/events", "/v1/calendar/events?starts_after=2026-11-23T00:00:00Z", "")
	check("GET", "/v1/calendar/events/{id}", "/v1/calendar/events/"+cev, "")
	check("PATCH", "/v1/calendar/events/{id}", "/v1/calendar/events/"+cev, `{"ends_at":"2026-11-23T13:00:00Z"}`)
	check("PATCH", "/v1/calendar/events/{id}", "/v1/calendar/events/"+cev, `{"location":"Here"}`)
	base := "/v1/assistants/" + ast + "/actions"
	act := check("POST", "/v1/assistants/{id}/actions", base, `{"type":"update_task","input":{"task_id":"`+task+`","notes":"n"}}`)["id"].(string)
	check("POST", "/v1/assistants/{id}/actions", base, `{"type":"list_calendar_events","input":{"limit":5}}`)
	check("POST", "/v1/assistants/{id}/actions", base, `{"type":"nope"}`)
	check("POST", "/v1/assistants/{id}/actions", base, `{"type":"complete_task","input":{"task_id":"task_nothere"}}`)
	f.send("remind me", "") // a failed action, input kept as a string
	l := check("GET", "/v1/assistants/{id}/actions", base, "")
	if failed := l["data"].([]any)[0].(map[string]any); failed["status"] != "failed" || failed["input"] != `{"title": unquoted}` {
		t.Fatalf("failed action: %v", failed)
	}
	check("GET", "/v1/assistants/{id}/actions/{action_id}", base+"/"+act, "")
	check("GET", "/v1/assistants/{id}/actions/{action_id}", base+"/act_nothere", "")
	check("DELETE", "/v1/tasks/{id}", "/v1/tasks/"+task, "")
	check("DELETE", "/v1/calendar/events/{id}", "/v1/calendar/events/"+cev, "")
	page, _ := f.Store.ListMessages(context.Background(), f.User.ID, l["data"].([]any)[0].(map[string]any)["conversation_id"].(string), ams.ListParams{Limit: 10, Order: ams.OrderAsc})
	check("PATCH", "/v1/messages/{id}", "/v1/messages/"+page.Data[0].ID, `{"content":"remind me later"}`)
	check("PATCH", "/v1/messages/{id}", "/v1/messages/"+page.Data[1].ID, `{"content":"no"}`)
	check("DELETE", "/v1/messages/{id}", "/v1/messages/"+page.Data[1].ID, "")
	evs := check("GET", "/v1/events", "/v1/events?created_after=2000-01-01T00:00:00Z&created_before=2100-01-01T00:00:00Z", "")
	check("GET", "/v1/events/{id}", "/v1/events/"+evs["data"].([]any)[0].(map[string]any)["id"].(string), "")
	check("GET", "/v1/events/{id}", "/v1/events/evt_nothere", "")
	check("GET", "/v1/events", "/v1/events?created_after=soon", "")

	// The tools' inputs as documented are world.Specs.
	var raw struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &raw); err != nil {
		t.Fatal(err)
	}
	for _, s := range world.Specs {
		documented, ok := raw.Components.Schemas["RunAction_"+s.Name]
		if !ok {
			t.Errorf("tool %s is not documented (RunAction_%s)", s.Name, s.Name)
			continue
		}
		var got, want map[string]any
		json.Unmarshal(documented.Properties["input"], &got)
		json.Unmarshal(s.Parameters, &want)
		// A tool whose input has no required field takes "input": null
		// (the same as {}), which the document allows beside the object.
		if _, required := want["required"]; !required && reflect.DeepEqual(got["type"], []any{"object", "null"}) {
			got["type"] = "object"
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("RunAction_%s input schema %s\ndiffers from world.Specs %s", s.Name, documented.Properties["input"], s.Parameters)
		}
	}
}

// TestBuiltinEngineActsThroughTools sends the fixture's built-in assistant
// a message that makes it create a task: the action is stored with the
// conversation's id, and the task with its event.
func TestBuiltinEngineActsThroughTools(t *testing.T) {
	t.Parallel()
	f := setup(t)
	reply := f.send("Remind me to call Bob tomorrow at 9", "")
	conv := reply["conversation_id"].(string)
	acts := f.ok(200, "GET", "/v1/assistants/"+f.Assistant.ID+"/actions", "")["data"].([]any)
	if len(acts) != 1 {
		t.Fatalf("actions after the message: %v", acts)
	}
	act := acts[0].(map[string]any)
	if act["conversation_id"] != conv || act["type"] != "create_task" || act["status"] != "succeeded" {
		t.Fatalf("action: %v", act)
	}
	task := act["result"].(map[string]any)
	if task["due_at"] != "2026-11-22T09:00:00.000Z" || task["status"] != "open" {
		t.Fatalf("task of the action: %v", task)
	}
	sameRecord(t, f.ok(200, "GET", "/v1/tasks/"+task["id"].(string), ""), task)
	sameRecord(t, f.ok(200, "GET", "/v1/assistants/"+f.Assistant.ID+"/actions/"+act["id"].(string), ""), act)
	if created := f.events("task.created"); len(created) != 1 || created[0]["id"] != task["id"] {
		t.Fatalf("task.created: %v", created)
	}
}
