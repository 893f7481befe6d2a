package ams

import (
	"context"
	"encoding/json"
	"strings"
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
	Metadata    Metadata   `json:"metadata"`
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
	Metadata    Metadata   `json:"metadata"`
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
	// DeletedAt is when the event was deleted; nil (null) for a live
	// event. A deleted event is hidden from every read but the list of
	// deleted events (GET /v1/calendar/events?deleted=true), can be
	// restored (POST /v1/calendar/events/{id}/restore) for
	// EventRetention, and is purged after that.
	DeletedAt *time.Time `json:"deleted_at"`
	// DeletedBy is who deleted it: DeletedByAPI or DeletedBySync; ""
	// (null) for a live event.
	DeletedBy string `json:"deleted_by"`
}

// Who deleted a calendar event (CalendarEvent.DeletedBy).
const (
	// DeletedByAPI: through the API, the pages or an assistant's tool.
	DeletedByAPI = "api"
	// DeletedBySync: by a calendar sync, because the object was gone from
	// the calendar server in two listings (see package caldav).
	DeletedBySync = "sync"
)

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
	Result         json.RawMessage `json:"result"` // null unless succeeded, or the MCP result of a failed MCP tool call
	Error          *ActionError    `json:"error"`  // null unless failed
	// TurnID is the turn (POST /v1/messages) whose engine ran the tool,
	// "" when run directly; CallSeq is its number among the turn's tool
	// calls, from 1 (0 when run directly).
	TurnID  string `json:"turn_id"`
	CallSeq int    `json:"call_seq"`
	// DurationMS is how long the tool ran, in milliseconds (for an MCP
	// tool: the call to its server).
	DurationMS int64     `json:"duration_ms"`
	CreatedAt  time.Time `json:"created_at"`
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
	// Deleted lists the deleted events still restorable instead of the
	// live ones.
	Deleted      bool
	AssistantID  string
	StartsAfter  *time.Time // ends_at > StartsAfter
	StartsBefore *time.Time // starts_at < StartsBefore
}

// TaskStore keeps tasks.
type TaskStore interface {
	FindTask(ctx context.Context, userID, id string) (*Task, error)
	ListTasks(ctx context.Context, userID string, f TaskFilter, p ListParams) (*Page[*Task], error)
	// CreateTask returns ENOTFOUND if the task's assistant is not the
	// user's (or was deleted).
	CreateTask(ctx context.Context, t *Task) error
	// UpdateTask writes the task's title, notes, status, due, reminder,
	// completion and update times and its metadata (not its assistant). The store decides
	// RemindedAt: when RemindAt differs from the stored value it clears
	// it, so that the new reminder fires; otherwise it keeps the stored
	// one. t.RemindedAt is set to the result.
	UpdateTask(ctx context.Context, t *Task) error
	DeleteTask(ctx context.Context, userID, id string) error
}

// CalendarStore keeps calendar events.
type CalendarStore interface {
	FindCalendarEvent(ctx context.Context, userID, id string) (*CalendarEvent, error)
	// FindCalendarEventByUID finds the event an integration keeps under an
	// iCalendar UID; ENOTFOUND if none.
	FindCalendarEventByUID(ctx context.Context, userID, integrationID, uid string) (*CalendarEvent, error)
	ListCalendarEvents(ctx context.Context, userID string, f CalendarFilter, p ListParams) (*Page[*CalendarEvent], error)
	// CreateCalendarEvent returns ENOTFOUND if the event's assistant or
	// integration is not the user's, ECONFLICT if the integration already
	// keeps an event under its ExternalUID.
	CreateCalendarEvent(ctx context.Context, e *CalendarEvent) error
	// UpdateCalendarEvent writes every field but the assistant and the
	// creation time; RemindedAt as UpdateTask does.
	UpdateCalendarEvent(ctx context.Context, e *CalendarEvent) error
	// DeleteCalendarEvent deletes the user's live event: it is kept,
	// hidden, with DeletedAt = at and DeletedBy = by, restorable until
	// Purge removes it (EventRetention after at). ENOTFOUND if there is
	// no such live event.
	DeleteCalendarEvent(ctx context.Context, userID, id, by string, at time.Time) error
	// FindDeletedCalendarEventByUID finds the event a calendar sync
	// deleted (DeletedBySync) last among the integration's events under
	// an iCalendar UID, locked in a transaction; ENOTFOUND if none.
	FindDeletedCalendarEventByUID(ctx context.Context, userID, integrationID, uid string) (*CalendarEvent, error)
	// RestoreCalendarEvent brings back the user's deleted event and
	// returns it, with updated_at = at and its remote object's path and
	// ETag cleared (a calendar sync writes it back under its UID). A
	// reminder that came due meanwhile is taken as fired. ENOTFOUND if
	// there is no deleted event with the id (or it was purged);
	// ECONFLICT (calendar_event_not_deleted) if the event is live;
	// ECONFLICT (calendar_event_uid_taken) if its integration keeps
	// another live event under its UID by now.
	RestoreCalendarEvent(ctx context.Context, userID, id string, at time.Time) (*CalendarEvent, error)
}

// ActionFilter selects actions in ListActions. Zero fields do not filter.
type ActionFilter struct {
	AssistantID    string
	ConversationID string
}

// ActionStore keeps the actions (tool runs).
type ActionStore interface {
	FindAction(ctx context.Context, userID, id string) (*Action, error)
	ListActions(ctx context.Context, userID string, f ActionFilter, p ListParams) (*Page[*Action], error)
	// CreateAction returns ENOTFOUND if the action's assistant is not the
	// user's, EINVALID if its input or result is not JSON. Its
	// ConversationID is not checked: tools run before a turn is stored.
	CreateAction(ctx context.Context, a *Action) error
}

// ReminderStore fires the reminders of tasks and calendar events.
type ReminderStore interface {
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

// WorldStore is what the services of the assistant's world need: the
// account's records, transactions over them, and the reminders.
type WorldStore interface {
	AccountData
	ReminderStore
	Update(ctx context.Context, fn func(tx Tx) error) error
}

// NormalizeNewlines returns s with every line ending made "\n": "\r\n"
// and a lone "\r" (Windows and old Mac text) become "\n". The world
// service applies it to the text of tasks and calendar events on input,
// whoever sends it (the API, the pages, an assistant's tool), so that no
// carriage return is stored; iCalendar writers apply it again to rows
// stored before.
func NormalizeNewlines(s string) string {
	if !strings.ContainsRune(s, '\r') {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}
