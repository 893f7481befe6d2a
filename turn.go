package ams

import (
	"context"
	"encoding/json"
	"time"
)

// Turn statuses. A turn is running from the moment its inbound message is
// stored until its reply is stored (completed), the engine fails
// (failed), or someone cancels it (cancelled). A failed or interrupted
// turn may be resumed by a retry with the same Idempotency-Key, which
// makes it running again.
//
// A turn is queued while an earlier unfinished turn of its conversation
// holds it back (multitask_strategy "enqueue"), and requires_action
// while it waits for client tool outputs or approvals (RequiredAction).
const (
	TurnQueued         = "queued"
	TurnRunning        = "running"
	TurnRequiresAction = "requires_action"
	TurnCompleted      = "completed"
	TurnFailed         = "failed"
	TurnCancelled      = "cancelled"
)

// Multitask strategies: what a send does when its conversation already
// has an unfinished turn (DESIGN.md, "Turns an integrator builds on").
const (
	MultitaskEnqueue   = "enqueue"
	MultitaskReject    = "reject"
	MultitaskInterrupt = "interrupt"
)

// Stop reasons of a turn (Turn.StopReason).
const (
	StopEndTurn         = "end_turn"
	StopMaxOutputTokens = "max_output_tokens"
	StopRequiresAction  = "requires_action"
	StopCancelled       = "cancelled"
	StopInterrupted     = "interrupted"
	StopError           = "error"
)

// Required action types (RequiredAction.Type).
const (
	RequiredSubmitToolOutputs = "submit_tool_outputs"
	RequiredApproveToolCalls  = "approve_tool_calls"
)

// RequiredAction is what a turn in status requires_action waits for: the
// outputs of client tool calls, or approval of tool calls.
type RequiredAction struct {
	Type      string             `json:"type"`
	ToolCalls []*ToolCallRequest `json:"tool_calls"`
	ExpiresAt time.Time          `json:"expires_at"`
}

// ToolCallRequest is one tool call an engine asks for: its id (call_…),
// the tool's name, and its arguments (a JSON object).
type ToolCallRequest struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolCallRecord is one tool call of a turn with its outcome, in the
// order the engine made them: what a resumed engine is given
// (EngineRequest.Calls) to go on from. Output is the text the model is
// told (a tool's result as JSON, a client's output, or why a call was
// rejected); Rejected marks a call the user did not approve.
type ToolCallRecord struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Output    string          `json:"output"`
	Rejected  bool            `json:"rejected,omitempty"`
	// ActionID is the action that recorded the call ("" for a client
	// tool's call).
	ActionID string `json:"action_id,omitempty"`
	// Pending marks a client tool's call made in the same model round as
	// calls that need approval: the turn asks for the approvals first,
	// then for this call's output (ams.PendingCalls). It has no Output
	// until then, and engines do not replay it.
	Pending bool `json:"pending,omitempty"`
}

// Usage is a turn's token count (summed over its engine calls).
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// Add returns u plus v, with TotalTokens their sum of input and output.
func (u Usage) Add(v Usage) Usage {
	in, out := u.InputTokens+v.InputTokens, u.OutputTokens+v.OutputTokens
	return Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
}

// TurnOptions are the per-request options of a turn (POST /v1/messages),
// stored with it so that a queued, resumed or taken-over turn runs with
// them.
type TurnOptions struct {
	Instructions    *string         `json:"instructions,omitempty"`
	Tools           []*ClientTool   `json:"tools,omitempty"`
	ToolChoice      *ToolChoice     `json:"tool_choice,omitempty"`
	MaxOutputTokens int             `json:"max_output_tokens,omitempty"`
	ResponseFormat  *ResponseFormat `json:"response_format,omitempty"`
}

// ClientTool is a function tool the client runs itself:
// {"type": "function", "name", "description"?, "parameters"?}.
type ClientTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToolChoice is "auto" (the default), "none", "required", or one named
// function ({"type": "function", "name"}): Mode is one of the three words
// or "function" with Name set.
type ToolChoice struct {
	Mode string
	Name string
}

// ResponseFormat is {"type": "text"} or {"type": "json_schema",
// "json_schema": {"name", "schema"}}.
type ResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *JSONSchemaSpec `json:"json_schema,omitempty"`
}

// JSONSchemaSpec names a JSON Schema a structured reply must follow.
type JSONSchemaSpec struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict *bool           `json:"strict,omitempty"`
}

// Turn is one POST /v1/messages: the inbound message, the tool calls the
// engine made (actions carrying the turn's id), and the reply. The effects
// of its tool calls stay visible whatever becomes of the turn: a failed or
// cancelled turn lists them (docs/architecture.md, "Turns").
type Turn struct {
	ID               string `json:"id"`
	Object           string `json:"object"` // "turn"
	UserID           string `json:"-"`
	AssistantID      string `json:"assistant_id"`
	ConversationID   string `json:"conversation_id"`
	Status           string `json:"status"`
	InboundMessageID string `json:"inbound_message_id"`
	ReplyMessageID   string `json:"reply_message_id"` // "" until completed
	// Error is the API error body of a failed or cancelled turn.
	Error *ActionError `json:"error"`
	// CancelRequested is set by a cancel that the process running the
	// turn has not acted on yet.
	CancelRequested bool `json:"cancel_requested"`
	// IdempotencyKey is the Idempotency-Key of the request that started
	// the turn ("" without one); RequestHash identifies what it asked.
	IdempotencyKey string `json:"-"`
	RequestHash    string `json:"-"`
	// LeaseUntil is when the process running the turn must have renewed
	// its lease; a running turn whose lease has passed was abandoned.
	LeaseUntil time.Time `json:"-"`
	// Attempt counts the runs of the turn (1, then one more per resume):
	// a process may renew or finish the turn only while the attempt it
	// runs is the turn's, so a process that lost its lease cannot
	// overwrite the attempt that took over.
	Attempt int `json:"-"`
	// Request is the API request that started or resumed the turn in this
	// process (not stored): the events of the turn's changes name it.
	Request *EventRequest `json:"-"`
	// Background is set for a turn started with background: true; it
	// runs on the server and must end by Deadline.
	Background        bool       `json:"background"`
	Deadline          *time.Time `json:"-"`
	MultitaskStrategy string     `json:"multitask_strategy"`
	// Options are the request's per-turn options; QueuedMessage is the
	// inbound message of a queued turn, stored into the conversation
	// when the turn starts (both stored in the options column).
	Options       *TurnOptions `json:"-"`
	QueuedMessage *Message     `json:"-"`
	// Stream is set for a turn sent with stream: true (stored with its
	// options): whichever process starts it later (a queued turn, one
	// taken over, one resumed by its client's answer) asks its engine to
	// stream, so that its stream carries the reply's deltas as they are
	// produced.
	Stream bool `json:"-"`
	// RequiredAction is what a turn in status requires_action waits for.
	RequiredAction *RequiredAction `json:"required_action"`
	// Calls are the turn's tool calls so far with their outcomes.
	Calls      []*ToolCallRecord `json:"-"`
	Usage      Usage             `json:"usage"`
	StopReason string            `json:"stop_reason"` // "" until it ends
	// ActionIDs are the actions the turn's tool calls recorded, in order.
	ActionIDs   []string   `json:"action_ids"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at"` // when it ended (completed, failed or cancelled)
}

// Finished reports whether the turn has ended for good (completed or
// cancelled) or failed.
func (t *Turn) Finished() bool {
	return t.Status == TurnCompleted || t.Status == TurnFailed || t.Status == TurnCancelled
}

// TurnEvent is one event of a turn's stream, numbered from 1 in the order
// it was produced. Data is the event's JSON.
type TurnEvent struct {
	TurnID    string
	Seq       int64
	Type      string
	Data      json.RawMessage
	CreatedAt time.Time
}

// TurnStore keeps turns and their stream events. The inbound message and
// the turn are stored together by SaveExchange (Exchange.Turn).
type TurnStore interface {
	// FindTurn returns the user's turn; ENOTFOUND otherwise.
	FindTurn(ctx context.Context, userID, id string) (*Turn, error)
	// FindTurnByMessage returns the turn whose inbound message is
	// messageID; ENOTFOUND otherwise.
	FindTurnByMessage(ctx context.Context, userID, messageID string) (*Turn, error)
	// FindTurnByKey returns the user's turn started with idempotency key
	// key at or after since; ENOTFOUND otherwise.
	FindTurnByKey(ctx context.Context, userID, key string, since time.Time) (*Turn, error)
	// ListTurns returns a page of the user's turns, of one conversation
	// when conversationID is set.
	ListTurns(ctx context.Context, userID, conversationID string, p ListParams) (*Page[*Turn], error)
	// ClaimTurn makes a failed turn, or a running one whose lease ended
	// before now, running again (its next attempt) with a lease until
	// leaseUntil, and returns it. ECONFLICT (code turn_in_progress) when the turn runs
	// under a live lease; ECONFLICT (code turn_finished) when it completed
	// or was cancelled.
	ClaimTurn(ctx context.Context, userID, id string, now, leaseUntil time.Time) (*Turn, error)
	// RenewTurn extends the lease of a running turn's attempt and reports
	// whether a cancel was requested; ECONFLICT when the turn is no longer
	// running that attempt.
	RenewTurn(ctx context.Context, userID, id string, attempt int, leaseUntil time.Time) (cancelRequested bool, err error)
	// RequestTurnCancel marks a running turn cancel_requested and returns
	// it (unchanged when it has ended).
	RequestTurnCancel(ctx context.Context, userID, id string, now time.Time) (*Turn, error)
	// FinishTurn ends a running turn's attempt t.Attempt: t's status,
	// error, reply id and times are written, and, when reply is set, the
	// reply message (counted into its conversation) with events, and the
	// turn's stream events not stored yet (its last among them), all in
	// one transaction. ECONFLICT when the turn no longer runs that attempt.
	FinishTurn(ctx context.Context, t *Turn, reply *Message, events []*Event, stream ...*TurnEvent) error
	// AppendTurnEvents stores events of a turn (their Seq set by the
	// caller, increasing).
	AppendTurnEvents(ctx context.Context, events []*TurnEvent) error
	// TurnEvents returns the turn's events with Seq > after, in order, at
	// most limit.
	TurnEvents(ctx context.Context, turnID string, after int64, limit int) ([]*TurnEvent, error)
	// FindTurnCall returns the action of the turn's call number seq;
	// ENOTFOUND when that call has not committed.
	FindTurnCall(ctx context.Context, userID, turnID string, seq int) (*Action, error)
	// AdmitTurn stores the start of x.Turn in an existing conversation
	// (x.NewConversation nil; with one it is SaveExchange), deciding in
	// one transaction by x.Turn.MultitaskStrategy what becomes of it when
	// the conversation has unfinished turns: enqueue stores it queued
	// (its inbound message kept in the turn until it starts), reject
	// stores nothing (ECONFLICT conversation_busy), interrupt cancels
	// them (stop_reason interrupted, turn.cancelled each) and stores it
	// running. x.Turn.Status tells what was stored; the interrupted turns
	// are returned.
	AdmitTurn(ctx context.Context, x *Exchange) (interrupted []*Turn, err error)
	// StartQueuedTurn makes a queued turn that is the first unfinished
	// turn of its conversation running (lease until leaseUntil, deadline
	// when set) and stores its inbound message into the conversation at
	// now, with its message.created event, in one transaction. ECONFLICT
	// turn_not_next otherwise; ENOTFOUND when it or its conversation is
	// gone.
	StartQueuedTurn(ctx context.Context, userID, id string, now, leaseUntil time.Time, deadline *time.Time) (*Turn, error)
	// RunnableTurns returns, across accounts, the running turns whose
	// lease ended before now and the queued turns first in their
	// conversation's queue: at most limit of each.
	RunnableTurns(ctx context.Context, now time.Time, limit int) ([]*Turn, error)
	// CancelQueuedTurn cancels a queued turn with its turn.cancelled
	// event and returns it; a turn that is not queued is returned
	// unchanged. ENOTFOUND when it is not the user's.
	CancelQueuedTurn(ctx context.Context, userID, id string, now time.Time) (*Turn, error)
	// NextTurn returns the first unfinished turn of a conversation;
	// ENOTFOUND when there is none.
	NextTurn(ctx context.Context, userID, conversationID string) (*Turn, error)
	// TokenTotals sums the usage of the user's turns created at or after
	// since.
	TokenTotals(ctx context.Context, userID string, since time.Time) (Usage, error)
}

// ToolCall names the turn and call number of a tool run, carried in the
// context given to Toolbox.Run: the action is stored with them, and a turn
// resumed after a failure finds its committed calls by them.
type ToolCall struct {
	TurnID string
	Seq    int
}

type toolCallKey struct{}

// WithToolCall returns ctx carrying c.
func WithToolCall(ctx context.Context, c ToolCall) context.Context {
	return context.WithValue(ctx, toolCallKey{}, c)
}

// ToolCallFrom returns the ToolCall ctx carries (zero: none).
func ToolCallFrom(ctx context.Context) ToolCall {
	c, _ := ctx.Value(toolCallKey{}).(ToolCall)
	return c
}

// MarshalJSON writes "auto", "none", "required", or {"type": "function",
// "name"}.
func (c ToolChoice) MarshalJSON() ([]byte, error) {
	if c.Mode == "function" {
		return json.Marshal(struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}{"function", c.Name})
	}
	if c.Mode == "" {
		return json.Marshal("auto")
	}
	return json.Marshal(c.Mode)
}

// UnmarshalJSON reads what MarshalJSON writes; it does not check the
// words (the service does, naming the parameter).
func (c *ToolChoice) UnmarshalJSON(b []byte) error {
	var mode string
	if err := json.Unmarshal(b, &mode); err == nil {
		*c = ToolChoice{Mode: mode}
		return nil
	}
	var f struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*c = ToolChoice{Mode: f.Type, Name: f.Name}
	return nil
}

// MarshalJSON implements json.Marshaler (expires_at as TimeFormat).
func (r RequiredAction) MarshalJSON() ([]byte, error) {
	type plain RequiredAction
	return json.Marshal(struct {
		plain
		ExpiresAt JSONTime `json:"expires_at"`
	}{plain(r), JSONTime(r.ExpiresAt)})
}
