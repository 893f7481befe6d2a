package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/openai"
	"github.com/amsdev/ams/engine/openai/openaitest"
)

// tools is a fake ams.Toolbox: create_task succeeds, any other name is a
// failed action (as the real toolbox answers an unknown tool).
type tools struct {
	mu   sync.Mutex
	runs []toolRun
	err  error // returned by Run when set
}

type toolRun struct {
	name  string
	input map[string]any
}

var taskSchema = json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"due_at":{"type":"string","format":"date-time"}},"required":["title"],"additionalProperties":false}`)

func (t *tools) Specs() []ams.ToolSpec {
	return []ams.ToolSpec{
		{Name: "create_task", Description: "Create a task for the user.", Parameters: taskSchema},
		{Name: "list_tasks", Description: "List the user's open tasks."},
	}
}

func (t *tools) Run(ctx context.Context, name string, input json.RawMessage) (*ams.Action, error) {
	var in map[string]any
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.runs = append(t.runs, toolRun{name, in})
	n := len(t.runs)
	t.mu.Unlock()
	if t.err != nil {
		return nil, t.err
	}
	a := &ams.Action{ID: "act_" + string(rune('0'+n)), Object: "action", Type: name, Input: input, CreatedAt: time.Now()}
	switch name {
	case "create_task", "list_tasks":
		a.Status = ams.ActionSucceeded
		a.Result, _ = json.Marshal(map[string]any{"id": "task_" + string(rune('0'+n)), "title": in["title"]})
	default:
		a.Status = ams.ActionFailed
		a.Error = &ams.ActionError{Type: "invalid_request_error", Code: "unknown_tool", Message: "There is no tool '" + name + "'."}
	}
	return a, nil
}

func (t *tools) recorded() []toolRun {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]toolRun(nil), t.runs...)
}

var berlin, _ = time.LoadLocation("Europe/Berlin")

// request returns a turn of a conversation with one earlier exchange.
func request(tb ams.Toolbox) *ams.EngineRequest {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	a := &ams.Assistant{ID: "ast_1", Name: "Ada", Instructions: "Answer briefly.", Model: "gpt-test"}
	return &ams.EngineRequest{
		Assistant: a,
		History: []*ams.Message{
			{Direction: ams.DirectionInbound, Content: "Hi, I'm Bob."},
			{Direction: ams.DirectionOutbound, Content: "Hello Bob!"},
			{Direction: ams.DirectionInbound, Content: "Remind me to call Ann tomorrow at 9."},
		},
		Now: at, Location: berlin, Tools: tb,
	}
}

func newEngine(t *testing.T, srv *openaitest.Server, mod ...func(*openai.Config)) *openai.Engine {
	t.Helper()
	cfg := openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Timeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	for _, m := range mod {
		m(&cfg)
	}
	e, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// wantUpstream checks that err is the EUPSTREAM error with code, and that
// its message does not leak the provider's text.
func wantUpstream(t *testing.T, err error, code string) *ams.Error {
	t.Helper()
	var ae *ams.Error
	if !errors.As(err, &ae) || ae.Kind != ams.EUPSTREAM || ae.Code != code {
		t.Fatalf("err = %v, want EUPSTREAM %s", err, code)
	}
	if strings.Contains(ae.Message, "secret provider detail") {
		t.Fatalf("the message leaks the provider's text: %q", ae.Message)
	}
	return ae
}

func TestPlainAnswer(t *testing.T) {
	srv := openaitest.New(t, openaitest.Text("Sure, Bob."))
	reply, err := newEngine(t, srv).Reply(context.Background(), request(&tools{}))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Content != "Sure, Bob." || len(reply.Actions) != 0 {
		t.Fatalf("reply = %+v", reply)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	if r.Body["model"] != "gpt-test" || r.Stream() {
		t.Errorf("model %v, stream %v", r.Body["model"], r.Body["stream"])
	}
	msgs := r.Messages()
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m["role"].(string))
	}
	if strings.Join(roles, ",") != "system,user,assistant,user" {
		t.Fatalf("roles %v", roles)
	}
	sys := msgs[0]["content"].(string)
	for _, want := range []string{"Ada", "Answer briefly.", "Saturday, 21 November 2026, 11:00", "Europe/Berlin", "UTC+01:00", "2026-11-21T11:00:00+01:00"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	if msgs[3]["content"] != "Remind me to call Ann tomorrow at 9." || msgs[2]["content"] != "Hello Bob!" {
		t.Errorf("history %v", msgs)
	}
	toolsSent, _ := r.Body["tools"].([]any)
	if len(toolsSent) != 2 {
		t.Fatalf("tools %v", r.Body["tools"])
	}
	fn := toolsSent[0].(map[string]any)["function"].(map[string]any)
	if toolsSent[0].(map[string]any)["type"] != "function" || fn["name"] != "create_task" || fn["description"] != "Create a task for the user." {
		t.Errorf("tool %v", toolsSent[0])
	}
	if props, _ := fn["parameters"].(map[string]any)["properties"].(map[string]any); props["title"] == nil {
		t.Errorf("parameters %v", fn["parameters"])
	}
	if fn2 := toolsSent[1].(map[string]any)["function"].(map[string]any); fn2["parameters"] != nil {
		t.Errorf("a tool without parameters sent %v", fn2["parameters"])
	}
}

func TestNoToolboxSendsNoTools(t *testing.T) {
	srv := openaitest.New(t, openaitest.Text("Hi."))
	req := request(nil)
	req.Tools = nil
	if _, err := newEngine(t, srv, func(c *openai.Config) { c.APIKey = "" }).Reply(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if _, ok := r.Body["tools"]; ok {
		t.Errorf("tools sent without a toolbox: %v", r.Body["tools"])
	}
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization %q sent without an API key", got)
	}
}

func TestToolCallRoundTrip(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.ToolCalls(openaitest.Call{ID: "call_1", Name: "create_task", Arguments: `{"title":"Call Ann","due_at":"2026-11-22T09:00:00+01:00"}`}),
		openaitest.Text("Done: I'll remind you."))
	tb := &tools{}
	reply, err := newEngine(t, srv).Reply(context.Background(), request(tb))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Content != "Done: I'll remind you." {
		t.Fatalf("content %q", reply.Content)
	}
	runs := tb.recorded()
	if len(runs) != 1 || runs[0].name != "create_task" || runs[0].input["title"] != "Call Ann" || runs[0].input["due_at"] != "2026-11-22T09:00:00+01:00" {
		t.Fatalf("runs %+v", runs)
	}
	if len(reply.Actions) != 1 || reply.Actions[0].Type != "create_task" || reply.Actions[0].Status != ams.ActionSucceeded {
		t.Fatalf("actions %+v", reply.Actions)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[1].Messages()
	if len(msgs) != 6 {
		t.Fatalf("second request has %d messages: %v", len(msgs), msgs)
	}
	asst := msgs[4]
	calls, _ := asst["tool_calls"].([]any)
	if asst["role"] != "assistant" || len(calls) != 1 {
		t.Fatalf("assistant message %v", asst)
	}
	call := calls[0].(map[string]any)
	if call["id"] != "call_1" || call["function"].(map[string]any)["name"] != "create_task" {
		t.Errorf("tool call sent back %v", call)
	}
	tool := msgs[5]
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_1" {
		t.Fatalf("tool message %v", tool)
	}
	var content map[string]any
	if err := json.Unmarshal([]byte(tool["content"].(string)), &content); err != nil {
		t.Fatalf("tool content is not JSON: %v", tool["content"])
	}
	result, _ := content["result"].(map[string]any)
	if content["status"] != "succeeded" || result["id"] != "task_1" || result["title"] != "Call Ann" || content["error"] != nil {
		t.Errorf("tool content %v", content)
	}
}

func TestParallelToolCalls(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.ToolCalls(
			openaitest.Call{ID: "call_a", Name: "create_task", Arguments: `{"title":"Buy milk"}`},
			openaitest.Call{ID: "call_b", Name: "create_task", Arguments: `{"title":"Buy bread"}`}),
		openaitest.Text("Both added."))
	tb := &tools{}
	reply, err := newEngine(t, srv).Reply(context.Background(), request(tb))
	if err != nil {
		t.Fatal(err)
	}
	runs := tb.recorded()
	if len(runs) != 2 || runs[0].input["title"] != "Buy milk" || runs[1].input["title"] != "Buy bread" {
		t.Fatalf("runs %+v", runs)
	}
	if len(reply.Actions) != 2 || reply.Content != "Both added." {
		t.Fatalf("reply %+v", reply)
	}
	msgs := srv.Requests()[1].Messages()
	if len(msgs) != 7 || msgs[5]["tool_call_id"] != "call_a" || msgs[6]["tool_call_id"] != "call_b" {
		t.Fatalf("messages %v", msgs)
	}
	if calls := msgs[4]["tool_calls"].([]any); len(calls) != 2 {
		t.Fatalf("assistant tool calls %v", calls)
	}
}

func TestStreamingWithToolCallsSplitOverChunks(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Answer([]string{"Let me ", "add those."}, []openaitest.Call{
			{ID: "call_a", Name: "create_task", Arguments: `{"title":"Buy milk","due_at":"2026-11-22T09:00:00+01:00"}`},
			{ID: "call_b", Name: "create_task", Arguments: `{"title":"Buy bread"}`}}),
		openaitest.Text("Both ", "are ", "on your list."))
	tb := &tools{}
	req := request(tb)
	var deltas []string
	req.Stream = func(d string) error { deltas = append(deltas, d); return nil }
	reply, err := newEngine(t, srv).Reply(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Let me ", "add those.", "\n\nBoth ", "are ", "on your list."}
	if strings.Join(deltas, "|") != strings.Join(want, "|") {
		t.Fatalf("deltas %q, want %q", deltas, want)
	}
	if reply.Content != strings.Join(want, "") {
		t.Fatalf("content %q is not the deltas put together", reply.Content)
	}
	runs := tb.recorded()
	if len(runs) != 2 || runs[0].input["title"] != "Buy milk" || runs[0].input["due_at"] != "2026-11-22T09:00:00+01:00" || runs[1].input["title"] != "Buy bread" {
		t.Fatalf("runs %+v", runs)
	}
	reqs := srv.Requests()
	if !reqs[0].Stream() || !reqs[1].Stream() {
		t.Fatal("the calls were not streamed")
	}
	msgs := reqs[1].Messages()
	asst := msgs[4]
	if asst["content"] != "Let me add those." {
		t.Errorf("assistant text sent back %v", asst["content"])
	}
	calls := asst["tool_calls"].([]any)
	args := calls[0].(map[string]any)["function"].(map[string]any)["arguments"]
	if len(calls) != 2 || args != `{"title":"Buy milk","due_at":"2026-11-22T09:00:00+01:00"}` {
		t.Fatalf("accumulated tool calls %v", calls)
	}
}

func TestStreamCallbackErrorEndsTheTurn(t *testing.T) {
	srv := openaitest.New(t, openaitest.Text("one ", "two ", "three"))
	req := request(&tools{})
	gone := errors.New("client went away")
	n := 0
	req.Stream = func(string) error { n++; return gone }
	if _, err := newEngine(t, srv).Reply(context.Background(), req); !errors.Is(err, gone) {
		t.Fatalf("err = %v, want the stream's error", err)
	}
	if n != 1 {
		t.Fatalf("stream called %d times after failing", n)
	}
}

func TestToolRoundsAreBounded(t *testing.T) {
	srv := openaitest.New(t)
	srv.Repeat(openaitest.ToolCalls(openaitest.Call{ID: "call_x", Name: "list_tasks", Arguments: `{}`}))
	tb := &tools{}
	_, err := newEngine(t, srv, func(c *openai.Config) { c.MaxToolRounds = 2 }).Reply(context.Background(), request(tb))
	ae := wantUpstream(t, err, openai.CodeError)
	if !strings.Contains(ae.Message, "2 rounds") {
		t.Errorf("message %q", ae.Message)
	}
	if got := len(srv.Requests()); got != 3 {
		t.Errorf("%d calls, want 3 (two rounds of tools, then the refused third)", got)
	}
	if got := len(tb.recorded()); got != 2 {
		t.Errorf("%d tool runs, want 2", got)
	}
}

func TestRetriesA500(t *testing.T) {
	srv := openaitest.New(t, openaitest.Error(500, "0", "secret provider detail"), openaitest.Text("Recovered."))
	reply, err := newEngine(t, srv).Reply(context.Background(), request(&tools{}))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Content != "Recovered." || len(srv.Requests()) != 2 {
		t.Fatalf("reply %q after %d requests", reply.Content, len(srv.Requests()))
	}
}

func TestPersistent500(t *testing.T) {
	srv := openaitest.New(t)
	srv.Repeat(openaitest.Error(503, "0", "secret provider detail"))
	_, err := newEngine(t, srv).Reply(context.Background(), request(&tools{}))
	ae := wantUpstream(t, err, openai.CodeError)
	if !strings.Contains(ae.Message, "HTTP 503") {
		t.Errorf("message %q", ae.Message)
	}
	if got := len(srv.Requests()); got != 1+openai.DefaultMaxRetries {
		t.Errorf("%d requests, want %d", got, 1+openai.DefaultMaxRetries)
	}
}

func TestRateLimitHonoursRetryAfter(t *testing.T) {
	srv := openaitest.New(t, openaitest.Error(429, "1", "slow down"), openaitest.Text("After the wait."))
	start := time.Now()
	reply, err := newEngine(t, srv).Reply(context.Background(), request(&tools{}))
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("retried after %s, before the 1 s Retry-After", waited)
	}
	if reply.Content != "After the wait." {
		t.Fatalf("content %q", reply.Content)
	}
}

func TestRateLimitBeyondTheTimeoutFailsAtOnce(t *testing.T) {
	srv := openaitest.New(t, openaitest.Error(429, "120", "secret provider detail"))
	start := time.Now()
	_, err := newEngine(t, srv, func(c *openai.Config) { c.Timeout = 3 * time.Second }).Reply(context.Background(), request(&tools{}))
	wantUpstream(t, err, openai.CodeRateLimited)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s: waited for a Retry-After beyond the timeout", d)
	}
	if got := len(srv.Requests()); got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
}

func TestRateLimitedAfterRetries(t *testing.T) {
	srv := openaitest.New(t)
	srv.Repeat(openaitest.Error(429, "0", "secret provider detail"))
	_, err := newEngine(t, srv).Reply(context.Background(), request(&tools{}))
	wantUpstream(t, err, openai.CodeRateLimited)
	if got := len(srv.Requests()); got != 3 {
		t.Errorf("%d requests, want 3", got)
	}
}

func TestUnauthorized(t *testing.T) {
	for _, status := range []int{401, 403} {
		srv := openaitest.New(t, openaitest.Error(status, "", "secret provider detail: bad key sk-t***"))
		_, err := newEngine(t, srv).Reply(context.Background(), request(&tools{}))
		wantUpstream(t, err, openai.CodeUnauthorized)
		if got := len(srv.Requests()); got != 1 {
			t.Errorf("%d: %d requests, want 1 (no retry)", status, got)
		}
	}
}

func TestUnknownModel(t *testing.T) {
	srv := openaitest.New(t, openaitest.Error(404, "", "secret provider detail"))
	_, err := newEngine(t, srv).Reply(context.Background(), request(&tools{}))
	ae := wantUpstream(t, err, openai.CodeError)
	if !strings.Contains(ae.Message, "'gpt-test'") {
		t.Errorf("message %q does not name the model", ae.Message)
	}
}

func TestProviderHangsBeyondTheTimeout(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := openaitest.New(t)
		if stream {
			srv.Push(srv.HangAfter("partial "))
		} else {
			srv.Push(srv.Hang())
		}
		req := request(&tools{})
		var got strings.Builder
		if stream {
			req.Stream = func(d string) error { got.WriteString(d); return nil }
		}
		start := time.Now()
		_, err := newEngine(t, srv, func(c *openai.Config) { c.Timeout = 300 * time.Millisecond }).Reply(context.Background(), req)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("stream %v: err = %v, want context.DeadlineExceeded", stream, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("stream %v: gave up after %s", stream, d)
		}
		if stream && got.String() != "partial " {
			t.Errorf("streamed %q before the hang", got.String())
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("stream %v: %d requests: a timed-out call was retried", stream, n)
		}
	}
}

func TestReplyDeadline(t *testing.T) {
	srv := openaitest.New(t)
	srv.Push(srv.Hang())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := newEngine(t, srv).Reply(ctx, request(&tools{}))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestMalformedAnswers(t *testing.T) {
	cases := []struct {
		name   string
		stream bool
		step   openaitest.Step
	}{
		{"json", false, openaitest.Raw(200, "application/json", `{"id": "x", "choices": [`)},
		{"no choices", false, openaitest.Raw(200, "application/json", `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`)},
		{"html", false, openaitest.Raw(200, "text/html", `<html>oops</html>`)},
		{"bad chunk", true, openaitest.Raw(200, "text/event-stream", "data: {\"choices\": [\n\n")},
		{"cut off", true, openaitest.Raw(200, "text/event-stream",
			`data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`+"\n\n")},
		{"error event", true, openaitest.Raw(200, "text/event-stream", `data: {"error": {"message": "secret provider detail"}}`+"\n\n")},
		{"error 200 json", false, openaitest.Raw(400, "application/json", `not json at all`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := openaitest.New(t, c.step)
			req := request(&tools{})
			if c.stream {
				req.Stream = func(string) error { return nil }
			}
			_, err := newEngine(t, srv).Reply(context.Background(), req)
			ae := wantUpstream(t, err, openai.CodeError)
			t.Logf("%s: %s", c.name, ae.Message)
		})
	}
}

func TestUnknownToolIsAFailedActionTheModelSees(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.ToolCalls(openaitest.Call{ID: "call_1", Name: "launch_rocket", Arguments: `{"target":"moon"}`}),
		openaitest.Text("I can't launch rockets."))
	tb := &tools{}
	reply, err := newEngine(t, srv).Reply(context.Background(), request(tb))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Content != "I can't launch rockets." || len(reply.Actions) != 1 || reply.Actions[0].Status != ams.ActionFailed {
		t.Fatalf("reply %+v", reply)
	}
	tool := srv.Requests()[1].Messages()[5]
	var content map[string]any
	json.Unmarshal([]byte(tool["content"].(string)), &content)
	e, _ := content["error"].(map[string]any)
	if content["status"] != "failed" || e["code"] != "unknown_tool" || content["result"] != nil {
		t.Fatalf("tool content %v", tool["content"])
	}
}

func TestArgumentsThatAreNotJSON(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.ToolCalls(openaitest.Call{ID: "call_1", Name: "create_task", Arguments: `{"title": "Call`}),
		openaitest.Text("Sorry, let me retry later."))
	tb := &tools{}
	reply, err := newEngine(t, srv).Reply(context.Background(), request(tb))
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.recorded()) != 0 || len(reply.Actions) != 0 {
		t.Fatalf("a tool ran on arguments that are not JSON: %+v", tb.recorded())
	}
	tool := srv.Requests()[1].Messages()[5]
	if !strings.Contains(tool["content"].(string), `"code":"invalid_json"`) {
		t.Fatalf("tool content %v", tool["content"])
	}
}

func TestToolboxFailureEndsTheTurn(t *testing.T) {
	srv := openaitest.New(t, openaitest.ToolCalls(openaitest.Call{ID: "call_1", Name: "create_task", Arguments: `{"title":"x"}`}))
	dbDown := errors.New("database is down")
	_, err := newEngine(t, srv).Reply(context.Background(), request(&tools{err: dbDown}))
	if !errors.Is(err, dbDown) {
		t.Fatalf("err = %v", err)
	}
}

func TestNewRefusesABadBaseURL(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://x/v1", "http://"} {
		if _, err := openai.New(openai.Config{BaseURL: u}); err == nil {
			t.Errorf("New accepted base URL %q", u)
		}
	}
}

func TestProviderUnreachable(t *testing.T) {
	closed := openaitest.New(t)
	closed.Close() // nothing listens on its port any more
	e, err := openai.New(openai.Config{BaseURL: closed.URL, MaxRetries: -1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Reply(context.Background(), request(&tools{}))
	ae := wantUpstream(t, err, openai.CodeError)
	if !strings.Contains(ae.Message, "could not be reached") {
		t.Errorf("message %q", ae.Message)
	}
}
