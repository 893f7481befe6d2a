package openai_test

import (
	"context"
	"encoding/json"
	"strings"
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
