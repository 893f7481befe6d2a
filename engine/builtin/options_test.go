package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/amsdev/ams"
)

func lookup() *ams.ClientTool {
	return &ams.ClientTool{Type: "function", Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func reply(t *testing.T, req *ams.EngineRequest) *ams.Reply {
	t.Helper()
	if req.Assistant == nil {
		req.Assistant = ava
	}
	r, err := testEngine().Reply(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The client tool the message names (tool_choice auto) stops the turn
// with its call, the arguments the first JSON object of the message;
// given the output the engine replies "<name> returned: <output>".
func TestClientToolCallAndOutput(t *testing.T) {
	opts := &ams.TurnOptions{Tools: []*ams.ClientTool{{Type: "function", Name: "book_room"}, lookup()}}
	msg := `Please lookup_order {"id": 42, "x": {"y": 1}} now`
	r := reply(t, &ams.EngineRequest{History: history(in(msg)), Options: opts})
	if r.StopReason != ams.StopRequiresAction || r.RequiredAction == nil || r.RequiredAction.Type != ams.RequiredSubmitToolOutputs {
		t.Fatalf("reply = %+v, want requires_action submit_tool_outputs", r)
	}
	call := r.RequiredAction.ToolCalls[0]
	if len(r.RequiredAction.ToolCalls) != 1 || call.Name != "lookup_order" || string(call.Arguments) != `{"id":42,"x":{"y":1}}` ||
		!strings.HasPrefix(call.ID, "call_") {
		t.Fatalf("call = %+v %s", call, call.Arguments)
	}
	if r.Content != "" {
		t.Fatalf("content = %q, want none", r.Content)
	}
	done := []*ams.ToolCallRecord{{ID: call.ID, Name: call.Name, Arguments: call.Arguments, Output: "shipped"}}
	r = reply(t, &ams.EngineRequest{History: history(in(msg)), Options: opts, Calls: done})
	if r.Content != "lookup_order returned: shipped" || r.StopReason != ams.StopEndTurn || r.RequiredAction != nil {
		t.Fatalf("reply = %+v", r)
	}
	if len(r.Calls) != 1 || r.Calls[0].ID != call.ID {
		t.Fatalf("calls = %+v", r.Calls)
	}
}

func TestToolChoice(t *testing.T) {
	tools := []*ams.ClientTool{{Type: "function", Name: "first"}, {Type: "function", Name: "second"}}
	for _, tc := range []struct {
		name, msg string
		choice    *ams.ToolChoice
		want      string // "" for no call
	}{
		{"auto names none", "hello there", nil, ""},
		{"auto by name", "call second please", nil, "second"},
		{"auto case-insensitive", "SECOND!", &ams.ToolChoice{Mode: "auto"}, "second"},
		{"none", "call second please", &ams.ToolChoice{Mode: "none"}, ""},
		{"required takes the first", "hello", &ams.ToolChoice{Mode: "required"}, "first"},
		{"function", "first or not", &ams.ToolChoice{Mode: "function", Name: "second"}, "second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reply(t, &ams.EngineRequest{History: history(in(tc.msg)), Options: &ams.TurnOptions{Tools: tools, ToolChoice: tc.choice}})
			got := ""
			if r.RequiredAction != nil {
				got = r.RequiredAction.ToolCalls[0].Name
				if string(r.RequiredAction.ToolCalls[0].Arguments) != "{}" {
					t.Fatalf("arguments = %s, want {}", r.RequiredAction.ToolCalls[0].Arguments)
				}
			} else if r.Content == "" {
				t.Fatal("no call and no content")
			}
			if got != tc.want {
				t.Fatalf("called %q, want %q", got, tc.want)
			}
		})
	}
}

// Tokens are words; max_output_tokens cuts the reply.
func TestUsageAndMaxOutputTokens(t *testing.T) {
	r := reply(t, &ams.EngineRequest{History: history(in("what can you do?"))})
	if r.StopReason != ams.StopEndTurn || r.Usage.InputTokens != 4 || r.Usage.OutputTokens != countWords(r.Content) ||
		r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens || r.Usage.OutputTokens < 10 {
		t.Fatalf("usage %+v stop %q for %q", r.Usage, r.StopReason, r.Content)
	}
	var streamed strings.Builder
	r = reply(t, &ams.EngineRequest{History: history(in("what can you do?")), Options: &ams.TurnOptions{MaxOutputTokens: 3},
		Stream: func(d string) error { streamed.WriteString(d); return nil }})
	if r.StopReason != ams.StopMaxOutputTokens || r.Usage.OutputTokens != 3 || len(strings.Fields(r.Content)) != 3 {
		t.Fatalf("reply %q stop %q usage %+v", r.Content, r.StopReason, r.Usage)
	}
	if streamed.String() != r.Content {
		t.Fatalf("streamed %q, content %q", streamed.String(), r.Content)
	}
}

// A call of a tool that needs approval stops the reply before it runs;
// resumed with the approved call's outcome, the engine replays it; with
// a rejection, it says so.
func TestApproval(t *testing.T) {
	msg := "add a task: renew passport"
	needs := func(name string) bool { return name == "create_task" }
	tools := &fakeTools{}
	r := reply(t, &ams.EngineRequest{History: history(in(msg)), Tools: tools, NeedsApproval: needs})
	if r.RequiredAction == nil || r.RequiredAction.Type != ams.RequiredApproveToolCalls || len(tools.calls) != 0 {
		t.Fatalf("reply = %+v, runs %v", r, tools.calls)
	}
	call := r.RequiredAction.ToolCalls[0]
	if call.Name != "create_task" || !strings.Contains(string(call.Arguments), "Renew passport") {
		t.Fatalf("call = %+v %s", call, call.Arguments)
	}
	// Approved: the service ran it and recorded its outcome.
	act := &ams.Action{ID: "act_9", Type: "create_task", Status: ams.ActionSucceeded,
		Result: json.RawMessage(`{"id":"task_9","object":"task","title":"renew passport","status":"open"}`)}
	ok := []*ams.ToolCallRecord{{ID: call.ID, Name: call.Name, Arguments: call.Arguments, Output: ams.CallOutput(act), ActionID: act.ID}}
	r = reply(t, &ams.EngineRequest{History: history(in(msg)), Tools: tools, NeedsApproval: needs, Calls: ok})
	if r.RequiredAction != nil || len(tools.calls) != 0 || !strings.Contains(r.Content, "renew passport") || len(r.Calls) != 1 {
		t.Fatalf("approved: reply %+v, runs %v", r, tools.calls)
	}
	// Rejected.
	no := []*ams.ToolCallRecord{{ID: call.ID, Name: call.Name, Arguments: call.Arguments, Rejected: true,
		Output: ams.CallOutput(&ams.Action{Status: ams.ActionRejected, Error: ams.RejectedError("not now")})}}
	r = reply(t, &ams.EngineRequest{History: history(in(msg)), Tools: tools, NeedsApproval: needs, Calls: no})
	if r.RequiredAction != nil || len(tools.calls) != 0 || !strings.Contains(r.Content, "did not approve") {
		t.Fatalf("rejected: reply %+v, runs %v", r, tools.calls)
	}
	// Without approval needed, the tool runs and the call is recorded.
	r = reply(t, &ams.EngineRequest{History: history(in(msg)), Tools: tools})
	if len(tools.calls) != 1 || len(r.Calls) != 1 || r.Calls[0].ActionID == "" || r.Calls[0].Name != "create_task" {
		t.Fatalf("reply %+v runs %v", r, tools.calls)
	}
}

func TestCheckOptions(t *testing.T) {
	e := testEngine()
	tools := []*ams.ClientTool{lookup()}
	for _, tc := range []struct {
		o     *ams.TurnOptions
		param string
	}{
		{nil, ""},
		{&ams.TurnOptions{ResponseFormat: &ams.ResponseFormat{Type: "text"}, MaxOutputTokens: 5}, ""},
		{&ams.TurnOptions{ResponseFormat: &ams.ResponseFormat{Type: "json_schema", JSONSchema: &ams.JSONSchemaSpec{Name: "x"}}}, "response_format"},
		{&ams.TurnOptions{ToolChoice: &ams.ToolChoice{Mode: "required"}}, "tool_choice"},
		{&ams.TurnOptions{Tools: tools, ToolChoice: &ams.ToolChoice{Mode: "required"}}, ""},
		{&ams.TurnOptions{Tools: tools, ToolChoice: &ams.ToolChoice{Mode: "function", Name: "create_task"}}, "tool_choice"},
		{&ams.TurnOptions{Tools: tools, ToolChoice: &ams.ToolChoice{Mode: "function", Name: "lookup_order"}}, ""},
	} {
		err := e.CheckOptions(tc.o)
		var ae *ams.Error
		if tc.param == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.o, err)
			}
			continue
		}
		if !errorAs(err, &ae) || ae.Code != "unsupported_parameter" || ae.Param != tc.param || ae.Kind != ams.EINVALID {
			t.Errorf("%+v: err = %v, want unsupported_parameter %s", tc.o, err, tc.param)
		}
	}
}

func errorAs(err error, target **ams.Error) bool {
	e, ok := err.(*ams.Error)
	*target = e
	return ok
}

// TestCountWords: countWords counts the words strings.Fields makes, in
// ASCII and Unicode white space alike.
func TestCountWords(t *testing.T) {
	for _, s := range []string{"", " ", "one", "  two words ", "tab\tand\nnew line\r\n", "no-break\u00a0space and\u2003em space", "déjà vu ünïcode", "\v\f"} {
		if got, want := countWords(s), int64(len(strings.Fields(s))); got != want {
			t.Errorf("countWords(%q) = %d, want %d", s, got, want)
		}
	}
}
