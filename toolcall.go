package ams

import (
	"encoding/json"
	"strings"
)

// ActionRejected is the status of an action recording a tool call the
// user did not approve (POST /v1/turns/{id}/approvals): nothing was done.
const ActionRejected = "rejected"

// PrefixCall is the prefix of a tool call's id (ToolCallRequest.ID).
const PrefixCall = "call_"

// callOutcome is what a model is told of a tool call that ran through
// the Toolbox (or was rejected): the action's status with its result or
// error.
type callOutcome struct {
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
	Error  *ActionError    `json:"error"`
}

// CallOutput returns the text a model is told of action a: the JSON of
// its status, result and error. Engines and the service (which runs
// approved calls) write it the same way, so that a resumed engine reads
// back what it would have written (ToolCallRecord.Action).
func CallOutput(a *Action) string {
	b, _ := json.Marshal(callOutcome{Status: a.Status, Result: a.Result, Error: a.Error})
	return string(b)
}

// RejectedError is the error of a rejected call's action.
func RejectedError(reason string) *ActionError {
	msg := "The user did not approve this tool call."
	if r := strings.TrimSpace(reason); r != "" {
		msg = "The user did not approve this tool call: " + r
	}
	return &ActionError{Type: TypeInvalidRequest, Code: "tool_call_rejected", Message: msg}
}

// Action rebuilds the outcome of a recorded call of a Toolbox tool, as
// the Toolbox returned it (its id, type, input, status, result and
// error), for an engine that replays the call instead of running it
// again. A rejected call is an action of status ActionRejected.
func (c *ToolCallRecord) Action() *Action {
	a := &Action{ID: c.ActionID, Object: "action", Type: c.Name, Input: c.Arguments, Status: ActionSucceeded}
	var o callOutcome
	if json.Unmarshal([]byte(c.Output), &o) == nil && o.Status != "" {
		a.Status, a.Result, a.Error = o.Status, o.Result, o.Error
	}
	if c.Rejected {
		a.Status = ActionRejected
		if a.Error == nil {
			a.Error = RejectedError("")
		}
	}
	return a
}

// NeedsApproval reports whether a call of tool name by the assistant
// waits for approval: its require_approval names the tool, or is ["*"].
// Client tools never do (the client runs them).
func (a *Assistant) NeedsApproval(name string) bool {
	for _, n := range a.RequireApproval {
		if n == "*" || n == name {
			return true
		}
	}
	return false
}
