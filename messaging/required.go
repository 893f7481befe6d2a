package messaging

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// A turn that stops at requires_action (attempt.go, ending.requiresAction)
// waits for its client's answer: the outputs of its client tool calls
// (SubmitToolOutputs) or the approval of its calls (Approve). The answer
// resumes the turn as its next attempt, in one conditional store write
// (ams.TurnRequiredStore.ResumeTurn), so that of two answers exactly one
// resumes it, on any process; the engine then goes on from the turn's
// calls with the answers appended. A turn that waits longer than
// RequiredActionTimeout fails with required_action_expired
// (ExpireRequiredActions, run by RunExpiry in every `ams serve`).

// MaxToolOutput bounds one tool output, in bytes (as a message).
const MaxToolOutput = 32 * 1024

// MaxApprovalReason bounds the reason of a rejection, in bytes.
const MaxApprovalReason = 1000

// ToolOutput is one client tool call's output.
type ToolOutput struct {
	ToolCallID string `json:"tool_call_id"`
	Output     string `json:"output"`
}

// Approval is the decision on one tool call awaiting approval.
type Approval struct {
	ToolCallID string `json:"tool_call_id"`
	Approved   bool   `json:"approved"`
	Reason     string `json:"reason"`
}

// turnOptions returns the options an engine runs a turn of assistant a
// with: the request's, with the assistant's client tools first.
func turnOptions(a *ams.Assistant, o *ams.TurnOptions) *ams.TurnOptions {
	if a == nil || len(a.Tools) == 0 {
		return o
	}
	out := &ams.TurnOptions{}
	if o != nil {
		c := *o
		out = &c
	}
	out.Tools = append(slices.Clone(a.Tools), out.Tools...)
	return out
}

// needsApproval returns what an engine asks of a call of assistant a's
// tools: nil when none needs approval.
func needsApproval(a *ams.Assistant) func(string) bool {
	if a == nil || len(a.RequireApproval) == 0 {
		return nil
	}
	return a.NeedsApproval
}

// withToolboxApproval adds to assistant the approvals a toolbox asks for
// itself (an MCP integration's require_approval, world's toolbox): a call
// needs approval when either says so.
func withToolboxApproval(assistant func(string) bool, tb ams.Toolbox) func(string) bool {
	n, ok := tb.(interface{ NeedsApproval(string) bool })
	if !ok {
		return assistant
	}
	return func(name string) bool {
		return (assistant != nil && assistant(name)) || n.NeedsApproval(name)
	}
}

// waiting returns the user's turn when it waits for an answer of type
// typ: 409 turn_not_waiting otherwise.
func (s *Service) waiting(ctx context.Context, userID, turnID, typ string) (*ams.Turn, error) {
	t, err := s.Store.FindTurn(ctx, userID, turnID)
	if err != nil {
		return nil, err
	}
	if t.Status != ams.TurnRequiresAction || t.RequiredAction == nil {
		return nil, ams.Errorf(ams.ECONFLICT, "turn_not_waiting", "Turn '%s' is not waiting for %s (its status is %s).", t.ID, what(typ), t.Status)
	}
	if t.RequiredAction.Type != typ {
		return nil, ams.Errorf(ams.ECONFLICT, "turn_not_waiting", "Turn '%s' waits for %s, not %s.", t.ID, what(t.RequiredAction.Type), what(typ))
	}
	return t, nil
}

func what(typ string) string {
	if typ == ams.RequiredApproveToolCalls {
		return "approvals (POST /v1/turns/{id}/approvals)"
	}
	return "tool outputs (POST /v1/turns/{id}/tool_outputs)"
}

// answered checks that ids answer every pending call of t once: 400
// naming param otherwise (an unknown id, one already answered, one given
// twice, or a call left out).
func answered(t *ams.Turn, param string, ids []string) error {
	if len(ids) == 0 {
		return ams.ParamError("parameter_missing", param, "Missing required parameter '%s': answer every call of the turn's required_action.", param)
	}
	pending := map[string]bool{}
	for _, c := range t.RequiredAction.ToolCalls {
		pending[c.ID] = true
	}
	seen := map[string]bool{}
	for i, id := range ids {
		p := fmt.Sprintf("%s[%d].tool_call_id", param, i)
		switch {
		case id == "":
			return ams.ParamError("parameter_missing", p, "Missing required parameter '%s'.", p)
		case slices.ContainsFunc(t.Calls, func(c *ams.ToolCallRecord) bool { return c.ID == id && !c.Pending }):
			return ams.ParamError("parameter_invalid", p, "Tool call '%s' was already answered.", ams.Clip(id))
		case !pending[id]:
			return ams.ParamError("parameter_invalid", p, "Turn '%s' does not wait for tool call '%s'.", t.ID, ams.Clip(id))
		case seen[id]:
			return ams.ParamError("parameter_invalid", p, "Tool call '%s' is answered twice.", id)
		}
		seen[id] = true
	}
	for _, c := range t.RequiredAction.ToolCalls {
		if !seen[c.ID] {
			return ams.ParamError("parameter_invalid", param, "Tool call '%s' (%s) has no answer: answer every call of the turn's required_action at once.", c.ID, c.Name)
		}
	}
	return nil
}

// SubmitToolOutputs answers the client tool calls a turn waits for and
// resumes it. Errors (nothing stored): 400 naming tool_outputs (a call
// left out, unknown, answered before or twice; an output over
// MaxToolOutput bytes or not UTF-8); 409 turn_not_waiting when the turn
// does not wait for tool outputs (it waits for approvals, or for
// nothing). The returned run is the resumed attempt.
func (s *Service) SubmitToolOutputs(ctx context.Context, userID, turnID, tz string, outputs []ToolOutput) (*Run, error) {
	t, err := s.waiting(ctx, userID, turnID, ams.RequiredSubmitToolOutputs)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(outputs))
	byID := map[string]string{}
	for i, o := range outputs {
		ids[i] = o.ToolCallID
		p := fmt.Sprintf("tool_outputs[%d].output", i)
		if len(o.Output) > MaxToolOutput {
			return nil, ams.ParamError("parameter_invalid", p, "'%s' is longer than %d bytes.", p, MaxToolOutput)
		}
		if !utf8.ValidString(o.Output) {
			return nil, ams.ParamError("parameter_invalid", p, "'%s' must be valid UTF-8 text.", p)
		}
		byID[o.ToolCallID] = o.Output
	}
	if err := answered(t, "tool_outputs", ids); err != nil {
		return nil, err
	}
	// A pending call (made with calls that needed approval first) is
	// answered where the engine made it; the others follow the turn's
	// calls.
	var calls []*ams.ToolCallRecord
	inPlace := map[string]bool{}
	for _, c := range t.Calls {
		if out, ok := byID[c.ID]; ok && c.Pending {
			rec := *c
			rec.Pending, rec.Output = false, out
			c, inPlace[c.ID] = &rec, true
		}
		calls = append(calls, c)
	}
	for _, c := range t.RequiredAction.ToolCalls {
		if !inPlace[c.ID] {
			calls = append(calls, &ams.ToolCallRecord{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Output: byID[c.ID]})
		}
	}
	return s.resumeWith(ctx, t, tz, calls, nil, nil)
}

// Approve decides on the tool calls a turn waits to have approved and
// resumes it: approved calls run through the assistant's toolbox (their
// actions carry the turn's id), rejected ones are recorded as actions of
// status rejected and run nothing; the engine is told both. Errors
// (nothing stored): 400 naming approvals; 409 turn_not_waiting when the
// turn does not wait for approvals.
func (s *Service) Approve(ctx context.Context, userID, turnID, tz string, approvals []Approval) (*Run, error) {
	t, err := s.waiting(ctx, userID, turnID, ams.RequiredApproveToolCalls)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(approvals))
	byID := map[string]Approval{}
	for i, a := range approvals {
		ids[i] = a.ToolCallID
		p := fmt.Sprintf("approvals[%d].reason", i)
		if len(a.Reason) > MaxApprovalReason || !utf8.ValidString(a.Reason) {
			return nil, ams.ParamError("parameter_invalid", p, "'%s' must be UTF-8 text of at most %d bytes.", p, MaxApprovalReason)
		}
		byID[a.ToolCallID] = a
	}
	if err := answered(t, "approvals", ids); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	calls := slices.Clone(t.Calls)
	var rejected []*ams.Action
	var approved []*ams.ToolCallRecord
	for j, c := range t.RequiredAction.ToolCalls {
		rec := &ams.ToolCallRecord{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
		if d := byID[c.ID]; !d.Approved {
			act := &ams.Action{ID: ams.NewID(ams.PrefixAction), Object: "action", UserID: t.UserID, AssistantID: t.AssistantID,
				ConversationID: t.ConversationID, Type: c.Name, Input: c.Arguments, Status: ams.ActionRejected,
				Error: ams.RejectedError(d.Reason), TurnID: t.ID, CallSeq: callSeq(t, j), CreatedAt: now}
			if len(act.Input) == 0 || !json.Valid(act.Input) {
				act.Input = json.RawMessage("{}")
			}
			rec.Rejected, rec.ActionID, rec.Output = true, act.ID, ams.CallOutput(act)
			rejected = append(rejected, act)
		} else {
			approved = append(approved, rec)
		}
		calls = append(calls, rec)
	}
	return s.resumeWith(ctx, t, tz, calls, rejected, approved)
}

// callSeq is the call number of pending call j of turn t: after every
// number its attempts may have used (each used number is one of its
// calls).
func callSeq(t *ams.Turn, j int) int { return len(t.Calls) + j + 1 }

// resumeWith resumes waiting turn t with calls (rejected stored with
// it), runs the approved calls (records of calls, filled in) through the
// toolbox, and starts the engine's next attempt.
func (s *Service) resumeWith(ctx context.Context, t *ams.Turn, tz string, calls []*ams.ToolCallRecord, rejected []*ams.Action, approved []*ams.ToolCallRecord) (*Run, error) {
	a, err := s.Store.FindAssistant(ctx, t.UserID, t.AssistantID)
	if err != nil {
		return nil, err
	}
	engine, err := s.EngineFor(a)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	r := &ams.TurnResume{UserID: t.UserID, TurnID: t.ID, Attempt: t.Attempt, Type: t.RequiredAction.Type,
		Calls: calls, Rejected: rejected, Now: now, LeaseUntil: now.Add(s.lease())}
	if t.Background {
		// The wait for the client does not count against a background
		// turn's time: it has --background-turn-timeout from here.
		d := now.Add(s.backgroundTimeout())
		r.Deadline = &d
	}
	resumed, err := s.Store.ResumeTurn(ctx, r)
	if err != nil {
		return nil, err
	}
	if len(approved) > 0 {
		var tb ams.Toolbox
		if s.Tools != nil {
			tb = s.Tools(t.UserID, a, t.ConversationID)
		}
		base := len(t.Calls)
		for _, rec := range approved {
			seq := base + 1 + slices.IndexFunc(t.RequiredAction.ToolCalls, func(c *ams.ToolCallRequest) bool { return c.ID == rec.ID })
			s.runApproved(context.WithoutCancel(ctx), tb, t, seq, rec)
		}
	}
	resumed.Calls = calls
	return s.resume(ctx, a, engine, resumed, tz, resumed.Stream, true)
}

// runApproved runs an approved call through the toolbox as call seq of
// turn t, and fills in its record.
func (s *Service) runApproved(ctx context.Context, tb ams.Toolbox, t *ams.Turn, seq int, rec *ams.ToolCallRecord) {
	fail := func(code, msg string) {
		rec.Output = ams.CallOutput(&ams.Action{Status: ams.ActionFailed, Error: &ams.ActionError{Type: ams.TypeAPI, Code: code, Message: msg}})
	}
	if tb == nil {
		fail("tool_not_available", "No tools are available in this conversation.")
		return
	}
	act, err := s.Store.FindTurnCall(ctx, t.UserID, t.ID, seq)
	if err != nil || act.Type != rec.Name {
		act, err = tb.Run(ams.WithToolCall(ctx, ams.ToolCall{TurnID: t.ID, Seq: seq}), rec.Name, rec.Arguments)
	}
	if err != nil || act == nil {
		s.logger().Warn("run approved tool call", "turn", t.ID, "tool", rec.Name, "err", err)
		fail("tool_error", "The tool could not run.")
		return
	}
	rec.ActionID, rec.Output = act.ID, ams.CallOutput(act)
}

// ExpireRequiredActions fails the turns whose required action expired
// (code required_action_expired, stop reason error), each with its
// turn.failed event and stream events, and returns how many it failed.
func (s *Service) ExpireRequiredActions(ctx context.Context) (int, error) {
	now := s.Clock.Now()
	due, err := s.Store.DueRequiredActions(ctx, now, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range due {
		end := *t
		end.Status, end.StopReason, end.UpdatedAt, end.CompletedAt, end.RequiredAction = ams.TurnFailed, ams.StopError, now, &now, nil
		end.Error = &ams.ActionError{Type: ams.TypeInvalidRequest, Code: "required_action_expired",
			Message: fmt.Sprintf("The turn waited for its required action longer than %s (--required-action-timeout).", s.requiredActionTimeout())}
		last, err := s.lastEventSeq(ctx, t.ID)
		if err != nil {
			return n, err
		}
		errData, _ := json.Marshal(ErrorData{Error: end.Error})
		turnData, _ := json.Marshal(&end)
		stream := []*ams.TurnEvent{{TurnID: t.ID, Seq: last + 1, Type: EventError, Data: errData, CreatedAt: now},
			{TurnID: t.ID, Seq: last + 2, Type: ams.EventTurnFailed, Data: turnData, CreatedAt: now}}
		var events []*ams.Event
		if ev := ams.TurnLifecycleEvent(&end, now); ev != nil {
			events = append(events, ev)
		}
		ok, err := s.Store.ExpireRequiredAction(ctx, &end, now, events, stream...)
		if err != nil {
			return n, err
		}
		if ok {
			n++
			s.wakeWaiters()
			go s.advance(context.WithoutCancel(ctx), t.UserID, t.ConversationID)
		}
	}
	return n, nil
}

// cancelWaiting cancels turn t, which waits in requires_action: it
// ends cancelled (stop reason cancelled) with its turn.cancelled event,
// in the store's conditional write of an ended wait (the wait's own
// expiry time passed as now, so that only this wait is ended: an answer
// that resumed the turn first wins, and the turn is returned as it is).
func (s *Service) cancelWaiting(ctx context.Context, t *ams.Turn) (*ams.Turn, error) {
	now := s.Clock.Now()
	end := *t
	end.Status, end.StopReason, end.UpdatedAt, end.CompletedAt, end.RequiredAction = ams.TurnCancelled, ams.StopCancelled, now, &now, nil
	end.Error = apiError(ams.Errorf(ams.ECONFLICT, "turn_cancelled", "The turn was cancelled."))
	last, err := s.lastEventSeq(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	errData, _ := json.Marshal(ErrorData{Error: end.Error})
	turnData, _ := json.Marshal(&end)
	stream := []*ams.TurnEvent{{TurnID: t.ID, Seq: last + 1, Type: EventError, Data: errData, CreatedAt: now},
		{TurnID: t.ID, Seq: last + 2, Type: ams.EventTurnCancelled, Data: turnData, CreatedAt: now}}
	var events []*ams.Event
	if ev := ams.TurnLifecycleEvent(&end, now); ev != nil {
		events = append(events, ev)
	}
	ok, err := s.Store.ExpireRequiredAction(ctx, &end, t.RequiredAction.ExpiresAt, events, stream...)
	if err != nil {
		return nil, err
	}
	if ok {
		s.wakeWaiters()
		go s.advance(context.WithoutCancel(ctx), t.UserID, t.ConversationID)
	}
	return s.Store.FindTurn(ctx, t.UserID, t.ID)
}

// RunExpiry fails expired required actions until ctx is done, every
// RunnerInterval (1 s when unset).
func (s *Service) RunExpiry(ctx context.Context) error {
	every := s.RunnerInterval
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if _, err := s.ExpireRequiredActions(ctx); err != nil && ctx.Err() == nil {
			s.logger().Error("expire required actions", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
