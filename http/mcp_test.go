package http_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer sends every request with a bearer credential.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the Go SDK's client to the fixture's /mcp with
// token.
func (f *fixture) mcpSession(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "ams-test", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: f.Server.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}},
		DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// callTool calls a tool and returns its result and structuredContent as a
// map.
func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	json.Unmarshal(b, &m)
	return res, m
}

// compact is the JSON of v without insignificant space.
func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	json.Unmarshal(b, &x)
	b, _ = json.Marshal(x)
	return string(b)
}

// TestMCPTools: the tools of DESIGN.md are listed, and each call answers
// the REST record of its twin, through the same service (its events).
func TestMCPTools(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.mcpSession(t, f.Key)
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	want := []string{"complete_task", "create_calendar_event", "create_task", "list_assistants", "list_calendar_events",
		"list_conversations", "list_messages", "list_tasks", "send_message"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	res, task := callTool(t, s, "create_task", map[string]any{"assistant_id": f.Assistant.ID, "title": "Call Bob", "due_at": "2026-11-25T09:00:00Z"})
	if res.IsError || task["object"] != "task" || task["title"] != "Call Bob" || task["status"] != "open" {
		t.Fatalf("create_task: %+v %v", res, task)
	}
	id := task["id"].(string)
	rest := f.do("GET", "/v1/tasks/"+id, "")
	if compact(t, rest.json(t)) != compact(t, task) {
		t.Fatalf("create_task's record %v differs from GET /v1/tasks/%s %s", task, id, rest.body)
	}
	// The text content is the same JSON, for clients that read only text.
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || compact(t, json.RawMessage(tc.Text)) != compact(t, task) {
		t.Fatalf("content %+v", res.Content)
	}
	_, list := callTool(t, s, "list_tasks", map[string]any{"status": "open"})
	if got, want := compact(t, list), compact(t, f.do("GET", "/v1/tasks?status=open", "").json(t)); got != want {
		t.Fatalf("list_tasks %s, GET /v1/tasks %s", got, want)
	}
	_, done := callTool(t, s, "complete_task", map[string]any{"task_id": id})
	if done["status"] != "completed" {
		t.Fatalf("complete_task: %v", done)
	}
	// The change's events are the API's, and name the /mcp request.
	ev := f.do("GET", "/v1/events?type=task.completed", "").json(t)["data"].([]any)
	if len(ev) != 1 || ev[0].(map[string]any)["request"] == nil {
		t.Fatalf("task.completed events: %v", ev)
	}

	_, cev := callTool(t, s, "create_calendar_event", map[string]any{"assistant_id": f.Assistant.ID, "title": "Lunch", "starts_at": "2026-11-25T12:00:00Z", "ends_at": "2026-11-25T13:00:00Z"})
	if cev["object"] != "calendar_event" {
		t.Fatalf("create_calendar_event: %v", cev)
	}
	_, events := callTool(t, s, "list_calendar_events", nil)
	if events["object"] != "list" || len(events["data"].([]any)) != 1 {
		t.Fatalf("list_calendar_events: %v", events)
	}

	// send_message runs a real turn: the reply, its conversation, and
	// message.created for both messages.
	res, msg := callTool(t, s, "send_message", map[string]any{"assistant_id": f.Assistant.ID, "message": "Hello"})
	if res.IsError || msg["object"] != "message" || msg["direction"] != "outbound" || msg["content"] == "" {
		t.Fatalf("send_message: %+v %v", res, msg)
	}
	conv := msg["conversation_id"].(string)
	_, msgs := callTool(t, s, "list_messages", map[string]any{"conversation_id": conv})
	if d := msgs["data"].([]any); len(d) != 2 {
		t.Fatalf("list_messages: %v", msgs)
	}
	if ev := f.do("GET", "/v1/events?type=message.created", "").json(t)["data"].([]any); len(ev) != 2 {
		t.Fatalf("message.created events: %v", ev)
	}
	_, convs := callTool(t, s, "list_conversations", nil)
	if d := convs["data"].([]any); len(d) != 1 || d[0].(map[string]any)["id"] != conv {
		t.Fatalf("list_conversations: %v", convs)
	}
	_, asts := callTool(t, s, "list_assistants", map[string]any{"limit": 1})
	if d := asts["data"].([]any); len(d) != 1 || d[0].(map[string]any)["id"] != f.Assistant.ID {
		t.Fatalf("list_assistants: %v", asts)
	}

	// Bad input is the API's error, as an error result: nothing changes.
	res, e := callTool(t, s, "create_task", map[string]any{"assistant_id": f.Assistant.ID, "title": "x", "due_at": "tomorrow"})
	if !res.IsError || e["error"].(map[string]any)["param"] != "due_at" {
		t.Fatalf("bad due_at: %+v %v", res, e)
	}
	res, e = callTool(t, s, "complete_task", map[string]any{"task_id": "task_nope"})
	if !res.IsError || e["error"].(map[string]any)["code"] != "resource_missing" {
		t.Fatalf("unknown task: %+v %v", res, e)
	}
	if n := len(f.do("GET", "/v1/tasks", "").json(t)["data"].([]any)); n != 1 {
		t.Fatalf("%d tasks after refused calls, want 1", n)
	}
	// Arguments that break the tool's schema are refused by the SDK.
	res, _ = callTool(t, s, "create_task", map[string]any{"notes": "no title"})
	if !res.IsError {
		t.Fatalf("create_task without title: %+v", res)
	}
}

// TestMCPPermissions: a tool needs the permission of its REST twin; a
// call without it is an error result naming it, and does nothing.
func TestMCPPermissions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.mcpSession(t, f.NewKey(f.User, "read"))
	for _, c := range []struct {
		tool string
		args map[string]any
		perm string
	}{
		{"create_task", map[string]any{"assistant_id": f.Assistant.ID, "title": "Nope"}, "write"},
		{"create_calendar_event", map[string]any{"assistant_id": f.Assistant.ID, "title": "Nope", "starts_at": "2026-11-25T12:00:00Z"}, "write"},
		{"send_message", map[string]any{"assistant_id": f.Assistant.ID, "message": "Hi"}, "messages"},
	} {
		res, m := callTool(t, s, c.tool, c.args)
		e, _ := m["error"].(map[string]any)
		if !res.IsError || e["type"] != "permission_error" || e["code"] != "insufficient_scope" ||
			!strings.Contains(e["message"].(string), c.perm) || !strings.Contains(e["message"].(string), c.tool) {
			t.Fatalf("%s with a read key: %+v %v", c.tool, res, m)
		}
	}
	if n := len(f.do("GET", "/v1/tasks", "").json(t)["data"].([]any)); n != 0 {
		t.Fatalf("%d tasks stored by refused calls", n)
	}
	if n := len(f.do("GET", "/v1/conversations", "").json(t)["data"].([]any)); n != 0 {
		t.Fatalf("%d conversations stored by a refused send_message", n)
	}
	// Reading is allowed.
	if res, _ := callTool(t, s, "list_tasks", nil); res.IsError {
		t.Fatalf("list_tasks with read: %+v", res)
	}
	// A messages-only key sends but does not create tasks.
	s = f.mcpSession(t, f.NewKey(f.User, "messages"))
	if res, _ := callTool(t, s, "send_message", map[string]any{"assistant_id": f.Assistant.ID, "message": "Hi"}); res.IsError {
		t.Fatalf("send_message with messages: %+v", res)
	}
	if res, _ := callTool(t, s, "list_tasks", nil); !res.IsError {
		t.Fatalf("list_tasks with messages only: %+v", res)
	}
}

// TestMCPAuthentication: /mcp refuses a request without a valid
// credential with 401 and the RFC 9728 hint, whose document names the
// resource and the authorization server.
func TestMCPAuthentication(t *testing.T) {
	t.Parallel()
	f := setup(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, auth := range []string{"", "Bearer ams_sk_nope", "Basic eDp5"} {
		r := f.do("POST", "/mcp", body, "Authorization", auth, "Accept", "application/json, text/event-stream")
		wantError(t, r, 401, "authentication_error", r.json(t)["error"].(map[string]any)["code"].(string), "")
		want := `resource_metadata="` + f.Server.URL + `/.well-known/oauth-protected-resource/mcp"`
		if !strings.Contains(r.header.Get("WWW-Authenticate"), want) {
			t.Fatalf("WWW-Authenticate %q, want %s", r.header.Get("WWW-Authenticate"), want)
		}
	}
	for path, resource := range map[string]string{
		"/.well-known/oauth-protected-resource/mcp": f.Server.URL + "/mcp",
		"/.well-known/oauth-protected-resource":     f.Server.URL,
	} {
		r := f.do("GET", path, "", "Authorization", "")
		m := r.json(t)
		if r.status != 200 || m["resource"] != resource || compact(t, m["authorization_servers"]) != `["`+f.Server.URL+`"]` {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
	// The authorization server's metadata names the registration endpoint.
	m := f.do("GET", "/.well-known/oauth-authorization-server", "", "Authorization", "").json(t)
	if m["registration_endpoint"] != f.Server.URL+"/oauth/register" {
		t.Fatalf("authorization server metadata: %v", m)
	}
}

// TestMCPRateLimitAndUsage: each /mcp request counts against the
// account's limits as a /v1 request does (the same window), is metered,
// and over the limit is refused 429 before the SDK sees it.
func TestMCPRateLimitAndUsage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	u := f.NewUser("corp@example.com", ams.PlanEnterprise)
	rpm, rpd := 4, 100
	if _, err := f.Store.UpdateUser(context.Background(), u.ID, ams.UserUpdate{RPM: &rpm, RPD: &rpd}, f.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	key := f.NewKey(u, "read")
	s := f.mcpSession(t, key)
	if _, err := s.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	// What the MCP requests left of the minute's 4 is what /v1 gets.
	v1 := 0
	for ; v1 < 5; v1++ {
		if r := f.do("GET", "/v1/tasks", "", "Authorization", "Bearer "+key); r.status == 429 {
			break
		}
	}
	if v1 < 1 || v1 > 2 {
		t.Fatalf("/v1 had %d requests left after the MCP session's; want 1 or 2 (4 less initialize, tools/list and perhaps initialized)", v1)
	}
	r := f.do("POST", "/mcp", `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, "Authorization", "Bearer "+key,
		"Accept", "application/json, text/event-stream")
	wantError(t, r, 429, "rate_limit_error", "rate_limit_exceeded", "")
	if r.header.Get("Retry-After") == "" {
		t.Fatalf("429 without Retry-After: %v", r.header)
	}
	if _, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_tasks"}); err == nil {
		t.Fatal("a tool call over the limit succeeded")
	}
	if err := f.Usage.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	pts, err := f.Store.UsageSeries(context.Background(), u.ID, f.Clock.Now().Add(-time.Hour), f.Clock.Now().Add(time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var allowed, refused int64
	for _, p := range pts {
		allowed, refused = allowed+p.Allowed, refused+p.Refused
	}
	if allowed != 4 || refused != 3 {
		t.Fatalf("metered %d allowed, %d refused; want 4, 3", allowed, refused)
	}
}

// BenchmarkMCPListTasks measures the MCP tool call list_tasks (POST /mcp,
// tools/call, one JSON-RPC request as a stateless client sends it) beside
// its REST twin GET /v1/tasks, in the same run, through the whole handler
// stack without the network, on an account with 20 tasks: both answer
// the same page. docs/benchmarks.md, "Issue 30: /mcp beside /v1", has the
// figures.
func BenchmarkMCPListTasks(b *testing.B) {
	f, _, a, _ := benchFixture(b)
	owner := a.UserID
	key := f.NewKey(&ams.User{ID: owner}, "read")
	for i := range 20 {
		if _, err := f.API.World.CreateTask(context.Background(), owner, a.ID, json.RawMessage(`{"title":"Task `+strconv.Itoa(i)+`"}`), ""); err != nil {
			b.Fatal(err)
		}
	}
	h := f.API.Handler()
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tasks","arguments":{}}}`
	rest := func() *http.Request { return httptest.NewRequest("GET", "/v1/tasks", nil) }
	mcpCall := func() *http.Request {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(call))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		return r
	}
	serve := func(b *testing.B, req *http.Request) {
		req.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 || !strings.Contains(w.Body.String(), "Task 19") {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	// interleaved alternates the two, one of each per iteration, and
	// reports each one's time and their ratio: on a loaded machine the
	// ratio of two benchmarks run one after the other measures the load
	// as much as the code.
	b.Run("interleaved", func(b *testing.B) {
		var tRest, tMCP time.Duration
		for b.Loop() {
			start := time.Now()
			serve(b, rest())
			mid := time.Now()
			serve(b, mcpCall())
			tRest, tMCP = tRest+mid.Sub(start), tMCP+time.Since(mid)
		}
		b.ReportMetric(float64(tRest.Nanoseconds())/float64(b.N), "rest-ns/call")
		b.ReportMetric(float64(tMCP.Nanoseconds())/float64(b.N), "mcp-ns/call")
		b.ReportMetric(float64(tMCP)/float64(tRest), "mcp/rest")
	})
	for _, c := range []struct {
		name string
		req  func() *http.Request
	}{{"rest", rest}, {"mcp", mcpCall}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serve(b, c.req())
			}
		})
	}
}
