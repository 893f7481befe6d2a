package ams

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"time"

	"github.com/amsdev/ams/tracing"
)

// Event is a record of something that happened, delivered to webhooks and
// listed at GET /v1/events. It is written in the same transaction as the
// change that caused it.
type Event struct {
	ID        string    `json:"id"`
	Object    string    `json:"object"` // "event"
	UserID    string    `json:"-"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	// Request is the API request that made the change (nil for a change
	// made otherwise: the account pages, a turn's background work, a
	// reminder, a sync), as Stripe's events carry it. The store sets it
	// from the context of the transaction that emits the event
	// (WithRequest).
	Request *EventRequest `json:"request"`
	// TurnID is the turn whose messages or tool effects the event records
	// (nil otherwise).
	TurnID *string `json:"turn_id"`
	// PreviousAttributes, on an event of a change (*.updated), holds the
	// earlier values of the fields the change replaced, as the API showed
	// them (Since); nil on other events.
	PreviousAttributes map[string]any `json:"previous_attributes,omitempty"`
	// Test marks an event of POST /v1/events/trigger: a made-up record
	// of its type, whose ids name no record of the account. Only test
	// events have the field (true).
	Test bool           `json:"test,omitempty"`
	Data map[string]any `json:"data"`
	// Trace is the W3C traceparent of the span that emitted the event
	// (tracing.TraceParent; "" when tracing is off): its deliveries are
	// spans of that trace. Stored with the event, never shown to clients.
	Trace string `json:"-"`
}

// EventRequest is the API request that caused an event: its X-Request-Id
// and the Idempotency-Key it was sent with (nil without one).
type EventRequest struct {
	ID             string  `json:"id"`
	IdempotencyKey *string `json:"idempotency_key"`
}

type requestKey struct{}

// WithRequest returns ctx carrying r, the API request whose changes the
// events emitted in ctx record.
func WithRequest(ctx context.Context, r *EventRequest) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestFrom returns the API request ctx carries, or nil.
func RequestFrom(ctx context.Context) *EventRequest {
	r, _ := ctx.Value(requestKey{}).(*EventRequest)
	return r
}

// Cause sets what caused e from ctx where e does not say it yet: the API
// request (WithRequest), the turn of a tool call (WithToolCall) and the
// span that emits it (Trace).
func (e *Event) Cause(ctx context.Context) {
	if e.Trace == "" {
		e.Trace = tracing.TraceParent(ctx)
	}
	if e.Request == nil {
		e.Request = RequestFrom(ctx)
	}
	if e.TurnID == nil {
		if id := ToolCallFrom(ctx).TurnID; id != "" {
			e.TurnID = &id
		}
	}
}

// Event types of the interface.
const (
	EventMessageCreated          = "message.created"
	EventMessageUpdated          = "message.updated"
	EventMessageDeleted          = "message.deleted"
	EventTaskCreated             = "task.created"
	EventTaskCompleted           = "task.completed"
	EventTaskUpdated             = "task.updated"
	EventTaskReminder            = "task.reminder"
	EventEventCreated            = "event.created"
	EventEventUpdated            = "event.updated"
	EventEventReminder           = "event.reminder"
	EventIntegrationConnected    = "integration.connected"
	EventIntegrationDisconnected = "integration.disconnected"
	EventIntegrationError        = "integration.error"
)

// MessageCreatedEvent returns the message.created event for m.
func MessageCreatedEvent(m *Message) *Event {
	return &Event{
		ID:        NewID(PrefixEvent),
		Object:    "event",
		UserID:    m.UserID,
		Type:      EventMessageCreated,
		CreatedAt: m.CreatedAt,
		Data: map[string]any{
			"message_id":      m.ID,
			"assistant_id":    m.AssistantID,
			"conversation_id": m.ConversationID,
			"content":         m.Content,
			"direction":       m.Direction,
			"metadata":        m.Metadata,
		},
	}
}

// EventWebhookPing is the type of the event POST /v1/webhooks/{id}/ping sends.
const EventWebhookPing = "webhook.ping"

// Operational event types, additions beyond the interface's 13: they tell
// an account about its own webhooks, and only webhooks that subscribe to
// them receive them.
const (
	// EventWebhookFailing: a webhook was marked failing and disabled (its
	// fifth failed attempt, or a 410). Emitted in the transaction that
	// marks it, with the owner's e-mail; the failing webhook itself is
	// inactive by then, so the account's other webhooks get it.
	EventWebhookFailing = "webhook.failing"
	// EventWebhookEnabled: a webhook that was off was turned back on.
	EventWebhookEnabled = "webhook.enabled"
)

// Deletion event types, additions beyond the interface's 13: a task or a
// calendar event was deleted (through the API, by an assistant's tool or
// by a calendar sync), emitted in the deletion's transaction. Their data
// is the record as it was, as the API showed it. Only webhooks that
// subscribe to them receive them.
const (
	EventTaskDeleted  = "task.deleted"
	EventEventDeleted = "event.deleted"
	// EventEventRestored: a deleted calendar event was restored (POST
	// /v1/calendar/events/{id}/restore); its data is the event as it is
	// again.
	EventEventRestored = "event.restored"
)

// Audit event types of the management API, additions beyond the
// interface's 13: every change of an API key, an OAuth client or the
// account's settings, through the API, the account pages or the CLI, is
// emitted in the change's transaction. Their data is the record as the
// API shows it, never a secret. Only webhooks that subscribe to them (or
// to "*") receive them.
const (
	EventAPIKeyCreated            = "api_key.created"
	EventAPIKeyRevoked            = "api_key.revoked"
	EventOAuthClientCreated       = "oauth_client.created"
	EventOAuthClientSecretRotated = "oauth_client.secret_rotated"
	EventOAuthClientDeleted       = "oauth_client.deleted"
	EventAccountUpdated           = "account.updated"
)

// Event types of assistants and conversations, additions beyond the
// interface's 13 (DESIGN.md, "Events a receiver can trust"): every
// creation, change and deletion of an assistant or a conversation,
// through the API, the account pages or a turn (a send without
// conversation_id creates one), emitted in the change's transaction.
// Their data is the record as the API shows it (as it was, for a
// deletion); *.updated adds previous_attributes. Only webhooks that
// subscribe to them (or to "*") receive them.
const (
	EventAssistantCreated    = "assistant.created"
	EventAssistantUpdated    = "assistant.updated"
	EventAssistantDeleted    = "assistant.deleted"
	EventConversationCreated = "conversation.created"
	EventConversationUpdated = "conversation.updated"
	EventConversationDeleted = "conversation.deleted"
)

// AssistantEvent returns an assistant.* event of type typ carrying a.
func AssistantEvent(typ string, a *Assistant, at time.Time) *Event {
	return recordEvent(typ, a.UserID, "assistant", a, at)
}

// ConversationEvent returns a conversation.* event of type typ carrying c.
func ConversationEvent(typ string, c *Conversation, at time.Time) *Event {
	// The record's fields, as Conversation.MarshalJSON writes them, without
	// the JSON round trip of recordEvent: a POST /v1/messages that starts a
	// conversation emits one.
	meta := c.Metadata
	if meta == nil {
		meta = Metadata{}
	}
	return &Event{ID: NewID(PrefixEvent), Object: "event", UserID: c.UserID, Type: typ, CreatedAt: at, Data: map[string]any{
		"id": c.ID, "object": c.Object, "assistant_id": c.AssistantID, "title": c.Title, "message_count": c.MessageCount,
		"last_message_at": FormatTime(c.LastMessageAt), "metadata": meta,
		"created_at": FormatTime(c.CreatedAt), "updated_at": FormatTime(c.UpdatedAt),
	}}
}

// APIKeyEvent returns api_key.created or api_key.revoked for k (its
// record: never the secret nor its hash).
func APIKeyEvent(typ string, k *APIKey, at time.Time) *Event {
	return recordEvent(typ, k.UserID, "api_key", k.Record(at), at)
}

// OAuthClientEvent returns an oauth_client.* event for c (its record:
// never the secret nor its hash).
func OAuthClientEvent(typ string, c *OAuthClient, at time.Time) *Event {
	return recordEvent(typ, c.UserID, "oauth_client", c, at)
}

// AccountUpdatedEvent returns account.updated for u: its record, and
// previous_attributes, the values the change replaced (as Stripe's events
// have them).
func AccountUpdatedEvent(u *User, previous map[string]any, at time.Time) *Event {
	e := recordEvent(EventAccountUpdated, u.ID, "account", u.Account(), at)
	e.Data["previous_attributes"] = previous // in data too, where it was first documented
	e.PreviousAttributes = previous
	return e
}

// Lifecycle events of turns (DESIGN.md, "Turns an integrator builds on"),
// additions beyond the interface's 13: a turn that stops to wait for
// tool outputs or approvals, completes, fails or is cancelled emits one,
// in the transaction that stores its new state. Data is the turn record.
const (
	EventTurnRequiresAction = "turn.requires_action"
	EventTurnCompleted      = "turn.completed"
	EventTurnFailed         = "turn.failed"
	EventTurnCancelled      = "turn.cancelled"
)

// TurnLifecycleEvent returns the turn.* event of t's status (requires_action,
// completed, failed or cancelled), carrying t's record and its id as the
// event's turn_id; nil for a status that has none (queued, running).
func TurnLifecycleEvent(t *Turn, at time.Time) *Event {
	var typ string
	switch t.Status {
	case TurnRequiresAction:
		typ = EventTurnRequiresAction
	case TurnCompleted:
		typ = EventTurnCompleted
	case TurnFailed:
		typ = EventTurnFailed
	case TurnCancelled:
		typ = EventTurnCancelled
	default:
		return nil
	}
	// The record's fields, as Turn.MarshalJSON writes them, without the
	// JSON round trip of recordEvent: every turn emits one of these.
	ids := t.ActionIDs
	if ids == nil {
		ids = []string{}
	}
	var completed any
	if t.CompletedAt != nil {
		completed = FormatTime(*t.CompletedAt)
	}
	strategy := t.MultitaskStrategy
	if strategy == "" {
		strategy = MultitaskEnqueue
	}
	var errBody, required any
	if t.Error != nil {
		errBody = t.Error
	}
	if t.RequiredAction != nil {
		required = t.RequiredAction
	}
	data := map[string]any{
		"id": t.ID, "object": "turn", "assistant_id": t.AssistantID, "conversation_id": t.ConversationID, "status": t.Status,
		"inbound_message_id": t.InboundMessageID, "reply_message_id": t.ReplyMessageID, "error": errBody, "cancel_requested": t.CancelRequested,
		"background": t.Background, "multitask_strategy": strategy, "required_action": required,
		"usage":       map[string]any{"input_tokens": t.Usage.InputTokens, "output_tokens": t.Usage.OutputTokens, "total_tokens": t.Usage.InputTokens + t.Usage.OutputTokens},
		"stop_reason": t.StopReason, "action_ids": ids,
		"created_at": FormatTime(t.CreatedAt), "updated_at": FormatTime(t.UpdatedAt), "completed_at": completed,
	}
	id := t.ID
	return &Event{ID: NewID(PrefixEvent), Object: "event", UserID: t.UserID, Type: typ, CreatedAt: at, Data: data, TurnID: &id}
}

// EventAll is the subscription to every event type, present and future
// (DESIGN.md, "Additions"): a webhook whose events are ["*"] receives every
// event of its account, the types added in later versions included, but
// never a webhook.ping (a ping goes to the pinged webhook only).
const EventAll = "*"

// EventTypes lists the event types a webhook may subscribe to: the
// interface's 13, then the operational additions.
var EventTypes = []string{
	EventMessageCreated, EventMessageUpdated, EventMessageDeleted,
	EventTaskCreated, EventTaskCompleted, EventTaskUpdated, EventTaskReminder,
	EventEventCreated, EventEventUpdated, EventEventReminder,
	EventIntegrationConnected, EventIntegrationDisconnected, EventIntegrationError,
	EventWebhookFailing, EventWebhookEnabled,
	EventTaskDeleted, EventEventDeleted, EventEventRestored,
	EventAPIKeyCreated, EventAPIKeyRevoked,
	EventOAuthClientCreated, EventOAuthClientSecretRotated, EventOAuthClientDeleted,
	EventAccountUpdated,
	EventAssistantCreated, EventAssistantUpdated, EventAssistantDeleted,
	EventConversationCreated, EventConversationUpdated, EventConversationDeleted,
	EventTurnRequiresAction, EventTurnCompleted, EventTurnFailed, EventTurnCancelled,
	EventWebhookDegraded, EventWebhookRecovered,
}

// WebhookFailingEvent returns the webhook.failing event of webhook
// webhookID of userID, at url, marked failing at at for reason (the last
// attempt's outcome, a sentence).
func WebhookFailingEvent(userID, webhookID, url, reason string, at time.Time) *Event {
	return &Event{ID: NewID(PrefixEvent), Object: "event", UserID: userID, Type: EventWebhookFailing, CreatedAt: at,
		Data: map[string]any{"webhook_id": webhookID, "url": url, "reason": reason}}
}

// WebhookEnabledEvent returns the webhook.enabled event of w, turned back
// on at at.
func WebhookEnabledEvent(w *Webhook, at time.Time) *Event {
	return &Event{ID: NewID(PrefixEvent), Object: "event", UserID: w.UserID, Type: EventWebhookEnabled, CreatedAt: at,
		Data: map[string]any{"webhook_id": w.ID, "url": w.URL}}
}

// IsEventType reports whether t is one of EventTypes.
func IsEventType(t string) bool { return slices.Contains(EventTypes, t) }

// EventRetention is how long events are kept (and listed at GET /v1/events).
const EventRetention = 30 * 24 * time.Hour

// Event data of the world's records: the record itself, as the API shows it.

// TaskEvent returns an event of type typ (task.created, task.updated,
// task.completed, task.reminder, task.deleted) carrying t.
func TaskEvent(typ string, t *Task, at time.Time) *Event {
	return recordEvent(typ, t.UserID, "task", t, at)
}

// CalendarEventEvent returns an event of type typ (event.created,
// event.updated, event.reminder, event.deleted) carrying e.
func CalendarEventEvent(typ string, e *CalendarEvent, at time.Time) *Event {
	return recordEvent(typ, e.UserID, "calendar_event", e, at)
}

// IntegrationEvent returns an event of type typ (integration.connected,
// integration.disconnected, integration.error) carrying in.
func IntegrationEvent(typ string, in *Integration, at time.Time) *Event {
	return recordEvent(typ, in.UserID, "integration", in, at)
}

// MessageDeletedEvent returns message.deleted for m: its ids, never its
// content or metadata (DESIGN.md, "Deletion").
func MessageDeletedEvent(m *Message, at time.Time) *Event {
	return &Event{ID: NewID(PrefixEvent), Object: "event", UserID: m.UserID, Type: EventMessageDeleted, CreatedAt: at,
		Data: map[string]any{"message_id": m.ID, "assistant_id": m.AssistantID, "conversation_id": m.ConversationID, "direction": m.Direction}}
}

// MessageEvent returns message.updated for m.
func MessageEvent(typ string, m *Message, at time.Time) *Event {
	e := MessageCreatedEvent(m)
	e.Type, e.CreatedAt = typ, at
	return e
}

// Since sets e's previous_attributes, e being an event of a change
// (*.updated): the values the change replaced, taken from before, the
// same event made of the record before the change (as Stripe's events
// carry them). A field that did not change, and updated_at, are left out.
func (e *Event) Since(before *Event) *Event {
	prev := map[string]any{}
	for k, v := range before.Data {
		if k == "updated_at" || k == "previous_attributes" {
			continue
		}
		if now, ok := e.Data[k]; !ok || !reflect.DeepEqual(now, v) {
			prev[k] = v
		}
	}
	e.PreviousAttributes = prev
	return e
}

// recordEvent makes an event whose data is v's JSON object. v is one of
// this package's records, which always encode.
func recordEvent(typ, userID, object string, v any, at time.Time) *Event {
	b, err := json.Marshal(v)
	if err != nil {
		panic("ams: encode " + object + ": " + err.Error())
	}
	var data map[string]any
	if err := json.Unmarshal(b, &data); err != nil {
		panic("ams: decode " + object + ": " + err.Error())
	}
	return &Event{ID: NewID(PrefixEvent), Object: "event", UserID: userID, Type: typ, CreatedAt: at, Data: data}
}

// EventFilter selects events in ListEvents. Zero fields select all.
type EventFilter struct {
	// NoManagement leaves out the ManagementEventTypes (a credential
	// without admin reads the events).
	NoManagement  bool
	Type          string     // events of this type only
	CreatedAfter  *time.Time // created_at > CreatedAfter
	CreatedBefore *time.Time // created_at < CreatedBefore
}

// EventStore keeps the outbox of events. Emit writes events and queues
// their deliveries to the subscribed webhooks; in a transaction (Tx) they
// commit with the change that caused them.
type EventStore interface {
	// FindEvent returns the user's event, as soon as its transaction has
	// committed. Returns ENOTFOUND if it does not exist or belongs to
	// another user.
	FindEvent(ctx context.Context, userID, id string) (*Event, error)
	// ListEvents returns a page of the user's events that match f, in the
	// catch-up order: an order that grows only at its end, so that a
	// reader following it in ascending order with p.After set to the
	// last id it saw never skips an event, on any engine. An event is
	// listed once no transaction that could still precede it in that
	// order is running (on PostgreSQL: every transaction with a smaller
	// transaction id has ended; a long-running transaction delays
	// events, it never loses one). The cursor (p.After, p.Before) must
	// be an event of the list, listed yet or not; otherwise EINVALID.
	ListEvents(ctx context.Context, userID string, f EventFilter, p ListParams) (*Page[*Event], error)
	Emit(ctx context.Context, events ...*Event) error
}
