package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/openai/openaitest"
)

var orderTool = &ams.ClientTool{Type: "function", Name: "lookup_order", Description: "Look an order up.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)}

// body returns the request's JSON field k.
func body(r *openaitest.Request, k string) string {
	b, _ := json.Marshal(r.Body[k])
	return string(b)
}

// A call of a client tool stops the reply at submit_tool_outputs, after
// the toolbox calls of the same round ran; resumed with the output, the
// model is given the calls as made and answered, and its answer ends the
// turn. The options reach the provider, usage is summed over the calls.
func TestClientToolsAndOptions(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			srv := openaitest.New(t,
				openaitest.Reply{Calls: []openaitest.Call{
					{ID: "call_a", Name: "create_task", Arguments: `{"title":"Call Ann"}`},
					{ID: "call_b", Name: "lookup_order", Arguments: `{"id":7}`},
				}, PromptTokens: 100, OutputTokens: 20}.Step(),
				openaitest.Reply{Pieces: []string{"Order 7 ", "has shipped."}, PromptTokens: 150, OutputTokens: 8}.Step(),
			)
			e := newEngine(t, srv)
			tb := &tools{}
			instr := "Speak like a pirate."
			req := request(tb)
			req.Options = &ams.TurnOptions{Instructions: &instr, Tools: []*ams.ClientTool{orderTool},
				ToolChoice: &ams.ToolChoice{Mode: "required"}, MaxOutputTokens: 300}
			if stream {
				req.Stream = func(string) error { return nil }
			}
			r, err := e.Reply(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if r.StopReason != ams.StopRequiresAction || r.RequiredAction == nil || r.RequiredAction.Type != ams.RequiredSubmitToolOutputs ||
				len(r.RequiredAction.ToolCalls) != 1 || r.RequiredAction.ToolCalls[0].ID != "call_b" ||
				string(r.RequiredAction.ToolCalls[0].Arguments) != `{"id":7}` {
				t.Fatalf("reply = %+v", r)
			}
			if runs := tb.recorded(); len(runs) != 1 || runs[0].name != "create_task" {
				t.Fatalf("runs = %+v", runs)
			}
			if len(r.Calls) != 1 || r.Calls[0].ID != "call_a" || r.Calls[0].ActionID == "" {
				t.Fatalf("calls = %+v", r.Calls)
			}
			if r.Usage != (ams.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120}) {
				t.Fatalf("usage = %+v", r.Usage)
			}
			first := srv.Requests()[0]
			sys, _ := first.Messages()[0]["content"].(string)
			if !strings.Contains(sys, "Speak like a pirate.") || strings.Contains(sys, "Answer briefly.") {
				t.Fatalf("system prompt = %q", sys)
			}
			if body(first, "tool_choice") != `"required"` || body(first, "max_completion_tokens") != "300" {
				t.Fatalf("tool_choice %s, max_completion_tokens %s", body(first, "tool_choice"), body(first, "max_completion_tokens"))
			}
			if tools := body(first, "tools"); !strings.Contains(tools, `"lookup_order"`) || !strings.Contains(tools, `"create_task"`) || !strings.Contains(tools, `"required":["id"]`) {
				t.Fatalf("tools = %s", tools)
			}
			// The client answers.
			req.Calls = append(r.Calls, &ams.ToolCallRecord{ID: "call_b", Name: "lookup_order", Arguments: json.RawMessage(`{"id":7}`), Output: "shipped"})
			r, err = e.Reply(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if r.Content != "Order 7 has shipped." || r.StopReason != ams.StopEndTurn || r.RequiredAction != nil || len(r.Calls) != 2 {
				t.Fatalf("reply = %+v", r)
			}
			if r.Usage != (ams.Usage{InputTokens: 150, OutputTokens: 8, TotalTokens: 158}) {
				t.Fatalf("usage = %+v", r.Usage)
			}
			msgs := srv.Requests()[1].Messages()
			n := len(msgs)
			if n < 4 || msgs[n-4]["role"] != "assistant" || msgs[n-3]["role"] != "tool" || msgs[n-3]["tool_call_id"] != "call_a" ||
				msgs[n-1]["role"] != "tool" || msgs[n-1]["tool_call_id"] != "call_b" || msgs[n-1]["content"] != "shipped" {
				b, _ := json.Marshal(msgs)
				t.Fatalf("messages = %s", b)
			}
			if len(tb.recorded()) != 1 {
				t.Fatal("a recorded call ran again")
			}
		})
	}
}

func TestToolChoiceFunctionAndStructuredOutput(t *testing.T) {
	srv := openaitest.New(t, openaitest.Text(`{"answer":42}`))
	e := newEngine(t, srv)
	strict := true
	req := request(nil)
	req.Options = &ams.TurnOptions{Tools: []*ams.ClientTool{orderTool}, ToolChoice: &ams.ToolChoice{Mode: "function", Name: "lookup_order"},
		ResponseFormat: &ams.ResponseFormat{Type: "json_schema", JSONSchema: &ams.JSONSchemaSpec{Name: "answer",
			Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"integer"}}}`), Strict: &strict}}}
	r, err := e.Reply(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != `{"answer":42}` {
		t.Fatalf("content = %q", r.Content)
	}
	got := srv.Requests()[0]
	if tc := body(got, "tool_choice"); tc != `{"function":{"name":"lookup_order"},"type":"function"}` {
		t.Fatalf("tool_choice = %s", tc)
	}
	if rf := body(got, "response_format"); rf != `{"json_schema":{"name":"answer","schema":{"properties":{"answer":{"type":"integer"}},"type":"object"},"strict":true},"type":"json_schema"}` {
		t.Fatalf("response_format = %s", rf)
	}
}

// finish_reason "length" is stop reason max_output_tokens.
func TestFinishReasons(t *testing.T) {
	for _, tc := range []struct{ finish, want string }{{"stop", ams.StopEndTurn}, {"length", ams.StopMaxOutputTokens}} {
		srv := openaitest.New(t, openaitest.Reply{Pieces: []string{"Once upon a"}, Finish: tc.finish}.Step())
		req := request(nil)
		req.Options = &ams.TurnOptions{MaxOutputTokens: 3}
		r, err := newEngine(t, srv).Reply(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if r.StopReason != tc.want || r.Usage.TotalTokens != 15 {
			t.Errorf("finish %s: stop %q usage %+v", tc.finish, r.StopReason, r.Usage)
		}
	}
}

// A tool that needs approval stops the reply before it runs; resumed with
// the approved call's outcome, the model goes on from it.
func TestApprovalBeforeBuiltinTool(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.ToolCalls(openaitest.Call{ID: "call_1", Name: "create_task", Arguments: `{"title":"Call Ann"}`}),
		openaitest.Text("Done."),
	)
	e := newEngine(t, srv)
	tb := &tools{}
	req := request(tb)
	req.NeedsApproval = func(name string) bool { return name == "create_task" }
	r, err := e.Reply(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.RequiredAction == nil || r.RequiredAction.Type != ams.RequiredApproveToolCalls || r.RequiredAction.ToolCalls[0].Name != "create_task" {
		t.Fatalf("reply = %+v", r)
	}
	if len(tb.recorded()) != 0 {
		t.Fatal("the tool ran before approval")
	}
	act := &ams.Action{ID: "act_x", Status: ams.ActionRejected, Error: ams.RejectedError("no")}
	req.Calls = []*ams.ToolCallRecord{{ID: "call_1", Name: "create_task", Arguments: json.RawMessage(`{"title":"Call Ann"}`),
		Output: ams.CallOutput(act), Rejected: true, ActionID: act.ID}}
	r, err = e.Reply(context.Background(), req)
	if err != nil || r.Content != "Done." || len(tb.recorded()) != 0 {
		t.Fatalf("reply %+v err %v runs %v", r, err, tb.recorded())
	}
	msgs := srv.Requests()[1].Messages()
	last := msgs[len(msgs)-1]
	if c, _ := last["content"].(string); last["role"] != "tool" || !strings.Contains(c, "tool_call_rejected") {
		t.Fatalf("last message = %v", last)
	}
}

// A round that calls a tool needing approval and a client tool stops for
// the approval, the client call kept as pending in the reply's calls (not
// lost, not run, not replayed to the model while unanswered); once both
// are answered the model is given every call of the round with its
// answer.
func TestApprovalAndClientToolInOneRound(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.ToolCalls(
			openaitest.Call{ID: "call_a", Name: "create_task", Arguments: `{"title":"Call Ann"}`},
			openaitest.Call{ID: "call_b", Name: "lookup_order", Arguments: `{"id":7}`},
		),
		openaitest.Text("Task made; order 7 has shipped."),
	)
	e := newEngine(t, srv)
	tb := &tools{}
	req := request(tb)
	req.Options = &ams.TurnOptions{Tools: []*ams.ClientTool{orderTool}}
	req.NeedsApproval = func(name string) bool { return name == "create_task" }
	r, err := e.Reply(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.RequiredAction == nil || r.RequiredAction.Type != ams.RequiredApproveToolCalls || len(r.RequiredAction.ToolCalls) != 1 ||
		r.RequiredAction.ToolCalls[0].ID != "call_a" || r.StopReason != ams.StopRequiresAction {
		t.Fatalf("reply = %+v", r)
	}
	if len(r.Calls) != 1 || r.Calls[0].ID != "call_b" || !r.Calls[0].Pending || r.Calls[0].Output != "" || string(r.Calls[0].Arguments) != `{"id":7}` {
		t.Fatalf("calls = %+v", r.Calls)
	}
	if p := ams.PendingCalls(r.Calls); len(p) != 1 || p[0].ID != "call_b" || p[0].Name != "lookup_order" {
		t.Fatalf("pending = %+v", p)
	}
	if len(tb.recorded()) != 0 {
		t.Fatal("a call ran before its approval")
	}
	// Approved and run (by the service), then the client's output.
	act := &ams.Action{ID: "act_1", Status: ams.ActionSucceeded, Result: json.RawMessage(`{"id":"task_1"}`)}
	req.Calls = []*ams.ToolCallRecord{
		{ID: "call_b", Name: "lookup_order", Arguments: json.RawMessage(`{"id":7}`), Output: "shipped"},
		{ID: "call_a", Name: "create_task", Arguments: json.RawMessage(`{"title":"Call Ann"}`), Output: ams.CallOutput(act), ActionID: act.ID},
	}
	r, err = e.Reply(context.Background(), req)
	if err != nil || r.Content != "Task made; order 7 has shipped." || r.RequiredAction != nil {
		t.Fatalf("reply %+v err %v", r, err)
	}
	answers := map[string]string{}
	for _, m := range srv.Requests()[1].Messages() {
		if m["role"] == "tool" {
			c, _ := m["content"].(string)
			answers[m["tool_call_id"].(string)] = c
		}
	}
	if len(answers) != 2 || answers["call_b"] != "shipped" || !strings.Contains(answers["call_a"], "task_1") {
		t.Fatalf("tool messages = %v", answers)
	}
	// A pending call is never given to the model unanswered.
	req.Calls = []*ams.ToolCallRecord{{ID: "call_b", Name: "lookup_order", Arguments: json.RawMessage(`{"id":7}`), Pending: true}}
	srv.Push(openaitest.Text("ok"))
	if _, err := e.Reply(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	for _, m := range srv.Requests()[2].Messages() {
		if m["role"] == "tool" || m["tool_calls"] != nil {
			t.Fatalf("a pending call was replayed: %v", m)
		}
	}
}
