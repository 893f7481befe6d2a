package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/openai/openaitest"
	"github.com/amsdev/ams/internal/testing/mcptest"
)

// TestMCPToolInATurn: the engine, against the scripted provider, calls a
// tool of an MCP integration (the reference server's get-sum) in a turn
// sent through POST /v1/messages. The provider was offered the tool as a
// function with its server's schema, the call ran on the server, its MCP
// result went back to the model, and the action is the turn's.
func TestMCPToolInATurn(t *testing.T) {
	everything := mcptest.Start(t)
	srv := openaitest.New(t,
		openaitest.ToolCalls(openaitest.Call{ID: "call_1", Name: "everything__get-sum", Arguments: `{"a": 19, "b": 23}`}),
		openaitest.Text("The sum is 42."))
	f := apiFixture(t, srv, 20*time.Second)
	if r := f.Do("POST", "/v1/integrations", f.Key, `{"provider": "mcp", "name": "everything", "url": "`+everything.URL+`"}`); r.Status != 201 {
		t.Fatalf("connect: %d %s", r.Status, r.Body)
	}
	r := f.Do("POST", "/v1/messages", f.Key, `{"assistant_id": "`+f.Assistant.ID+`", "message": "What is 19 + 23?"}`)
	if r.Status != 201 || !strings.Contains(string(r.Body), "The sum is 42.") {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d provider requests", len(reqs))
	}
	var offered map[string]any
	tools, _ := reqs[0].Body["tools"].([]any)
	for _, tl := range tools {
		fn, _ := tl.(map[string]any)["function"].(map[string]any)
		if fn["name"] == "everything__get-sum" {
			offered = fn
		}
	}
	if params, _ := offered["parameters"].(map[string]any); params == nil || !strings.Contains(jsonOf(params), `"a"`) {
		t.Fatalf("the provider was not offered everything__get-sum with its schema: %v", tools)
	}
	msgs := reqs[1].Messages()
	tool := msgs[len(msgs)-1]
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_1" || !strings.Contains(tool["content"].(string), "42") {
		t.Fatalf("tool message sent back: %v", tool)
	}
	page, err := f.Store.ListActions(context.Background(), f.User.ID, ams.ActionFilter{AssistantID: f.Assistant.ID}, ams.ListParams{Limit: 10})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("actions: %v %v", page, err)
	}
	act := page.Data[0]
	if act.Type != "everything__get-sum" || act.Status != ams.ActionSucceeded || act.TurnID == "" || act.CallSeq != 1 ||
		!strings.Contains(string(act.Result), "42") || act.ConversationID == "" {
		t.Fatalf("action: %+v %s", act, act.Result)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestMCPToolApprovalInATurn: a tool of an MCP integration whose
// require_approval names it stops the turn at requires_action
// (approve_tool_calls) before anything is sent to the server. Approved,
// the call runs on the server as the turn's call and its result goes to
// the model; rejected, a rejected action is recorded and the server gets
// no tools/call at all. The reference server sits behind a proxy that
// records the tools it is asked to call.
func TestMCPToolApprovalInATurn(t *testing.T) {
	everything := mcptest.Start(t)
	proxy := recordCalls(t, everything.URL)
	call := openaitest.ToolCalls(openaitest.Call{ID: "call_1", Name: "everything__get-sum", Arguments: `{"a": 19, "b": 23}`})
	srv := openaitest.New(t, call, openaitest.Text("The sum is 42."), call, openaitest.Text("As you wish: no sum."))
	f := apiFixture(t, srv, 20*time.Second)
	if r := f.Do("POST", "/v1/integrations", f.Key, `{"provider": "mcp", "name": "everything", "url": "`+proxy.url+
		`", "require_approval": ["get-sum"]}`); r.Status != 201 {
		t.Fatalf("connect: %d %s", r.Status, r.Body)
	}
	ctx := context.Background()
	send := func() (turnID, callID string) {
		t.Helper()
		before := len(proxy.calls())
		r := f.Do("POST", "/v1/messages", f.Key, `{"assistant_id": "`+f.Assistant.ID+`", "message": "What is 19 + 23?"}`)
		var turn struct {
			ID             string `json:"id"`
			Status         string `json:"status"`
			RequiredAction struct {
				Type      string `json:"type"`
				ToolCalls []struct {
					ID        string          `json:"id"`
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"tool_calls"`
			} `json:"required_action"`
		}
		if err := json.Unmarshal(r.Body, &turn); err != nil || r.Status != 200 || turn.Status != "requires_action" ||
			turn.RequiredAction.Type != ams.RequiredApproveToolCalls || len(turn.RequiredAction.ToolCalls) != 1 {
			t.Fatalf("send: %d %s", r.Status, r.Body)
		}
		c := turn.RequiredAction.ToolCalls[0]
		if c.Name != "everything__get-sum" || c.ID != "call_1" || !strings.Contains(string(c.Arguments), "19") {
			t.Fatalf("pending call: %+v", c)
		}
		if n := proxy.calls(); len(n) != before {
			t.Fatalf("the server was called before the approval: %v", n[before:])
		}
		return turn.ID, c.ID
	}
	type done struct {
		Status         string   `json:"status"`
		ActionIDs      []string `json:"action_ids"`
		ReplyMessageID string   `json:"reply_message_id"`
	}
	decide := func(turnID, body string) done {
		t.Helper()
		r := f.Do("POST", "/v1/turns/"+turnID+"/approvals", f.Key, body)
		var d done
		if err := json.Unmarshal(r.Body, &d); err != nil || r.Status != 200 || d.Status != "completed" || len(d.ActionIDs) != 1 {
			t.Fatalf("approvals: %d %s", r.Status, r.Body)
		}
		return d
	}

	// Approved: the server runs get-sum once, as the turn's call.
	turnID, callID := send()
	d := decide(turnID, `{"approvals": [{"tool_call_id": "`+callID+`", "approved": true}]}`)
	if n := proxy.calls(); len(n) != 1 || n[0] != "get-sum" {
		t.Fatalf("tools/call after the approval: %v", n)
	}
	act, err := f.Store.FindAction(ctx, f.User.ID, d.ActionIDs[0])
	if err != nil || act.Type != "everything__get-sum" || act.Status != ams.ActionSucceeded || act.TurnID != turnID || act.CallSeq != 1 ||
		!strings.Contains(string(act.Result), "42") {
		t.Fatalf("approved action: %+v %s %v", act, act.Result, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d provider requests", len(reqs))
	}
	msgs := reqs[1].Messages()
	if tool := msgs[len(msgs)-1]; tool["role"] != "tool" || tool["tool_call_id"] != "call_1" || !strings.Contains(tool["content"].(string), "42") {
		t.Fatalf("tool message sent back: %v", tool)
	}
	if m, err := f.Store.FindMessage(ctx, f.User.ID, d.ReplyMessageID); err != nil || m.Content != "The sum is 42." {
		t.Fatalf("reply: %+v %v", m, err)
	}

	// Rejected: recorded as rejected with the reason, nothing sent to the
	// server, and the model told.
	turnID, callID = send()
	d = decide(turnID, `{"approvals": [{"tool_call_id": "`+callID+`", "approved": false, "reason": "not now"}]}`)
	if n := proxy.calls(); len(n) != 1 {
		t.Fatalf("tools/call after the rejection: %v", n)
	}
	act, err = f.Store.FindAction(ctx, f.User.ID, d.ActionIDs[0])
	if err != nil || act.Type != "everything__get-sum" || act.Status != ams.ActionRejected || act.TurnID != turnID || act.Result != nil ||
		act.Error == nil || !strings.Contains(act.Error.Message, "not now") {
		t.Fatalf("rejected action: %+v %v", act, err)
	}
	reqs = srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d provider requests", len(reqs))
	}
	msgs = reqs[3].Messages()
	if tool := msgs[len(msgs)-1]; tool["role"] != "tool" || tool["tool_call_id"] != "call_1" || !strings.Contains(tool["content"].(string), "not now") {
		t.Fatalf("tool message sent back: %v", tool)
	}
}

// callRecorder is a reverse proxy in front of an MCP server that records
// the names of the tools it is asked to call (tools/call).
type callRecorder struct {
	url   string
	mu    sync.Mutex
	names []string
}

// recordCalls starts a callRecorder in front of the MCP endpoint target;
// its url is the proxied endpoint.
func recordCalls(t *testing.T, target string) *callRecorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rc := &callRecorder{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	proxy.FlushInterval = -1 // event streams as they come
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "read", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				rc.mu.Lock()
				rc.names = append(rc.names, msg.Params.Name)
				rc.mu.Unlock()
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL + u.Path
	return rc
}

// calls returns the names of the tools called so far.
func (rc *callRecorder) calls() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.names)
}
