package client

import (
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// Metadata is the caller's own key-value pairs on a record (assistants,
// conversations, messages, tasks, calendar events, webhooks): at most 50
// keys of 1 to 40 characters, string values of at most 500 characters.
// The server never reads it; it is in the record's events too.
type Metadata map[string]string

// MetadataUpdate changes a record's metadata: a key with a value sets it,
// a key with nil removes it, keys not named stay.
type MetadataUpdate map[string]*string

// Assistant is one of an account's AI assistants.
type Assistant struct {
	ID           string `json:"id"`     // "ast_..."
	Object       string `json:"object"` // "assistant"
	Name         string `json:"name"`
	Description  string `json:"description"`
	Instructions string `json:"instructions"`
	Model        string `json:"model"` // "builtin" is the server's embedded engine
	// Tools are client tools every turn has; RequireApproval the tools
	// whose calls wait for approval (["*"]: all); MultitaskStrategy
	// what a send to a busy conversation does by default.
	Tools             []ClientTool `json:"tools"`
	RequireApproval   []string     `json:"require_approval"`
	MultitaskStrategy string       `json:"multitask_strategy"`
	Metadata          Metadata     `json:"metadata"`
	CreatedAt         time.Time    `json:"created_at"`
	UpdatedAt         time.Time    `json:"updated_at"`
}

// Conversation is a thread of messages between a program and one assistant.
type Conversation struct {
	ID            string    `json:"id"`     // "conv_..."
	Object        string    `json:"object"` // "conversation"
	AssistantID   string    `json:"assistant_id"`
	Title         string    `json:"title"`
	MessageCount  int       `json:"message_count"`
	LastMessageAt time.Time `json:"last_message_at"`
	Metadata      Metadata  `json:"metadata"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Message directions.
const (
	DirectionInbound  = "inbound"  // from the caller's program to the assistant
	DirectionOutbound = "outbound" // from the assistant
)

// Message is one message of a conversation.
type Message struct {
	ID             string    `json:"id"`     // "msg_..."
	Object         string    `json:"object"` // "message"
	AssistantID    string    `json:"assistant_id"`
	ConversationID string    `json:"conversation_id"`
	Direction      string    `json:"direction"` // DirectionInbound or DirectionOutbound
	Content        string    `json:"content"`
	Metadata       Metadata  `json:"metadata"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// Integration statuses.
const (
	IntegrationConnected    = "connected"
	IntegrationError        = "error"
	IntegrationDisconnected = "disconnected"
)

// Integration is a connection of the account to an outside service.
type Integration struct {
	ID          string         `json:"id"`     // "int_..."
	Object      string         `json:"object"` // "integration"
	Provider    string         `json:"provider"`
	Status      string         `json:"status"` // IntegrationConnected, IntegrationError or IntegrationDisconnected
	Config      map[string]any `json:"config"` // without secrets
	LastError   *string        `json:"last_error"`
	ConnectedAt time.Time      `json:"connected_at"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`

	// The settings and tools of a ProviderMCP integration; nil for the
	// other providers. Tools are the server's tools the assistants get
	// (as "<Name>__<tool>"), as listed at the last connect or sync.
	Name            *string           `json:"name"`
	URL             *string           `json:"url"`
	AllowedTools    []string          `json:"allowed_tools"`
	RequireApproval []string          `json:"require_approval"`
	Tools           []IntegrationTool `json:"tools"`
}

// IntegrationTool is a tool of an MCP server.
type IntegrationTool struct {
	Name        string          `json:"name"` // the server's; the assistants' is "<integration name>__<name>"
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"` // RunAction checks input against it
}

// Event is a record of something that happened in the account, as
// delivered to webhooks. For "message.created" Data holds message_id,
// assistant_id, conversation_id, content and direction.
type Event struct {
	ID        string    `json:"id"`     // "evt_..."
	Object    string    `json:"object"` // "event"
	Type      string    `json:"type"`   // such as "message.created"
	CreatedAt time.Time `json:"created_at"`
	// Request is the API request that made the change; nil for a change
	// made otherwise (the account pages, the CLI, reminders, syncs).
	Request *EventRequest `json:"request"`
	// TurnID is the turn ("trn_...") whose messages or tool effects the
	// event records; "" otherwise.
	TurnID string `json:"turn_id"`
	// PreviousAttributes, on "*.updated" events, holds the values the
	// change replaced; nil otherwise.
	PreviousAttributes map[string]any `json:"previous_attributes,omitempty"`
	// Test is true on a test event of TriggerEvent (ams trigger): its data
	// is a made-up record of its type. Real events have it false.
	Test bool           `json:"test,omitempty"`
	Data map[string]any `json:"data"`
}

// EventRequest is the API request that caused an event.
type EventRequest struct {
	ID             string `json:"id"`              // its X-Request-Id ("req_...")
	IdempotencyKey string `json:"idempotency_key"` // the Idempotency-Key it was sent with; "" without one
}

// List is one page of a list endpoint.
type List[T any] struct {
	Object  string `json:"object"` // "list"
	Data    []T    `json:"data"`
	FirstID string `json:"first_id"` // id of Data's first record; "" when Data is empty
	LastID  string `json:"last_id"`  // id of Data's last record; "" when Data is empty
	HasMore bool   `json:"has_more"` // more records follow in the direction of the page
}

// List orders.
const (
	OrderDesc = "desc" // newest first, the server's default
	OrderAsc  = "asc"  // oldest first
)

// ListParams select one page of a list. Zero fields are left to the
// server's defaults (20 records, newest first). Set at most one of After
// and Before.
type ListParams struct {
	Limit  int    // 1..100
	After  string // the page follows the record with this id, in the list's order
	Before string // the page precedes the record with this id, in the list's order
	Order  string // OrderDesc or OrderAsc
}

// query returns p as query parameters; a nil p gives none.
func (p *ListParams) query() url.Values {
	q := url.Values{}
	if p == nil {
		return q
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.After != "" {
		q.Set("after", p.After)
	}
	if p.Before != "" {
		q.Set("before", p.Before)
	}
	if p.Order != "" {
		q.Set("order", p.Order)
	}
	return q
}

// ListConversationsParams select one page of conversations.
type ListConversationsParams struct {
	ListParams
	AssistantID string // only the conversations of this assistant
}

// ListEventsParams select one page of events.
type ListEventsParams struct {
	ListParams
	Type          string     // only events of this type, such as "message.created"
	CreatedAfter  *time.Time // only events created strictly after this time
	CreatedBefore *time.Time // only events created strictly before this time
}

// SendMessageParams is a message to an assistant.
type SendMessageParams struct {
	// AssistantID is the assistant to talk to (required).
	AssistantID string
	// Message is the text, 1 to 32768 bytes (required).
	Message string
	// ConversationID continues a conversation; empty starts a new one.
	ConversationID string
	// Metadata is the inbound message's metadata (the reply has none).
	Metadata Metadata
	// IdempotencyKey is sent as the Idempotency-Key header; empty lets the
	// client generate one. Repeating a call with the same key and params
	// within 24 hours returns the first reply instead of sending again.
	IdempotencyKey string
	// MultitaskStrategy is what the send does when the conversation has
	// an unfinished turn: MultitaskEnqueue (the assistant's default, or
	// enqueue), MultitaskReject (409 conversation_busy) or
	// MultitaskInterrupt.
	MultitaskStrategy string
}
