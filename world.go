package ams

import (
	"context"
	"encoding/json"
	"time"
)

// The assistant's world: the tasks and calendar events an assistant keeps
// for its user, and the actions (tool runs) that change them. Every change
// is written with its events in one transaction, through Tx.

// Task statuses.
const (
	TaskOpen      = "open"
	TaskCompleted = "completed"
)

// Task is a to-do item an assistant keeps for its user.
type Task struct {
	ID          string     `json:"id"`
	Object      string     `json:"object"` // "task"
	UserID      string     `json:"-"`
	AssistantID string     `json:"assistant_id"`
	Title       string     `json:"title"`
	Notes       string     `json:"notes"`
	Status      string     `json:"status"` // TaskOpen or TaskCompleted
	DueAt       *time.Time `json:"due_at"`
	RemindAt    *time.Time `json:"remind_at"`
	CompletedAt *time.Time `json:"completed_at"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	// RemindedAt is when the reminder of RemindAt fired (nil: not yet).
	// Setting a new RemindAt clears it, so the new reminder fires too.
	RemindedAt *time.Time `json:"-"`
}

// CalendarEvent is an appointment in the user's calendar.
type CalendarEvent struct {
	ID          string     `json:"id"`
	Object      string     `json:"object"` // "calendar_event"
	UserID      string     `json:"-"`
	AssistantID string     `json:"assistant_id"` // "" when it came from an integration
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Location    string     `json:"location"`
	StartsAt    time.Time  `json:"starts_at"`
	EndsAt      time.Time  `json:"ends_at"`
	RemindAt    *time.Time `json:"remind_at"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	RemindedAt  *time.Time `json:"-"`
	// Sync state of a calendar integration (CalDAV): the integration the
	// event is kept in step with, the iCalendar UID, the remote object's
	// path and ETag. Empty for events that live only here.
	IntegrationID string `json:"-"`
	ExternalUID   string `json:"-"`
	ExternalPath  string `json:"-"`
	ExternalETag  string `json:"-"`
}

// Action statuses.
const (
	ActionSucceeded = "succeeded"
	ActionFailed    = "failed"
)

// Action is one run of an assistant's tool, whether a client asked for it
// (POST /v1/assistants/{id}/actions) or the assistant chose it while
// answering a message.
type Action struct {
	ID             string          `json:"id"`
	Object         string          `json:"object"` // "action"
	UserID         string          `json:"-"`
	AssistantID    string          `json:"assistant_id"`
	ConversationID string          `json:"conversation_id"` // "" when run directly
	Type           string          `json:"type"`            // the tool's name
	Input          json.RawMessage `json:"input"`
	Status         string          `json:"status"` // ActionSucceeded or ActionFailed
	Result         json.RawMessage `json:"result"` // null unless succeeded
	Error          *ActionError    `json:"error"`  // null unless failed
	CreatedAt      time.Time       `json:"created_at"`
}

// ActionError is why an action failed, in the API's error vocabulary.
type ActionError struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

// TaskFilter selects tasks in ListTasks. Zero fields do not filter.
type TaskFilter struct {
	AssistantID string
	Status      string     // TaskOpen or TaskCompleted
	DueAfter    *time.Time // due_at >= DueAfter
	DueBefore   *time.Time // due_at < DueBefore
}

// CalendarFilter selects calendar events in ListCalendarEvents: those that
// overlap [StartsAfter, StartsBefore) when both are set; with one only,
// events ending after StartsAfter or starting before StartsBefore.
type CalendarFilter struct {
	AssistantID  string
	StartsAfter  *time.Time // ends_at > StartsAfter
	StartsBefore *time.Time // starts_at < StartsBefore
}

// Tx is one transaction over an account's records of the assistant's
// world. Everything written through it, including the events emitted,
// commits together when the function given to WorldStore.Update returns
// nil, and none of it otherwise. The Find methods lock the row they read
// until the transaction ends, so a read-modify-write cannot lose a
// concurrent update. Every method matches the user id: another account's
// record is ENOTFOUND. After an ENOTFOUND or ECONFLICT answer the
// transaction may go on; after any other error fn must return it.
type Tx interface {
	FindAssistant(ctx context.Context, userID, id string) (*Assistant, error)
	CreateAssistant(ctx context.Context, a *Assistant) error
	UpdateAssistant(ctx context.Context, a *Assistant) error
	// DeleteAssistant removes the assistant from lists and lookups; its
	// conversations, messages, tasks and events stay readable.
	DeleteAssistant(ctx context.Context, userID, id string, now time.Time) error

	FindMessage(ctx context.Context, userID, id string) (*Message, error)
	UpdateMessage(ctx context.Context, m *Message) error
	// DeleteMessage removes a message and counts it out of its conversation.
	DeleteMessage(ctx context.Context, userID, id string, now time.Time) error

	FindTask(ctx context.Context, userID, id string) (*Task, error)
	// CreateTask returns ENOTFOUND if the task's assistant is not the
	// user's (or was deleted).
	CreateTask(ctx context.Context, t *Task) error
	// UpdateTask writes the task's title, notes, status, due, reminder,
	// completion and update times (not its assistant). The store decides
	// RemindedAt: when RemindAt differs from the stored value it clears
	// it, so that the new reminder fires; otherwise it keeps the stored
	// one. t.RemindedAt is set to the result.
	UpdateTask(ctx context.Context, t *Task) error
	DeleteTask(ctx context.Context, userID, id string) error

	FindCalendarEvent(ctx context.Context, userID, id string) (*CalendarEvent, error)
	// FindCalendarEventByUID finds the event an integration keeps under an
	// iCalendar UID; ENOTFOUND if none.
	FindCalendarEventByUID(ctx context.Context, userID, integrationID, uid string) (*CalendarEvent, error)
	// CreateCalendarEvent returns ENOTFOUND if the event's assistant or
	// integration is not the user's, ECONFLICT if the integration already
	// keeps an event under its ExternalUID.
	CreateCalendarEvent(ctx context.Context, e *CalendarEvent) error
	// UpdateCalendarEvent writes every field but the assistant and the
	// creation time; RemindedAt as UpdateTask does.
	UpdateCalendarEvent(ctx context.Context, e *CalendarEvent) error
	DeleteCalendarEvent(ctx context.Context, userID, id string) error

	// Integrations. The secrets (a password, a token) are sealed at rest
	// and never appear in Integration.Config.
	FindIntegration(ctx context.Context, userID, id string) (*Integration, error)
	CreateIntegration(ctx context.Context, in *Integration, secrets map[string]string) error
	UpdateIntegration(ctx context.Context, in *Integration) error

	// CreateAction returns ENOTFOUND if the action's assistant is not the
	// user's, EINVALID if its input or result is not JSON. Its
	// ConversationID is not checked: tools run before a turn is stored.
	CreateAction(ctx context.Context, a *Action) error

	// Emit writes events into the outbox and queues their deliveries to
	// the subscribed webhooks.
	Emit(ctx context.Context, events ...*Event) error
}

// WorldStore is the storage of the assistant's world.
type WorldStore interface {
	// Update runs fn in one transaction; see Tx. It commits when fn
	// returns nil and returns fn's error unchanged otherwise. fn must not
	// call the store's other writing methods (SQLite has one write
	// connection, which fn holds), nor use tx after it returns.
	Update(ctx context.Context, fn func(tx Tx) error) error

	FindTask(ctx context.Context, userID, id string) (*Task, error)
	ListTasks(ctx context.Context, userID string, f TaskFilter, p ListParams) (*Page[*Task], error)
	FindCalendarEvent(ctx context.Context, userID, id string) (*CalendarEvent, error)
	ListCalendarEvents(ctx context.Context, userID string, f CalendarFilter, p ListParams) (*Page[*CalendarEvent], error)
	FindAction(ctx context.Context, userID, id string) (*Action, error)
	ListActions(ctx context.Context, userID, assistantID string, p ListParams) (*Page[*Action], error)
	FindIntegration(ctx context.Context, userID, id string) (*Integration, error)
	// IntegrationSecrets returns the unsealed secrets of an integration.
	IntegrationSecrets(ctx context.Context, userID, id string) (map[string]string, error)
	// ActiveIntegrations returns every integration of the provider, of all
	// accounts, whose status is connected or error (for the sync worker).
	ActiveIntegrations(ctx context.Context, provider string) ([]*Integration, error)

	// FireReminders emits task.reminder and event.reminder for at most
	// limit tasks and calendar events whose remind_at is at or before now
	// and whose reminder has not fired, marking each fired in the same
	// transaction, so that each fires once however many processes call it.
	// Completed tasks do not remind. It returns how many fired.
	FireReminders(ctx context.Context, now time.Time, limit int) (int, error)
	// NextReminder returns the earliest remind_at still to fire (zero
	// time: none), so a scheduler can sleep until then.
	NextReminder(ctx context.Context) (time.Time, error)
}

// Event data of the world's records: the record itself, as the API shows it.

// TaskEvent returns an event of type typ (task.created, task.updated,
// task.completed, task.reminder) carrying t.
func TaskEvent(typ string, t *Task, at time.Time) *Event {
	return recordEvent(typ, t.UserID, "task", t, at)
}

// CalendarEventEvent returns an event of type typ (event.created,
// event.updated, event.reminder) carrying e.
func CalendarEventEvent(typ string, e *CalendarEvent, at time.Time) *Event {
	return recordEvent(typ, e.UserID, "calendar_event", e, at)
}

// IntegrationEvent returns an event of type typ (integration.connected,
// integration.disconnected, integration.error) carrying in.
func IntegrationEvent(typ string, in *Integration, at time.Time) *Event {
	return recordEvent(typ, in.UserID, "integration", in, at)
}

// MessageEvent returns message.updated or message.deleted for m.
func MessageEvent(typ string, m *Message, at time.Time) *Event {
	e := MessageCreatedEvent(m)
	e.Type, e.CreatedAt = typ, at
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
