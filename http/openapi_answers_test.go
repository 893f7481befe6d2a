package http_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/openapi"
)

// registerSSE teaches openapi3filter to read a text/event-stream body
// the way openapi.json describes it: the events in order, each
// {"id", "event", "data"} with data parsed as JSON (comments skipped).
var registerSSE = sync.OnceFunc(func() {
	openapi3filter.RegisterBodyDecoder("text/event-stream", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		events := []any{}
		ev := map[string]any{}
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if len(ev) > 0 {
					events = append(events, ev)
					ev = map[string]any{}
				}
			case strings.HasPrefix(line, ":"):
			default:
				field, value, _ := strings.Cut(line, ":")
				value = strings.TrimPrefix(value, " ")
				if field == "data" {
					var v any
					if err := json.Unmarshal([]byte(value), &v); err != nil {
						return nil, fmt.Errorf("event data is not JSON: %w: %s", err, value)
					}
					ev["data"] = v
				} else {
					ev[field] = value
				}
			}
		}
		if len(ev) > 0 {
			return nil, fmt.Errorf("the stream ends inside an event: %v", ev)
		}
		return events, sc.Err()
	})
})

// answerChecker sends requests to a fixture's server and validates each
// request and answer against openapi.json with kin-openapi's
// openapi3filter: the status must be documented, the documented headers
// present and well-formed, the body of the documented content type and
// schema. It counts the operations whose success (2xx or 304) answers it
// validated.
type answerChecker struct {
	t     *testing.T
	f     *fixture
	doc   *openapi3.T
	key   string
	valid map[string]int // operation key -> validated successes
	any   map[string]int // operation key -> validated answers
}

func newAnswerChecker(t *testing.T, f *fixture, key string) *answerChecker {
	registerSSE()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document)
	if err != nil {
		t.Fatal(err)
	}
	return &answerChecker{t: t, f: f, doc: doc, key: key, valid: map[string]int{}, any: map[string]int{}}
}

// pathParams matches path against pattern's {name} segments.
func pathParams(pattern, path string) map[string]string {
	params := map[string]string{}
	ps, xs := strings.Split(pattern, "/"), strings.Split(strings.SplitN(path, "?", 2)[0], "/")
	for i := range ps {
		if i < len(xs) && strings.HasPrefix(ps[i], "{") {
			params[strings.Trim(ps[i], "{}")] = xs[i]
		}
	}
	return params
}

// call sends method path (of the operation pattern) with body and header
// pairs, as the checker's key unless header says otherwise, and
// validates the answer, and the request too when the answer is a success
// (a request the server accepted must be one the document accepts).
func (c *answerChecker) call(method, pattern, path, body string, hdr ...string) *response {
	c.t.Helper()
	return c.validate(method, pattern, path, body, c.f.Fixture.Do(method, path, c.key, body, hdr...), hdr...)
}

// validate validates the answer r to method path (of the operation
// pattern) with body and header pairs, as call does.
func (c *answerChecker) validate(method, pattern, path, body string, r *amstest.Response, hdr ...string) *response {
	c.t.Helper()
	key := method + " " + pattern
	item := c.doc.Paths.Value(pattern)
	if item == nil || item.GetOperation(method) == nil {
		c.t.Fatalf("%s is not documented", key)
	}
	op := item.GetOperation(method)
	resp := &response{r.Status, r.Header, r.Body}

	// The request as sent, for the validator.
	req, err := http.NewRequest(method, c.f.Server.URL+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	route := &routers.Route{Spec: c.doc, Path: pattern, PathItem: item, Method: method, Operation: op}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams(pattern, path), Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	success := r.Status/100 == 2 || r.Status == http.StatusNotModified
	if success {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Errorf("%s %s: the server accepted a request (%d) that the document refuses: %v\nbody: %s", method, path, r.Status, err, body)
		}
	}
	if op.Responses.Status(r.Status) == nil {
		c.t.Fatalf("%s %s answered %d, which %s does not document: %s", method, path, r.Status, key, r.Body)
	}
	if r.Status == http.StatusNotModified {
		// openapi3filter does not look at a 304: its documented headers
		// are checked here, and that it has no body.
		for name, h := range op.Responses.Status(r.Status).Value.Headers {
			if h.Value.Required && r.Header.Get(name) == "" {
				c.t.Errorf("%s %s: 304 without its header %s", method, path, name)
			}
		}
		if len(r.Body) != 0 {
			c.t.Errorf("%s %s: 304 with a body", method, path)
		}
	} else {
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.Status, Header: r.Header,
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
		out.SetBodyBytes(r.Body)
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			c.t.Errorf("%s %s: answer %d does not match %s in openapi.json: %v\n%s", method, path, r.Status, key, err, r.Body)
		}
	}
	c.any[key]++
	if success {
		c.valid[key]++
	}
	return resp
}

// ok calls and fails unless the answer has status; it returns the JSON
// object answered (nil for no body).
func (c *answerChecker) ok(status int, method, pattern, path, body string, hdr ...string) map[string]any {
	c.t.Helper()
	r := c.call(method, pattern, path, body, hdr...)
	if r.status != status {
		c.t.Fatalf("%s %s: %d, want %d: %s", method, path, r.status, status, r.body)
	}
	var m map[string]any
	if len(r.body) > 0 && r.body[0] == '{' {
		m = r.json(c.t)
	}
	return m
}

// TestEveryOperationAnswersAsDocumented drives every operation of
// openapi.json against a real server (SQLite) and validates the requests
// and answers with kin-openapi's openapi3filter: each operation must have
// at least one validated success (and the CalDAV ones, when no CalDAV
// server is at hand, at least one validated answer); an operation without
// one fails the test by name. Every authenticated operation is also
// called without credentials, and that 401 validated.
func TestEveryOperationAnswersAsDocumented(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// An account of its own on the enterprise plan, so that the tour
	// stays under the rate limit, with a key holding every permission.
	u := f.NewUser("tour@example.com", ams.PlanEnterprise)
	c := newAnswerChecker(t, f, f.NewKey(u, "read,write,messages,integrations,admin"))
	ast := f.NewAssistant(u, "Tour").ID

	c.ok(200, "GET", "/v1/openapi.json", "/v1/openapi.json", "")

	// Assistants.
	c.ok(200, "GET", "/v1/assistants", "/v1/assistants", "")
	a := c.ok(201, "POST", "/v1/assistants", "/v1/assistants", `{"name":"Doc","model":"some/model:1"}`)["id"].(string)
	c.ok(200, "GET", "/v1/assistants/{id}", "/v1/assistants/"+a, "")
	c.ok(200, "PATCH", "/v1/assistants/{id}", "/v1/assistants/"+a, `{"description":"d","metadata":{"k":"v"}}`)
	c.ok(204, "DELETE", "/v1/assistants/{id}", "/v1/assistants/"+a, "")
	c.ok(404, "GET", "/v1/assistants/{id}", "/v1/assistants/"+a, "")

	// Messages, conversations, turns and their streams.
	m := c.ok(201, "POST", "/v1/messages", "/v1/messages", `{"assistant_id":"`+ast+`","message":"Hello there"}`)
	conv := m["conversation_id"].(string)
	c.ok(200, "GET", "/v1/messages/{id}", "/v1/messages/"+m["id"].(string), "")
	stream := c.call("POST", "/v1/messages", "/v1/messages", `{"assistant_id":"`+ast+`","conversation_id":"`+conv+`","message":"Remind me to call Bob tomorrow at 9","stream":true}`)
	if stream.status != 200 || !bytes.Contains(stream.body, []byte("event: message.completed")) || !bytes.Contains(stream.body, []byte("event: tool_result")) {
		t.Fatalf("stream: %d %s", stream.status, stream.body)
	}
	turns := c.ok(200, "GET", "/v1/turns", "/v1/turns", "")
	turn := turns["data"].([]any)[0].(map[string]any)
	trn := turn["id"].(string)
	c.ok(200, "GET", "/v1/turns/{id}", "/v1/turns/"+trn, "")
	c.ok(200, "GET", "/v1/turns/{id}/events", "/v1/turns/"+trn+"/events", "")
	c.ok(200, "GET", "/v1/turns/{id}/events", "/v1/turns/"+trn+"/events", "", "Last-Event-ID", "1")
	// A turn cancelled while its engine works: its stream ends with an
	// error event; cancelling it again answers it unchanged.
	builtin := f.API.Messages.EngineFor
	started := make(chan struct{}, 1)
	f.useEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	slow := `{"assistant_id":"` + ast + `","message":"wait","stream":true}`
	streamed := make(chan *amstest.Response, 1)
	go func() { streamed <- f.Fixture.Do("POST", "/v1/messages", c.key, slow) }()
	<-started
	running := c.ok(200, "GET", "/v1/turns", "/v1/turns", "")["data"].([]any)[0].(map[string]any)
	if running["status"] != "running" {
		t.Fatalf("turn %v", running)
	}
	c.ok(200, "POST", "/v1/messages/{id}/cancel", "/v1/messages/"+running["inbound_message_id"].(string)+"/cancel", "")
	if r := c.validate("POST", "/v1/messages", "/v1/messages", slow, <-streamed); !bytes.Contains(r.body, []byte("event: error")) {
		t.Fatalf("the cancelled turn's stream: %d %s", r.status, r.body)
	}
	c.ok(200, "POST", "/v1/turns/{id}/cancel", "/v1/turns/"+running["id"].(string)+"/cancel", "")
	f.API.Messages.EngineFor = builtin
	// A client tool's call, answered; a built-in tool's call that waits
	// for approval, rejected.
	tools := `[{"type":"function","name":"lookup_order","parameters":{"type":"object"}}]`
	waiting := c.ok(200, "POST", "/v1/messages", "/v1/messages", `{"assistant_id":"`+ast+`","message":"lookup_order {\"id\": 7}","tools":`+tools+`}`)
	call := waiting["required_action"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["id"].(string)
	c.ok(200, "POST", "/v1/turns/{id}/tool_outputs", "/v1/turns/"+waiting["id"].(string)+"/tool_outputs",
		`{"tool_outputs":[{"tool_call_id":"`+call+`","output":"shipped"}]}`)
	c.ok(200, "PATCH", "/v1/assistants/{id}", "/v1/assistants/"+ast, `{"require_approval":["create_task"]}`)
	waiting = c.ok(200, "POST", "/v1/messages", "/v1/messages", `{"assistant_id":"`+ast+`","message":"add a task: water the plants"}`)
	call = waiting["required_action"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["id"].(string)
	c.ok(200, "POST", "/v1/turns/{id}/approvals", "/v1/turns/"+waiting["id"].(string)+"/approvals",
		`{"approvals":[{"tool_call_id":"`+call+`","approved":false,"reason":"not now"}]}`)
	c.ok(200, "PATCH", "/v1/assistants/{id}", "/v1/assistants/"+ast, `{"require_approval":[]}`)
	c.ok(200, "GET", "/v1/conversations", "/v1/conversations", "")
	c.ok(200, "GET", "/v1/conversations/{id}", "/v1/conversations/"+conv, "")
	c.ok(200, "PATCH", "/v1/conversations/{id}", "/v1/conversations/"+conv, `{"metadata":{"topic":"tour"}}`)
	msgs := c.ok(200, "GET", "/v1/conversations/{id}/messages", "/v1/conversations/"+conv+"/messages?order=asc", "")
	inbound := msgs["data"].([]any)[0].(map[string]any)["id"].(string)
	c.ok(200, "PATCH", "/v1/messages/{id}", "/v1/messages/"+inbound, `{"content":"Hello again"}`)
	c.ok(204, "DELETE", "/v1/messages/{id}", "/v1/messages/"+inbound, "")
	other := c.ok(201, "POST", "/v1/conversations", "/v1/conversations", `{"assistant_id":"`+ast+`"}`)["id"].(string)
	c.ok(204, "DELETE", "/v1/conversations/{id}", "/v1/conversations/"+other, "")

	// Tasks, calendar events, actions.
	task := c.ok(201, "POST", "/v1/tasks", "/v1/tasks", `{"assistant_id":"`+ast+`","title":"t","due_at":"2026-11-22T09:00:00Z"}`)["id"].(string)
	c.ok(200, "GET", "/v1/tasks", "/v1/tasks?status=open", "")
	c.ok(200, "GET", "/v1/tasks/{id}", "/v1/tasks/"+task, "")
	c.ok(200, "PATCH", "/v1/tasks/{id}", "/v1/tasks/"+task, `{"notes":"n"}`)
	c.ok(200, "POST", "/v1/tasks/{id}/complete", "/v1/tasks/"+task+"/complete", "")
	cev := c.ok(201, "POST", "/v1/calendar/events", "/v1/calendar/events", `{"assistant_id":"`+ast+`","title":"e","starts_at":"2026-11-23T14:00:00Z"}`)["id"].(string)
	c.ok(200, "GET", "/v1/calendar/events", "/v1/calendar/events", "")
	c.ok(200, "GET", "/v1/calendar/events/{id}", "/v1/calendar/events/"+cev, "")
	c.ok(200, "PATCH", "/v1/calendar/events/{id}", "/v1/calendar/events/"+cev, `{"location":"Here"}`)
	c.ok(204, "DELETE", "/v1/calendar/events/{id}", "/v1/calendar/events/"+cev, "")
	c.ok(200, "POST", "/v1/calendar/events/{id}/restore", "/v1/calendar/events/"+cev+"/restore", "")
	actions := "/v1/assistants/" + ast + "/actions"
	act := c.ok(201, "POST", "/v1/assistants/{id}/actions", actions, `{"type":"update_task","input":{"task_id":"`+task+`","notes":"m"}}`)["id"].(string)
	// "input": null is {} for a tool that needs no field.
	c.ok(201, "POST", "/v1/assistants/{id}/actions", actions, `{"type":"list_tasks","input":null}`)
	c.ok(201, "POST", "/v1/assistants/{id}/actions", actions, `{"type":"list_calendar_events"}`)
	c.ok(200, "GET", "/v1/assistants/{id}/actions", actions, "")
	c.ok(200, "GET", "/v1/assistants/{id}/actions/{action_id}", actions+"/"+act, "")
	c.ok(204, "DELETE", "/v1/tasks/{id}", "/v1/tasks/"+task, "")
	c.ok(201, "POST", "/v1/calendar/feed", "/v1/calendar/feed", "")

	// Integrations: a real CalDAV server (Radicale) when there is one.
	c.ok(200, "GET", "/v1/integrations", "/v1/integrations", "")
	if os.Getenv("AMS_TEST_CALDAV_URL") != "" {
		cal, user, password := radicaleCalendar(t)
		withCalDAV(f)
		in := c.ok(201, "POST", "/v1/integrations", "/v1/integrations", `{"provider":"caldav","config":{"url":"`+cal+`","username":"`+user+`"},"secrets":{"password":"`+password+`"}}`)["id"].(string)
		c.ok(200, "GET", "/v1/integrations/{id}", "/v1/integrations/"+in, "")
		c.ok(200, "POST", "/v1/integrations/{id}/sync", "/v1/integrations/"+in+"/sync", "")
		c.ok(204, "DELETE", "/v1/integrations/{id}", "/v1/integrations/"+in, "")
	} else {
		t.Log("AMS_TEST_CALDAV_URL is not set: the integrations' error answers only")
		c.ok(400, "POST", "/v1/integrations", "/v1/integrations", `{"provider":"nope"}`)
		c.ok(404, "GET", "/v1/integrations/{id}", "/v1/integrations/int_nothere", "")
		c.ok(404, "POST", "/v1/integrations/{id}/sync", "/v1/integrations/int_nothere/sync", "")
		c.ok(404, "DELETE", "/v1/integrations/{id}", "/v1/integrations/int_nothere", "")
	}

	// Webhooks and their deliveries (to a closed port: each attempt fails).
	wh := c.ok(201, "POST", "/v1/webhooks", "/v1/webhooks", `{"url":"https://127.0.0.1:9/hook","events":["*"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`)["id"].(string)
	c.ok(200, "GET", "/v1/webhooks", "/v1/webhooks", "")
	c.ok(200, "GET", "/v1/webhooks/{id}", "/v1/webhooks/"+wh, "")
	c.ok(200, "PATCH", "/v1/webhooks/{id}", "/v1/webhooks/"+wh, `{"metadata":{"k":"v"}}`)
	c.ok(202, "POST", "/v1/webhooks/{id}/ping", "/v1/webhooks/"+wh+"/ping", "")
	if _, err := f.Worker.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	dl := c.ok(200, "GET", "/v1/webhooks/{id}/deliveries", "/v1/webhooks/"+wh+"/deliveries", "")
	if data := dl["data"].([]any); len(data) > 0 {
		dlv := data[0].(map[string]any)["id"].(string)
		c.ok(202, "POST", "/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", "/v1/webhooks/"+wh+"/deliveries/"+dlv+"/redeliver", "")
	} else {
		t.Error("the ping made no delivery attempt")
	}
	c.ok(200, "POST", "/v1/webhooks/{id}/recover", "/v1/webhooks/"+wh+"/recover", `{"since":"`+f.Clock.Now().Add(-time.Hour).UTC().Format(time.RFC3339)+`"}`)
	c.ok(204, "DELETE", "/v1/webhooks/{id}", "/v1/webhooks/"+wh, "")

	// Events.
	evs := c.ok(200, "GET", "/v1/events", "/v1/events?order=asc", "")
	c.ok(200, "GET", "/v1/events/{id}", "/v1/events/"+evs["data"].([]any)[0].(map[string]any)["id"].(string), "")

	// The management API.
	c.ok(200, "GET", "/v1/keys", "/v1/keys", "")
	k := c.ok(201, "POST", "/v1/keys", "/v1/keys", `{"name":"tour","permissions":["read"]}`)["id"].(string)
	c.ok(200, "GET", "/v1/keys/{id}", "/v1/keys/"+k, "")
	c.ok(200, "POST", "/v1/keys/{id}/revoke", "/v1/keys/"+k+"/revoke", "")
	c.ok(200, "GET", "/v1/oauth/clients", "/v1/oauth/clients", "")
	cli := c.ok(201, "POST", "/v1/oauth/clients", "/v1/oauth/clients", `{"name":"Planner","redirect_uris":["https://planner.example/cb"]}`)["id"].(string)
	c.ok(200, "GET", "/v1/oauth/clients/{id}", "/v1/oauth/clients/"+cli, "")
	c.ok(200, "POST", "/v1/oauth/clients/{id}/rotate_secret", "/v1/oauth/clients/"+cli+"/rotate_secret", "")
	c.ok(204, "DELETE", "/v1/oauth/clients/{id}", "/v1/oauth/clients/"+cli, "")
	c.ok(200, "GET", "/v1/account", "/v1/account", "")
	c.ok(200, "PATCH", "/v1/account", "/v1/account", `{"timezone":"Europe/Paris"}`)

	// Conditional GETs: 304 with the ETag of the record's last answer.
	tag := c.call("GET", "/v1/conversations/{id}", "/v1/conversations/"+conv, "").header.Get("ETag")
	c.ok(304, "GET", "/v1/conversations/{id}", "/v1/conversations/"+conv, "", "If-None-Match", tag)

	// The event stream (events_stream.go): its answer up to the first
	// event, a test event that trigger emits, then the stream cut here.
	sctx, stopStream := context.WithCancel(context.Background())
	sreq, _ := http.NewRequestWithContext(sctx, "GET", f.Server.URL+"/v1/events/stream", nil)
	sreq.Header.Set("Authorization", "Bearer "+c.key)
	sresp, err := http.DefaultClient.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	trig := c.ok(201, "POST", "/v1/events/trigger", "/v1/events/trigger", `{"type":"task.created"}`)
	sbr := bufio.NewReader(sresp.Body)
	sev, err := readEvent(sbr)
	if err != nil || sev.id != trig["id"] {
		t.Fatalf("stream: %+v %v", sev, err)
	}
	sbody := fmt.Sprintf(": keep-alive\n\nid: %s\nevent: %s\ndata: %s\n\n", sev.id, sev.name, sev.data)
	stopStream()
	sresp.Body.Close()
	c.validate("GET", "/v1/events/stream", "/v1/events/stream", "", &amstest.Response{Status: sresp.StatusCode, Header: sresp.Header, Body: []byte(sbody)})

	// Every authenticated operation without credentials: its 401.
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	for key := range ops {
		method, pattern, _ := strings.Cut(key, " ")
		if key == "GET /v1/openapi.json" {
			continue
		}
		path := pattern
		for name := range pathParams(pattern, pattern) {
			path = strings.Replace(path, "{"+name+"}", "x_1", 1)
		}
		c.ok(401, method, pattern, path, "", "Authorization", "")
	}

	// The coverage: every operation of the document, by name. Without a
	// CalDAV server, an integration operation's error answer (beside its
	// 401) stands in for its success.
	caldav := os.Getenv("AMS_TEST_CALDAV_URL") != ""
	var missing []string
	for key, id := range ops {
		needsCalDAV := strings.HasPrefix(key, "POST /v1/integrations") || strings.HasSuffix(key, "/v1/integrations/{id}")
		switch {
		case c.valid[key] > 0:
		case needsCalDAV && !caldav && c.any[key] > 1:
		default:
			missing = append(missing, fmt.Sprintf("%s (%s)", id, key))
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("operation %s has no validated success answer: add one to this test", m)
	}
}
