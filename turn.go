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
const (
	TurnRunning   = "running"
	TurnCompleted = "completed"
	TurnFailed    = "failed"
	TurnCancelled = "cancelled"
)

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
	Request     *EventRequest `json:"-"`
	CreatedAt   time.Time     `json:"created_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
	CompletedAt *time.Time    `json:"completed_at"` // when it ended (completed, failed or cancelled)
}

// Finished reports whether the turn has ended for good (completed or
// cancelled) or failed.
func (t *Turn) Finished() bool { return t.Status != TurnRunning }

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
