package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

const lookupTool = `[{"type": "function", "name": "lookup_order", "description": "Look an order up.", "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}}}]`

// waitingTurn sends a message that calls the client tool lookup_order and
// returns the turn, stopped at requires_action.
func (f *fixture) waitingTurn() map[string]any {
	f.T.Helper()
	r := f.do("POST", "/v1/messages", fmt.Sprintf(`{"assistant_id": %q, "message": "please lookup_order {\"id\": 7}", "tools": %s}`, f.Assistant.ID, lookupTool))
	if r.status != http.StatusOK {
		f.T.Fatalf("send: %d %s", r.status, r.body)
	}
	turn := r.json(f.T)
	ra, _ := turn["required_action"].(map[string]any)
	if turn["object"] != "turn" || turn["status"] != "requires_action" || turn["stop_reason"] != "requires_action" || ra["type"] != "submit_tool_outputs" {
		f.T.Fatalf("turn = %s", r.body)
	}
	return turn
}

func pendingCall(t *testing.T, turn map[string]any) map[string]any {
	t.Helper()
	calls := turn["required_action"].(map[string]any)["tool_calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("tool calls = %v", calls)
	}
	return calls[0].(map[string]any)
}

// A client tool's call stops the turn; bad answers are refused with
// nothing stored; the outputs resume it to its reply; a second answer is
// refused.
func TestToolOutputs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	turn := f.waitingTurn()
	id := turn["id"].(string)
	call := pendingCall(t, turn)
	if call["name"] != "lookup_order" || !strings.HasPrefix(call["id"].(string), "call_") {
		t.Fatalf("call = %v", call)
	}
	if args, _ := json.Marshal(call["arguments"]); string(args) != `{"id":7}` {
		t.Fatalf("arguments = %s", args)
	}
	path := "/v1/turns/" + id + "/tool_outputs"
	big := strings.Repeat("x", 32*1024+1)
	for _, tc := range []struct {
		body        string
		status      int
		code, param string
	}{
		{`{}`, 400, "parameter_missing", "tool_outputs"},
		{`{"tool_outputs": []}`, 400, "parameter_missing", "tool_outputs"},
		{`{"tool_outputs": [{"tool_call_id": "call_nope", "output": "x"}]}`, 400, "parameter_invalid", "tool_outputs[0].tool_call_id"},
		{fmt.Sprintf(`{"tool_outputs": [{"tool_call_id": %q, "output": "a"}, {"tool_call_id": %q, "output": "b"}]}`, call["id"], call["id"]), 400, "parameter_invalid", "tool_outputs[1].tool_call_id"},
		{fmt.Sprintf(`{"tool_outputs": [{"tool_call_id": %q, "output": %q}]}`, call["id"], big), 400, "parameter_invalid", "tool_outputs[0].output"},
		{fmt.Sprintf(`{"tool_outputs": [{"tool_call_id": %q, "output": "x", "extra": 1}]}`, call["id"]), 400, "", ""},
	} {
		r := f.do("POST", path, tc.body)
		if tc.code == "" {
			if r.status != 400 {
				t.Fatalf("%s: %d %s", tc.body[:min(60, len(tc.body))], r.status, r.body)
			}
			continue
		}
		wantError(t, r, tc.status, "invalid_request_error", tc.code, tc.param)
	}
	// Approvals to a turn that waits for outputs.
	r := f.do("POST", "/v1/turns/"+id+"/approvals", fmt.Sprintf(`{"approvals": [{"tool_call_id": %q, "approved": true}]}`, call["id"]))
	wantError(t, r, 409, "invalid_request_error", "turn_not_waiting", "")
	// Nothing changed.
	if got := f.do("GET", "/v1/turns/"+id, "").json(t); got["status"] != "requires_action" || got["updated_at"] != turn["updated_at"] {
		t.Fatalf("after bad answers: %v", got)
	}

	r = f.do("POST", path, fmt.Sprintf(`{"tool_outputs": [{"tool_call_id": %q, "output": "shipped"}]}`, call["id"]))
	if r.status != 200 {
		t.Fatalf("outputs: %d %s", r.status, r.body)
	}
	done := r.json(t)
	if done["status"] != "completed" || done["stop_reason"] != "end_turn" || done["required_action"] != nil || done["reply_message_id"] == "" {
		t.Fatalf("resumed turn = %s", r.body)
	}
	reply := f.do("GET", "/v1/messages/"+done["reply_message_id"].(string), "").json(t)
	if reply["content"] != "lookup_order returned: shipped" {
		t.Fatalf("reply = %v", reply)
	}
	r = f.do("POST", path, fmt.Sprintf(`{"tool_outputs": [{"tool_call_id": %q, "output": "again"}]}`, call["id"]))
	wantError(t, r, 409, "invalid_request_error", "turn_not_waiting", "")
	// The stop and the end were events.
	evs := f.do("GET", "/v1/events?type=turn.requires_action", "").json(t)
	if data := evs["data"].([]any); len(data) != 1 {
		t.Fatalf("turn.requires_action events: %v", evs)
	}
}

// With require_approval, a built-in tool's call waits for approval:
// rejected, nothing is done and the action is recorded rejected;
// approved, the tool runs as the turn's call.
func TestApprovals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("PATCH", "/v1/assistants/"+f.Assistant.ID, `{"require_approval": ["create_task"], "multitask_strategy": "reject"}`)
	if a := r.json(t); r.status != 200 || a["multitask_strategy"] != "reject" || fmt.Sprint(a["require_approval"]) != "[create_task]" {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	send := func() (string, map[string]any) {
		r := f.do("POST", "/v1/messages", fmt.Sprintf(`{"assistant_id": %q, "message": "add a task: renew passport"}`, f.Assistant.ID))
		turn := r.json(t)
		if r.status != 200 || turn["status"] != "requires_action" || turn["required_action"].(map[string]any)["type"] != "approve_tool_calls" {
			t.Fatalf("send: %d %s", r.status, r.body)
		}
		return turn["id"].(string), pendingCall(t, turn)
	}
	tasks := func() int {
		page, err := f.Data.ListTasks(context.Background(), f.User.ID, ams.TaskFilter{}, ams.ListParams{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Data)
	}
	id, call := send()
	if call["name"] != "create_task" || tasks() != 0 {
		t.Fatalf("call %v, tasks %d", call, tasks())
	}
	wantError(t, f.do("POST", "/v1/turns/"+id+"/tool_outputs", fmt.Sprintf(`{"tool_outputs": [{"tool_call_id": %q, "output": "x"}]}`, call["id"])),
		409, "invalid_request_error", "turn_not_waiting", "")
	wantError(t, f.do("POST", "/v1/turns/"+id+"/approvals", `{"approvals": [{"tool_call_id": "call_x", "approved": true}]}`),
		400, "invalid_request_error", "parameter_invalid", "approvals[0].tool_call_id")
	r = f.do("POST", "/v1/turns/"+id+"/approvals", fmt.Sprintf(`{"approvals": [{"tool_call_id": %q, "approved": false, "reason": "not today"}]}`, call["id"]))
	done := r.json(t)
	if r.status != 200 || done["status"] != "completed" || tasks() != 0 {
		t.Fatalf("rejected: %d %s, tasks %d", r.status, r.body, tasks())
	}
	ids := done["action_ids"].([]any)
	if len(ids) != 1 {
		t.Fatalf("action ids = %v", ids)
	}
	act, err := f.Data.FindAction(context.Background(), f.User.ID, ids[0].(string))
	if err != nil || act.Status != ams.ActionRejected || act.TurnID != id || act.Type != "create_task" || !strings.Contains(act.Error.Message, "not today") {
		t.Fatalf("rejected action = %+v %v", act, err)
	}
	reply := f.do("GET", "/v1/messages/"+done["reply_message_id"].(string), "").json(t)
	if !strings.Contains(reply["content"].(string), "did not approve") {
		t.Fatalf("reply = %v", reply["content"])
	}

	id, call = send()
	r = f.do("POST", "/v1/turns/"+id+"/approvals", fmt.Sprintf(`{"approvals": [{"tool_call_id": %q, "approved": true}]}`, call["id"]))
	done = r.json(t)
	if r.status != 200 || done["status"] != "completed" || tasks() != 1 {
		t.Fatalf("approved: %d %s, tasks %d", r.status, r.body, tasks())
	}
	act, err = f.Data.FindAction(context.Background(), f.User.ID, done["action_ids"].([]any)[0].(string))
	if err != nil || act.Status != ams.ActionSucceeded || act.TurnID != id {
		t.Fatalf("approved action = %+v %v", act, err)
	}
}

// An unanswered required action expires: the turn fails with
// required_action_expired and answers are refused.
func TestRequiredActionExpires(t *testing.T) {
	t.Parallel()
	f := setup(t)
	turn := f.waitingTurn()
	id := turn["id"].(string)
	ctx := context.Background()
	if n, err := f.App.Messages.ExpireRequiredActions(ctx); n != 0 || err != nil {
		t.Fatalf("expired before time: %d %v", n, err)
	}
	f.Clock.Add(10*time.Minute + time.Second)
	if n, err := f.App.Messages.ExpireRequiredActions(ctx); n != 1 || err != nil {
		t.Fatalf("expired: %d %v", n, err)
	}
	got := f.do("GET", "/v1/turns/"+id, "").json(t)
	if got["status"] != "failed" || got["error"].(map[string]any)["code"] != "required_action_expired" || got["required_action"] != nil {
		t.Fatalf("expired turn = %v", got)
	}
	call := pendingCall(t, turn)
	wantError(t, f.do("POST", "/v1/turns/"+id+"/tool_outputs", fmt.Sprintf(`{"tool_outputs": [{"tool_call_id": %q, "output": "x"}]}`, call["id"])),
		409, "invalid_request_error", "turn_not_waiting", "")
	if evs := f.do("GET", "/v1/events?type=turn.failed", "").json(t)["data"].([]any); len(evs) != 1 {
		t.Fatalf("turn.failed events: %v", evs)
	}
}

// Bad per-request options are refused naming the parameter, before
// anything is stored.
func TestBadTurnOptions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var many []string
	for i := range 65 {
		many = append(many, fmt.Sprintf(`{"type": "function", "name": "t%d"}`, i))
	}
	for _, tc := range []struct {
		opts        string
		code, param string
	}{
		{`"tools": [` + strings.Join(many, ",") + `]`, "parameter_invalid", "tools"},
		{`"tools": [{"type": "function", "name": "bad name"}]`, "parameter_invalid", "tools[0].name"},
		{`"tools": [{"type": "function", "name": "create_task"}]`, "parameter_invalid", "tools[0].name"},
		{`"tools": [{"type": "function", "name": "github__search"}]`, "parameter_invalid", "tools[0].name"},
		{`"tools": [{"type": "code", "name": "x"}]`, "parameter_invalid", "tools[0].type"},
		{`"tools": [{"type": "function", "name": "x"}, {"type": "function", "name": "x"}]`, "parameter_invalid", "tools[1].name"},
		{`"tools": [{"type": "function", "name": "x", "parameters": {"type": "object", "properties": {"a": {"type": 5}}}}]`, "parameter_invalid", "tools[0].parameters"},
		{`"tools": [{"type": "function", "name": "x", "parameters": {"type": "string"}}]`, "parameter_invalid", "tools[0].parameters"},
		{`"tools": [{"type": "function", "name": "x", "parameters": {"type": "object", "$ref": "file:///etc/passwd"}}]`, "parameter_invalid", "tools[0].parameters"},
		{`"tool_choice": "sometimes"`, "parameter_invalid", "tool_choice"},
		{`"tool_choice": {"type": "function", "name": "nope"}`, "parameter_invalid", "tool_choice"},
		{`"max_output_tokens": 0`, "parameter_invalid", "max_output_tokens"},
		{`"response_format": {"type": "xml"}`, "parameter_invalid", "response_format.type"},
		{`"response_format": {"type": "json_schema"}`, "parameter_missing", "response_format.json_schema"},
		// What the built-in engine cannot do.
		{`"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}`, "unsupported_parameter", "response_format"},
		{`"tool_choice": "required"`, "unsupported_parameter", "tool_choice"},
	} {
		r := f.do("POST", "/v1/messages", fmt.Sprintf(`{"assistant_id": %q, "message": "hi", %s}`, f.Assistant.ID, tc.opts))
		wantError(t, r, 400, "invalid_request_error", tc.code, tc.param)
	}
	page, err := f.Data.ListConversations(context.Background(), f.User.ID, "", ams.ListParams{Limit: 10})
	if err != nil || len(page.Data) != 0 {
		t.Fatalf("conversations after bad sends: %v %v", page, err)
	}
	// The assistant's own fields are checked the same way.
	wantError(t, f.do("PATCH", "/v1/assistants/"+f.Assistant.ID, `{"tools": [{"type": "function", "name": "list_tasks"}]}`), 400, "invalid_request_error", "parameter_invalid", "tools[0].name")
	wantError(t, f.do("PATCH", "/v1/assistants/"+f.Assistant.ID, `{"require_approval": ["launch_rockets"]}`), 400, "invalid_request_error", "parameter_invalid", "require_approval[0]")
	wantError(t, f.do("PATCH", "/v1/assistants/"+f.Assistant.ID, `{"multitask_strategy": "later"}`), 400, "invalid_request_error", "parameter_invalid", "multitask_strategy")
}

// A waiting turn can be cancelled; its answer is then refused.
func TestCancelWaitingTurn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	turn := f.waitingTurn()
	id := turn["id"].(string)
	r := f.do("POST", "/v1/turns/"+id+"/cancel", "")
	got := r.json(t)
	if r.status != 200 || got["status"] != "cancelled" || got["stop_reason"] != "cancelled" || got["required_action"] != nil {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	call := pendingCall(t, turn)
	wantError(t, f.do("POST", "/v1/turns/"+id+"/tool_outputs", fmt.Sprintf(`{"tool_outputs": [{"tool_call_id": %q, "output": "x"}]}`, call["id"])),
		409, "invalid_request_error", "turn_not_waiting", "")
	if evs := f.do("GET", "/v1/events?type=turn.cancelled", "").json(t)["data"].([]any); len(evs) != 1 {
		t.Fatalf("turn.cancelled events: %v", evs)
	}
}
