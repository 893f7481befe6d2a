package ams

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// Assistant is one of a user's AI assistants.
type Assistant struct {
	ID           string `json:"id"`
	Object       string `json:"object"` // "assistant"
	UserID       string `json:"-"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Instructions string `json:"instructions"`
	Model        string `json:"model"` // chooses the engine; "builtin" is the embedded one
	// Tools are client function tools every turn of the assistant has
	// (a request's are added); RequireApproval names the built-in or
	// integration tools whose calls wait for approval (["*"]: all);
	// MultitaskStrategy is the default of a send to a busy conversation.
	Tools             []*ClientTool `json:"tools"`
	RequireApproval   []string      `json:"require_approval"`
	MultitaskStrategy string        `json:"multitask_strategy"`
	Metadata          Metadata      `json:"metadata"`
	CreatedAt         time.Time     `json:"created_at"`
	UpdatedAt         time.Time     `json:"updated_at"`
}

// ModelBuiltin is the model name of the built-in engine, the default.
const ModelBuiltin = "builtin"

// MaxModelName is the longest model name accepted.
const MaxModelName = 100

// ValidModelName reports whether m is a plausible model name: 1 to
// MaxModelName letters, digits and . _ : / - ("builtin", "gpt-4o-mini",
// "llama3.1:8b"). Whether a server runs it is decided when a message is
// sent.
func ValidModelName(m string) bool {
	return m != "" && len(m) <= MaxModelName && strings.IndexFunc(m, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:/-", c))
	}) < 0
}

// Conversation is a thread of messages between a user's program and one
// assistant.
type Conversation struct {
	ID          string `json:"id"`
	Object      string `json:"object"` // "conversation"
	UserID      string `json:"-"`
	AssistantID string `json:"assistant_id"`
	// Title is given on POST /v1/conversations (or PATCH); a conversation
	// started by POST /v1/messages takes the start of its first message.
	Title         string    `json:"title"`
	MessageCount  int       `json:"message_count"`
	LastMessageAt time.Time `json:"last_message_at"`
	Metadata      Metadata  `json:"metadata"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Message directions.
const (
	DirectionInbound  = "inbound"  // from the user's program to the assistant
	DirectionOutbound = "outbound" // from the assistant
)

// Message is one message of a conversation.
type Message struct {
	ID             string    `json:"id"`
	Object         string    `json:"object"` // "message"
	UserID         string    `json:"-"`
	AssistantID    string    `json:"assistant_id"`
	ConversationID string    `json:"conversation_id"`
	Direction      string    `json:"direction"`
	Content        string    `json:"content"`
	Metadata       Metadata  `json:"metadata"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// MaxMessageLength is the longest message text accepted, in bytes.
const MaxMessageLength = 32 * 1024

// Reply is what an engine answers to a conversation: the text, and the
// actions it ran on the way (already stored, each with its own events).
type Reply struct {
	Content string
	Actions []*Action
	// Usage is the tokens the engine's model calls took (the built-in
	// engine counts words).
	Usage Usage
	// StopReason is why the engine stopped: StopEndTurn,
	// StopMaxOutputTokens, or StopRequiresAction with RequiredAction set
	// ("" is read as StopEndTurn).
	StopReason string
	// RequiredAction, when set, stops the turn at requires_action: the
	// calls of client tools to be answered with outputs, or of tools
	// that need approval before they run (its ExpiresAt is set by the
	// turn, not the engine). Content is then empty.
	RequiredAction *RequiredAction
	// Calls are all the turn's tool calls with their outcomes, those of
	// EngineRequest.Calls first, then the ones made in this reply; the
	// turn stores them so that a resumed engine goes on from there.
	Calls []*ToolCallRecord
}

// EngineRequest is one turn for an engine to answer.
type EngineRequest struct {
	Assistant *Assistant
	// History is the conversation so far, oldest first, ending with the
	// inbound message to answer.
	History []*Message
	// Now is the service clock's time; Location is the account's time
	// zone, in which "tomorrow at 9" is read.
	Now      time.Time
	Location *time.Location
	// Tools runs the assistant's tools; nil when the engine may not act.
	Tools Toolbox
	// Stream, when set, receives the reply's text as it is produced; the
	// pieces put together are Reply.Content. An error from it (the client
	// went away) ends the turn with that error.
	Stream func(delta string) error
	// Options are the request's per-turn options (instructions, client
	// tools, tool_choice, max_output_tokens, response_format); nil when
	// there are none. An engine that cannot honour one is refused before
	// the turn is stored (see EngineChecker).
	Options *TurnOptions
	// Calls are the turn's earlier tool calls with their outcomes (client
	// outputs, approved calls' results, rejections): an engine resumed
	// after requires_action goes on from them instead of calling again.
	Calls []*ToolCallRecord
	// NeedsApproval reports whether a call of tool name must be approved
	// before it runs; nil means none does. The engine stops with a
	// RequiredAction of type approve_tool_calls instead of running it.
	NeedsApproval func(name string) bool
}

// EngineChecker is implemented by an engine that can refuse per-request
// options it cannot honour: CheckOptions returns a 400
// (unsupported_parameter) naming the parameter.
type EngineChecker interface {
	CheckOptions(o *TurnOptions) error
}

// Engine produces an assistant's reply. The built-in engine needs no
// model; the model-backed one talks to an OpenAI-compatible server.
type Engine interface {
	Reply(ctx context.Context, req *EngineRequest) (*Reply, error)
}

// ToolSpec describes a tool to a model: its name, what it does, and the
// JSON Schema of its input object.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Toolbox runs an assistant's tools for one account (and conversation).
type Toolbox interface {
	// Specs lists the tools, in a stable order.
	Specs() []ToolSpec
	// Run runs tool name with input and returns its action record, stored
	// with the change and its events in one transaction: status succeeded
	// with a result, or failed with an error (bad input, unknown record)
	// and no change. The error is non-nil only when nothing could be
	// stored at all (an unknown tool is a failed action, not an error).
	Run(ctx context.Context, name string, input json.RawMessage) (*Action, error)
}

// Exchange is one turn of a conversation: the inbound message, the
// assistant's reply, and (when the conversation is new) the conversation.
// The store writes all of it, with its events, in one transaction.
type Exchange struct {
	NewConversation *Conversation // set when the exchange starts a conversation
	ConversationID  string
	Inbound         *Message
	Reply           *Message
	Events          []*Event
	// Turn, when set, is stored with the inbound message: running, or
	// already ended when the whole turn is stored at once (with its
	// Reply, when it completed).
	Turn *Turn
	// Stream is the turn's stream events, stored with it.
	Stream []*TurnEvent
}

// AssistantStore keeps assistants. Deleted assistants leave lists and
// lookups; their conversations, messages, tasks and events stay readable.
type AssistantStore interface {
	// FindAssistant returns ENOTFOUND if the assistant does not exist, is
	// another user's, or was deleted.
	FindAssistant(ctx context.Context, userID, id string) (*Assistant, error)
	ListAssistants(ctx context.Context, userID string, p ListParams) (*Page[*Assistant], error)
	CreateAssistant(ctx context.Context, a *Assistant) error
	// UpdateAssistant writes the name, description, instructions, model,
	// metadata and update time.
	UpdateAssistant(ctx context.Context, a *Assistant) error
	DeleteAssistant(ctx context.Context, userID, id string, now time.Time) error
}

// ConversationStore keeps conversations and their messages.
type ConversationStore interface {
	// FindConversation returns the user's conversation (locked in a
	// transaction); ENOTFOUND otherwise.
	FindConversation(ctx context.Context, userID, id string) (*Conversation, error)
	// CreateConversation stores c with no messages; ENOTFOUND if its
	// assistant is not the user's (or was deleted).
	CreateConversation(ctx context.Context, c *Conversation) error
	// UpdateConversation writes the title, metadata and update time.
	UpdateConversation(ctx context.Context, c *Conversation) error
	// DeleteConversation deletes the conversation and its messages, and
	// returns the messages as they were, oldest first. The actions run in
	// it keep their conversation_id.
	DeleteConversation(ctx context.Context, userID, id string) ([]*Message, error)
	ListConversations(ctx context.Context, userID, assistantID string, p ListParams) (*Page[*Conversation], error)
	FindMessage(ctx context.Context, userID, id string) (*Message, error)
	ListMessages(ctx context.Context, userID, conversationID string, p ListParams) (*Page[*Message], error)
	// RecentMessages returns the last n messages of a conversation, oldest
	// first.
	RecentMessages(ctx context.Context, userID, conversationID string, n int) ([]*Message, error)
	// SaveExchange writes a turn with its events in one transaction.
	SaveExchange(ctx context.Context, x *Exchange) error
	// UpdateMessage writes the content, metadata and update time.
	UpdateMessage(ctx context.Context, m *Message) error
	// DeleteMessage removes a message and counts it out of its conversation.
	DeleteMessage(ctx context.Context, userID, id string, now time.Time) error
}
