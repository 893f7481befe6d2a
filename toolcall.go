package ams

import (
	"context"
	"encoding/json"
	"strings"
	"time"
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

// PendingCalls returns the calls of a turn that wait for their client's
// output (ToolCallRecord.Pending), in order: the client tool calls of a
// model round that also asked for approvals. Once the approvals are
// answered the turn stops at submit_tool_outputs for them, before its
// engine is asked again (messaging), so that no call of the round is
// lost.
func PendingCalls(calls []*ToolCallRecord) []*ToolCallRequest {
	var out []*ToolCallRequest
	for _, c := range calls {
		if c != nil && c.Pending {
			out = append(out, &ToolCallRequest{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
	}
	return out
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

// TurnResume is a turn waiting in requires_action made running again by
// the answer to its required action (POST /v1/turns/{id}/tool_outputs
// or /approvals): ResumeTurn writes it in one transaction.
type TurnResume struct {
	UserID, TurnID string
	// Attempt is the attempt that stopped at requires_action, and Type
	// its required action's type: the turn resumes only if it still
	// waits so, which fences two answers against each other.
	Attempt int
	Type    string
	// Calls are the turn's calls with the answered ones appended.
	Calls []*ToolCallRecord
	// Rejected are the actions recording the calls the user rejected
	// (status ActionRejected, with the turn's id and call numbers),
	// stored with the resume.
	Rejected []*Action
	// Now is when; the resumed attempt's lease runs until LeaseUntil.
	Now, LeaseUntil time.Time
	// Deadline, when set, is the background turn's new deadline.
	Deadline *time.Time
}

// TurnRequiredStore pauses and resumes turns around their required
// actions (DESIGN.md, "Turns an integrator builds on").
type TurnRequiredStore interface {
	// ResumeTurn makes the turn of r running again as its next attempt
	// (lease until r.LeaseUntil), its required action cleared and its
	// calls r.Calls, and stores r.Rejected, in one transaction. ECONFLICT
	// turn_not_waiting when the turn no longer waits in requires_action
	// of r.Type at attempt r.Attempt (another answer resumed it, it
	// expired or was cancelled); ENOTFOUND when it is not the user's.
	ResumeTurn(ctx context.Context, r *TurnResume) (*Turn, error)
	// DueRequiredActions returns, across accounts, turns in
	// requires_action whose action expired at or before now, oldest
	// first, at most limit (index turns_action_expiry).
	DueRequiredActions(ctx context.Context, now time.Time, limit int) ([]*Turn, error)
	// ExpireRequiredAction fails turn t (its status, error, stop reason
	// and times as given) if it still waits in requires_action with an
	// action expired at or before now, with events and stream events, in
	// one transaction; false when it no longer does (nothing stored).
	ExpireRequiredAction(ctx context.Context, t *Turn, now time.Time, events []*Event, stream ...*TurnEvent) (bool, error)
}
