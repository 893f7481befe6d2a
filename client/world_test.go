package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams/client"
)

// recorded is one request a recorder saw.
type recorded struct {
	method, uri, body, idempotencyKey, contentType string
}

// recorder answers every request with status and body and records it.
type recorder struct {
	mu     sync.Mutex
	seen   []recorded
	status int
	body   string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.seen = append(rc.seen, recorded{r.Method, r.URL.RequestURI(), string(b), r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type")})
	status, body := rc.status, rc.body
	rc.mu.Unlock()
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (rc *recorder) answer(status int, body string) {
	rc.mu.Lock()
	rc.status, rc.body = status, body
	rc.mu.Unlock()
}

func (rc *recorder) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

func (rc *recorder) last(t *testing.T) recorded {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.seen) == 0 {
		t.Fatal("no request")
	}
	return rc.seen[len(rc.seen)-1]
}

// sameJSON checks that got is the JSON want.
func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q: %v", got, err)
	}
	json.Unmarshal([]byte(want), &w)
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("body %s, want %s", gb, wb)
	}
}

const taskJSON = `{"id":"task_1","object":"task","assistant_id":"ast_1","title":"Call Bob","notes":"","status":"open",` +
	`"due_at":"2026-11-22T09:00:00Z","remind_at":null,"completed_at":null,"created_at":"2026-11-21T10:00:00.123Z","updated_at":"2026-11-21T10:00:00.123Z"}`

const eventJSON = `{"id":"cev_1","object":"calendar_event","assistant_id":"ast_1","title":"Dentist","description":"","location":"",` +
	`"starts_at":"2026-11-23T14:00:00Z","ends_at":"2026-11-23T15:00:00Z","remind_at":null,"created_at":"2026-11-21T10:00:00Z","updated_at":"2026-11-21T10:00:00Z",` +
	`"deleted_at":null,"deleted_by":null}`

const deletedEventJSON = `{"id":"cev_1","object":"calendar_event","assistant_id":"","title":"Standup","description":"","location":"",` +
	`"starts_at":"2026-11-23T14:00:00Z","ends_at":"2026-11-23T15:00:00Z","remind_at":null,"created_at":"2026-11-21T10:00:00Z","updated_at":"2026-11-21T10:00:00Z",` +
	`"deleted_at":"2026-11-22T08:00:00.000Z","deleted_by":"sync"}`

const assistantJSON = `{"id":"ast_2","object":"assistant","name":"Trips","description":"","instructions":"","model":"builtin",` +
	`"created_at":"2026-11-21T10:00:00Z","updated_at":"2026-11-21T10:00:00Z"}`

func TestWorldRequests(t *testing.T) {
	rc := &recorder{}
	c, _ := newTestClient(t, rc.ServeHTTP)
	ctx := context.Background()
	due := time.Date(2026, 11, 22, 10, 0, 0, 500e6, time.FixedZone("CET", 3600))
	check := func(method, uri, body string, idempotent bool) {
		t.Helper()
		r := rc.last(t)
		if r.method != method || r.uri != uri {
			t.Errorf("request %s %s, want %s %s", r.method, r.uri, method, uri)
		}
		if body == "" {
			if r.body != "" {
				t.Errorf("%s %s: body %q, want none", method, uri, r.body)
			}
		} else {
			sameJSON(t, r.body, body)
			if r.contentType != "application/json" {
				t.Errorf("Content-Type %q", r.contentType)
			}
		}
		if idempotent != (r.idempotencyKey != "") {
			t.Errorf("%s %s: Idempotency-Key %q", method, uri, r.idempotencyKey)
		}
	}

	rc.answer(201, assistantJSON)
	a, err := c.CreateAssistant(ctx, client.CreateAssistantParams{Name: "Trips", Instructions: "Be brief.", IdempotencyKey: "k1"})
	if err != nil || a.ID != "ast_2" || a.Model != "builtin" {
		t.Fatalf("CreateAssistant: %+v %v", a, err)
	}
	check("POST", "/v1/assistants", `{"name":"Trips","instructions":"Be brief."}`, true)
	if rc.last(t).idempotencyKey != "k1" {
		t.Errorf("Idempotency-Key %q, want k1", rc.last(t).idempotencyKey)
	}
	rc.answer(200, assistantJSON)
	name, empty := "Trips", ""
	if _, err := c.UpdateAssistant(ctx, "ast_2", client.UpdateAssistantParams{Name: &name, Description: &empty}); err != nil {
		t.Fatal(err)
	}
	check("PATCH", "/v1/assistants/ast_2", `{"name":"Trips","description":""}`, false)
	rc.answer(204, "")
	if err := c.DeleteAssistant(ctx, "ast_2"); err != nil {
		t.Fatal(err)
	}
	check("DELETE", "/v1/assistants/ast_2", "", false)

	rc.answer(201, taskJSON)
	task, err := c.CreateTask(ctx, client.CreateTaskParams{AssistantID: "ast_1", Title: "Call Bob", DueAt: &due})
	if err != nil || task.ID != "task_1" || task.DueAt == nil || !task.DueAt.Equal(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)) || task.RemindAt != nil {
		t.Fatalf("CreateTask: %+v %v", task, err)
	}
	check("POST", "/v1/tasks", `{"assistant_id":"ast_1","title":"Call Bob","due_at":"2026-11-22T09:00:00.5Z"}`, true)
	rc.answer(200, taskJSON)
	title := "Call Bob back"
	if _, err := c.UpdateTask(ctx, "task_1", client.UpdateTaskParams{Title: &title, ClearDueAt: true, RemindAt: &due}); err != nil {
		t.Fatal(err)
	}
	check("PATCH", "/v1/tasks/task_1", `{"title":"Call Bob back","due_at":null,"remind_at":"2026-11-22T09:00:00.5Z"}`, false)
	if _, err := c.GetTask(ctx, "task_1"); err != nil {
		t.Fatal(err)
	}
	check("GET", "/v1/tasks/task_1", "", false)
	if _, err := c.CompleteTask(ctx, "task_1"); err != nil {
		t.Fatal(err)
	}
	check("POST", "/v1/tasks/task_1/complete", "", true)
	rc.answer(200, `{"object":"list","data":[`+taskJSON+`],"first_id":"task_1","last_id":"task_1","has_more":false}`)
	l, err := c.ListTasks(ctx, &client.ListTasksParams{ListParams: client.ListParams{Limit: 5}, AssistantID: "ast_1", Status: client.TaskOpen, DueAfter: &due})
	if err != nil || len(l.Data) != 1 || l.Data[0].Title != "Call Bob" {
		t.Fatalf("ListTasks: %+v %v", l, err)
	}
	check("GET", "/v1/tasks?assistant_id=ast_1&due_after=2026-11-22T09%3A00%3A00.5Z&limit=5&status=open", "", false)
	if _, err := c.ListTasks(ctx, nil); err != nil {
		t.Fatal(err)
	}
	check("GET", "/v1/tasks", "", false)
	rc.answer(204, "")
	if err := c.DeleteTask(ctx, "task_1"); err != nil {
		t.Fatal(err)
	}
	check("DELETE", "/v1/tasks/task_1", "", false)

	starts := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	rc.answer(201, eventJSON)
	ev, err := c.CreateCalendarEvent(ctx, client.CreateCalendarEventParams{AssistantID: "ast_1", Title: "Dentist", StartsAt: starts, Location: "Main St 1"})
	if err != nil || ev.ID != "cev_1" || !ev.EndsAt.Equal(starts.Add(time.Hour)) {
		t.Fatalf("CreateCalendarEvent: %+v %v", ev, err)
	}
	check("POST", "/v1/calendar/events", `{"assistant_id":"ast_1","title":"Dentist","starts_at":"2026-11-23T14:00:00Z","location":"Main St 1"}`, true)
	rc.answer(200, eventJSON)
	if _, err := c.UpdateCalendarEvent(ctx, "cev_1", client.UpdateCalendarEventParams{StartsAt: &starts, ClearRemindAt: true}); err != nil {
		t.Fatal(err)
	}
	check("PATCH", "/v1/calendar/events/cev_1", `{"starts_at":"2026-11-23T14:00:00Z","remind_at":null}`, false)
	if _, err := c.GetCalendarEvent(ctx, "cev_1"); err != nil {
		t.Fatal(err)
	}
	check("GET", "/v1/calendar/events/cev_1", "", false)
	rc.answer(200, `{"object":"list","data":[],"first_id":null,"last_id":null,"has_more":false}`)
	if _, err := c.ListCalendarEvents(ctx, &client.ListCalendarEventsParams{StartsAfter: &starts, StartsBefore: &due}); err != nil {
		t.Fatal(err)
	}
	check("GET", "/v1/calendar/events?starts_after=2026-11-23T14%3A00%3A00Z&starts_before=2026-11-22T09%3A00%3A00.5Z", "", false)
	rc.answer(204, "")
	if err := c.DeleteCalendarEvent(ctx, "cev_1"); err != nil {
		t.Fatal(err)
	}
	check("DELETE", "/v1/calendar/events/cev_1", "", false)
	rc.answer(200, `{"object":"list","data":[`+deletedEventJSON+`],"first_id":"cev_1","last_id":"cev_1","has_more":false}`)
	gone, err := c.ListCalendarEvents(ctx, &client.ListCalendarEventsParams{Deleted: true})
	if err != nil || len(gone.Data) != 1 || gone.Data[0].DeletedBy != client.DeletedBySync || gone.Data[0].DeletedAt == nil ||
		!gone.Data[0].DeletedAt.Equal(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("deleted events: %+v %v", gone, err)
	}
	check("GET", "/v1/calendar/events?deleted=true", "", false)
	rc.answer(200, eventJSON)
	back, err := c.RestoreCalendarEvent(ctx, "cev_1")
	if err != nil || back.ID != "cev_1" || back.DeletedAt != nil || back.DeletedBy != "" {
		t.Fatalf("RestoreCalendarEvent: %+v %v", back, err)
	}
	check("POST", "/v1/calendar/events/cev_1/restore", "", true)

	rc.answer(201, `{"id":"act_1","object":"action","assistant_id":"ast_1","conversation_id":"","type":"create_task","input":{"title":"Call Bob"},`+
		`"status":"succeeded","result":`+taskJSON+`,"error":null,"created_at":"2026-11-21T10:00:00Z"}`)
	act, err := c.RunAction(ctx, "ast_1", client.RunActionParams{Type: client.ToolCreateTask, Input: map[string]any{"title": "Call Bob"}})
	if err != nil || act.ID != "act_1" || act.Status != client.ActionSucceeded || act.Error != nil {
		t.Fatalf("RunAction: %+v %v", act, err)
	}
	check("POST", "/v1/assistants/ast_1/actions", `{"type":"create_task","input":{"title":"Call Bob"}}`, true)
	var made client.Task
	if err := act.DecodeResult(&made); err != nil || made.ID != "task_1" {
		t.Fatalf("DecodeResult: %+v %v", made, err)
	}
	if _, err := c.RunAction(ctx, "ast_1", client.RunActionParams{Type: client.ToolListTasks}); err != nil {
		t.Fatal(err)
	}
	check("POST", "/v1/assistants/ast_1/actions", `{"type":"list_tasks"}`, true)
	rc.answer(200, `{"id":"act_2","object":"action","assistant_id":"ast_1","conversation_id":"conv_1","type":"create_task","input":"oops",`+
		`"status":"failed","result":null,"error":{"type":"invalid_request_error","code":"parameter_invalid","message":"m","param":"input"},"created_at":"2026-11-21T10:00:00Z"}`)
	failed, err := c.GetAction(ctx, "ast_1", "act_2")
	if err != nil || failed.Error == nil || failed.Error.Param != "input" || string(failed.Input) != `"oops"` || failed.DecodeResult(&made) == nil {
		t.Fatalf("GetAction: %+v %v", failed, err)
	}
	check("GET", "/v1/assistants/ast_1/actions/act_2", "", false)
	rc.answer(200, `{"object":"list","data":[],"first_id":null,"last_id":null,"has_more":false}`)
	if _, err := c.ListActions(ctx, "ast_1", &client.ListParams{Order: client.OrderAsc}); err != nil {
		t.Fatal(err)
	}
	check("GET", "/v1/assistants/ast_1/actions?order=asc", "", false)

	rc.answer(200, replyJSON)
	if _, err := c.UpdateMessage(ctx, "msg_2", "new text"); err != nil {
		t.Fatal(err)
	}
	check("PATCH", "/v1/messages/msg_2", `{"content":"new text"}`, false)
	rc.answer(204, "")
	if err := c.DeleteMessage(ctx, "msg_2"); err != nil {
		t.Fatal(err)
	}
	check("DELETE", "/v1/messages/msg_2", "", false)

	// Ids are escaped into the path; empty ids are refused before sending.
	rc.answer(200, taskJSON)
	if _, err := c.GetTask(ctx, "task_1/../x"); err != nil {
		t.Fatal(err)
	}
	check("GET", "/v1/tasks/task_1%2F..%2Fx", "", false)
	n := rc.count()
	for _, err := range []error{
		c.DeleteTask(ctx, ""), c.DeleteMessage(ctx, ""), c.DeleteAssistant(ctx, ""), c.DeleteCalendarEvent(ctx, ""),
		func() error { _, err := c.RestoreCalendarEvent(ctx, ""); return err }(),
		func() error { _, err := c.CompleteTask(ctx, ""); return err }(),
		func() error { _, err := c.UpdateTask(ctx, "", client.UpdateTaskParams{}); return err }(),
		func() error { _, err := c.RunAction(ctx, "", client.RunActionParams{Type: "list_tasks"}); return err }(),
		func() error { _, err := c.GetAction(ctx, "ast_1", ""); return err }(),
		func() error { _, err := c.ListActions(ctx, "", nil); return err }(),
	} {
		if err == nil {
			t.Error("empty id accepted")
		}
	}
	if rc.count() != n {
		t.Errorf("requests sent for empty ids")
	}
}

func TestWorldErrorsAndIterators(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, 400, "parameter_invalid", "The field 'due_at' is not an RFC 3339 time.", "input.due_at", "req_1")
	})
	_, err := c.RunAction(context.Background(), "ast_1", client.RunActionParams{Type: client.ToolCreateTask, Input: map[string]string{"title": "x", "due_at": "soon"}})
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Param != "input.due_at" {
		t.Fatalf("RunAction error: %#v", err)
	}

	ls := &listServer{ids: []string{"x_5", "x_4", "x_3", "x_2", "x_1"}}
	c, _ = newTestClient(t, ls.ServeHTTP)
	ctx := context.Background()
	n := 0
	for _, err := range c.AllTasks(ctx, &client.ListTasksParams{ListParams: client.ListParams{Limit: 2}, Status: client.TaskCompleted}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, err := range c.AllCalendarEvents(ctx, &client.ListCalendarEventsParams{ListParams: client.ListParams{Limit: 2}, AssistantID: "ast_1"}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, err := range c.AllActions(ctx, "ast_1", &client.ListParams{Limit: 4}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, err := range c.AllTasks(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 20 {
		t.Errorf("iterated %d records, want 20", n)
	}
	q := ls.recorded()
	want := []string{
		"limit=2&status=completed", "after=x_4&limit=2&status=completed", "after=x_2&limit=2&status=completed",
		"assistant_id=ast_1&limit=2", "after=x_4&assistant_id=ast_1&limit=2", "after=x_2&assistant_id=ast_1&limit=2",
		"limit=4", "after=x_2&limit=4",
		"",
	}
	if !slices.Equal(q, want) {
		t.Errorf("queries %q\nwant %q", q, want)
	}
}
