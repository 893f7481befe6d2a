package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// RequiredAction is what a turn in TurnRequiresAction waits for: the
// outputs of its client tool calls ("submit_tool_outputs", answered with
// SubmitToolOutputs) or the approval of tool calls ("approve_tool_calls",
// answered with ApproveToolCalls), by ExpiresAt.
type RequiredAction struct {
	Type      string              `json:"type"`
	ToolCalls []RequestedToolCall `json:"tool_calls"`
	ExpiresAt time.Time           `json:"expires_at"`
}

// Required action types.
const (
	RequiredSubmitToolOutputs = "submit_tool_outputs"
	RequiredApproveToolCalls  = "approve_tool_calls"
)

// RequestedToolCall is one tool call a turn waits to have answered.
type RequestedToolCall struct {
	ID        string          `json:"id"` // "call_..."
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // a JSON object
}

// ClientTool is a function tool the client runs itself.
type ClientTool struct {
	Type        string          `json:"type"` // "function" (set by the client when empty)
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON Schema object
}

// MarshalJSON writes Type "function" when it is empty.
func (t ClientTool) MarshalJSON() ([]byte, error) {
	type plain ClientTool
	if t.Type == "" {
		t.Type = "function"
	}
	return json.Marshal(plain(t))
}

// ToolOutput is the output of one client tool call.
type ToolOutput struct {
	ToolCallID string `json:"tool_call_id"`
	Output     string `json:"output"`
}

// Approval is the decision on one tool call that waits for approval.
type Approval struct {
	ToolCallID string `json:"tool_call_id"`
	Approved   bool   `json:"approved"`
	Reason     string `json:"reason,omitempty"`
}

// SubmitToolOutputs answers the client tool calls a turn waits for, one
// output per call, and returns the turn once its resumed attempt ended
// or stopped again (running, for a background turn).
func (c *Client) SubmitToolOutputs(ctx context.Context, turnID string, outputs []ToolOutput) (*Turn, error) {
	if turnID == "" {
		return nil, errors.New("ams: SubmitToolOutputs: empty turn id")
	}
	return post[Turn](ctx, c, "/turns/"+turnID+"/tool_outputs", map[string]any{"tool_outputs": outputs}, "")
}

// ApproveToolCalls decides on the tool calls a turn waits to have
// approved, one decision per call, and returns the turn as
// SubmitToolOutputs does.
func (c *Client) ApproveToolCalls(ctx context.Context, turnID string, approvals []Approval) (*Turn, error) {
	if turnID == "" {
		return nil, errors.New("ams: ApproveToolCalls: empty turn id")
	}
	return post[Turn](ctx, c, "/turns/"+turnID+"/approvals", map[string]any{"approvals": approvals}, "")
}

// RunTurnParams is a message to send with per-turn options.
type RunTurnParams struct {
	AssistantID    string // required
	Message        string // required
	ConversationID string // empty starts a conversation
	// Tools are client tools for this turn (added to the assistant's);
	// ToolChoice is "auto", "none", "required" or a tool's name.
	Tools      []ClientTool
	ToolChoice string
	// Instructions, when set, replace the assistant's for this turn.
	Instructions    *string
	MaxOutputTokens int // 0: no limit
	// Approve decides on a call that waits for approval; nil leaves such
	// a turn waiting (RunTurn returns it).
	Approve func(ctx context.Context, call RequestedToolCall) (approved bool, reason string)
	// IdempotencyKey of the send; empty lets the client generate one.
	IdempotencyKey string
}

// ToolHandler runs a client tool call and returns its output.
type ToolHandler func(ctx context.Context, call RequestedToolCall) (string, error)

// RunTurn sends a message and runs its turn to the end: each time the
// turn stops for client tool outputs, handle is called for every call
// and the outputs are submitted; calls that wait for approval are
// decided by p.Approve. It returns the turn as it ended and, when it
// completed, its reply. An error of handle stops RunTurn (the turn waits
// until its required action expires).
func (c *Client) RunTurn(ctx context.Context, p RunTurnParams, handle ToolHandler) (*Turn, *Message, error) {
	body := map[string]any{"assistant_id": p.AssistantID, "message": p.Message}
	if p.ConversationID != "" {
		body["conversation_id"] = p.ConversationID
	}
	if len(p.Tools) > 0 {
		body["tools"] = p.Tools
	}
	switch p.ToolChoice {
	case "":
	case "auto", "none", "required":
		body["tool_choice"] = p.ToolChoice
	default:
		body["tool_choice"] = map[string]string{"type": "function", "name": p.ToolChoice}
	}
	if p.Instructions != nil {
		body["instructions"] = *p.Instructions
	}
	if p.MaxOutputTokens > 0 {
		body["max_output_tokens"] = p.MaxOutputTokens
	}
	var raw json.RawMessage
	if err := c.Request(ctx, http.MethodPost, "/messages", body, &raw, WithIdempotencyKey(p.IdempotencyKey)); err != nil {
		return nil, nil, err
	}
	var kind struct {
		Object string `json:"object"`
		TurnID string `json:"turn_id"`
	}
	if err := json.Unmarshal(raw, &kind); err != nil {
		return nil, nil, fmt.Errorf("ams: RunTurn: decode the answer: %w", err)
	}
	var t *Turn
	if kind.Object == "message" {
		var m Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, nil, fmt.Errorf("ams: RunTurn: decode the reply: %w", err)
		}
		// The turn of the reply: the newest of its conversation.
		page, err := c.ListTurns(ctx, &ListTurnsParams{ConversationID: m.ConversationID, ListParams: ListParams{Limit: 1}})
		if err != nil {
			return nil, &m, err
		}
		if len(page.Data) > 0 {
			t = &page.Data[0]
		}
		return t, &m, nil
	}
	t = new(Turn)
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, nil, fmt.Errorf("ams: RunTurn: decode the turn: %w", err)
	}
	for t.Status == TurnRequiresAction && t.RequiredAction != nil {
		var err error
		switch t.RequiredAction.Type {
		case RequiredSubmitToolOutputs:
			outs := make([]ToolOutput, 0, len(t.RequiredAction.ToolCalls))
			for _, call := range t.RequiredAction.ToolCalls {
				out, herr := handle(ctx, call)
				if herr != nil {
					return t, nil, fmt.Errorf("ams: RunTurn: tool %s: %w", call.Name, herr)
				}
				outs = append(outs, ToolOutput{ToolCallID: call.ID, Output: out})
			}
			t, err = c.SubmitToolOutputs(ctx, t.ID, outs)
		case RequiredApproveToolCalls:
			if p.Approve == nil {
				return t, nil, nil
			}
			var ds []Approval
			for _, call := range t.RequiredAction.ToolCalls {
				ok, why := p.Approve(ctx, call)
				ds = append(ds, Approval{ToolCallID: call.ID, Approved: ok, Reason: why})
			}
			t, err = c.ApproveToolCalls(ctx, t.ID, ds)
		default:
			return t, nil, nil
		}
		if err != nil {
			return t, nil, err
		}
	}
	if t.Status != TurnCompleted || t.ReplyMessageID == "" {
		return t, nil, nil
	}
	m, err := c.GetMessage(ctx, t.ReplyMessageID)
	return t, m, err
}
