package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// This file covers the assistant's world: creating and changing
// assistants, their tasks and calendar events, running their actions, and
// editing and deleting messages.

// Task statuses.
const (
	TaskOpen      = "open"
	TaskCompleted = "completed"
)

// Task is a to-do item an assistant keeps for the user.
type Task struct {
	ID          string     `json:"id"`     // "task_..."
	Object      string     `json:"object"` // "task"
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
}

// CalendarEvent is an event in the user's calendar.
type CalendarEvent struct {
	ID          string     `json:"id"`           // "cev_..."
	Object      string     `json:"object"`       // "calendar_event"
	AssistantID string     `json:"assistant_id"` // "" for an event that came from an integration
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Location    string     `json:"location"`
	StartsAt    time.Time  `json:"starts_at"`
	EndsAt      time.Time  `json:"ends_at"`
	RemindAt    *time.Time `json:"remind_at"`
	Metadata    Metadata   `json:"metadata"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	// DeletedAt is when the event was deleted: nil for a live event. A
	// deleted event (ListCalendarEventsParams.Deleted, the data of
	// event.deleted) can be restored with RestoreCalendarEvent for 30
	// days.
	DeletedAt *time.Time `json:"deleted_at"`
	// DeletedBy is DeletedByAPI or DeletedBySync on a deleted event, ""
	// on a live one.
	DeletedBy string `json:"deleted_by"`
}

// Who deleted a calendar event (CalendarEvent.DeletedBy).
const (
	DeletedByAPI  = "api"  // through the API, an assistant's tool or the pages
	DeletedBySync = "sync" // by a calendar sync: the CalDAV server no longer listed it
)

// Action statuses.
const (
	ActionSucceeded = "succeeded"
	ActionFailed    = "failed"
)

// Tools an action may run (Action.Type, RunActionParams.Type).
const (
	ToolCreateTask          = "create_task"
	ToolUpdateTask          = "update_task"
	ToolCompleteTask        = "complete_task"
	ToolListTasks           = "list_tasks"
	ToolCreateCalendarEvent = "create_calendar_event"
	ToolUpdateCalendarEvent = "update_calendar_event"
	ToolListCalendarEvents  = "list_calendar_events"
)

// Action is one run of an assistant's tool, by RunAction or by the
// assistant while answering a message.
type Action struct {
	ID             string          `json:"id"`     // "act_..."
	Object         string          `json:"object"` // "action"
	AssistantID    string          `json:"assistant_id"`
	ConversationID string          `json:"conversation_id"` // "" when run with RunAction
	Type           string          `json:"type"`            // the tool, such as ToolCreateTask
	Input          json.RawMessage `json:"input"`
	Status         string          `json:"status"` // ActionSucceeded or ActionFailed
	// Result is the task or calendar event the tool left, or for the list
	// tools {"object": "list", "data": [...], "has_more": bool}, or for an
	// MCP integration's tool the MCP result ({"content": [...],
	// "structuredContent": ..., "isError": bool}); null unless succeeded
	// (or an MCP tool answered isError). DecodeResult reads it.
	Result json.RawMessage `json:"result"`
	Error  *ActionError    `json:"error"` // nil unless failed
	// TurnID is the turn (SendMessage) whose engine ran the tool, "" when
	// run with RunAction; CallSeq numbers the call in its turn, from 1.
	TurnID  string `json:"turn_id"`
	CallSeq int    `json:"call_seq"`
	// DurationMS is how long the tool ran, in milliseconds (for an MCP
	// tool, the call to its server).
	DurationMS int64     `json:"duration_ms"`
	CreatedAt  time.Time `json:"created_at"`
}

// ActionError is why an action failed, as the API would have answered.
type ActionError struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"` // such as "input.due_at"
}

// DecodeResult decodes the action's result into v: a *Task for the task
// tools, a *CalendarEvent for the calendar tools, a *List[Task] or
// *List[CalendarEvent] for the list tools.
func (a *Action) DecodeResult(v any) error {
	if a.Status != ActionSucceeded || len(a.Result) == 0 || string(a.Result) == "null" {
		return fmt.Errorf("ams: action %s has no result (status %s)", a.ID, a.Status)
	}
	return json.Unmarshal(a.Result, v)
}

// CreateAssistantParams is an assistant to create.
type CreateAssistantParams struct {
	Name         string // required, 1 to 200 characters
	Description  string
	Instructions string // at most 32 KiB
	// Model chooses the engine; empty means "builtin", the server's
	// embedded engine.
	Model    string
	Metadata Metadata
	// IdempotencyKey is sent as the Idempotency-Key header; empty lets the
	// client generate one.
	IdempotencyKey string
}

// UpdateAssistantParams are the fields of an assistant to change; nil
// fields are kept.
type UpdateAssistantParams struct {
	Name         *string
	Description  *string
	Instructions *string
	Model        *string
	Metadata     MetadataUpdate // merged into the assistant's
	// Tools, RequireApproval replace the assistant's when not nil (an
	// empty slice clears them); MultitaskStrategy when not nil.
	Tools             []ClientTool
	RequireApproval   []string
	MultitaskStrategy *string
}

// CreateAssistant creates an assistant.
func (c *Client) CreateAssistant(ctx context.Context, p CreateAssistantParams) (*Assistant, error) {
	body := map[string]any{"name": p.Name}
	if p.Description != "" {
		body["description"] = p.Description
	}
	if p.Instructions != "" {
		body["instructions"] = p.Instructions
	}
	if p.Model != "" {
		body["model"] = p.Model
	}
	setMetadata(body, p.Metadata)
	return post[Assistant](ctx, c, "/assistants", body, p.IdempotencyKey)
}

// UpdateAssistant changes the fields p sets of the assistant with id.
func (c *Client) UpdateAssistant(ctx context.Context, id string, p UpdateAssistantParams) (*Assistant, error) {
	body := map[string]any{}
	setString(body, "name", p.Name)
	setString(body, "description", p.Description)
	setString(body, "instructions", p.Instructions)
	setString(body, "model", p.Model)
	setMetadataUpdate(body, p.Metadata)
	if p.Tools != nil {
		body["tools"] = p.Tools
	}
	if p.RequireApproval != nil {
		body["require_approval"] = p.RequireApproval
	}
	setString(body, "multitask_strategy", p.MultitaskStrategy)
	return patch[Assistant](ctx, c, "/assistants", id, body)
}

// DeleteAssistant deletes the assistant with id. Its conversations,
// tasks, calendar events and actions stay readable.
func (c *Client) DeleteAssistant(ctx context.Context, id string) error {
	return del(ctx, c, "/assistants", id)
}

// UpdateMessage replaces the content of an inbound message (the
// assistant's replies cannot be edited: 400 message_not_editable).
func (c *Client) UpdateMessage(ctx context.Context, id, content string) (*Message, error) {
	return patch[Message](ctx, c, "/messages", id, map[string]any{"content": content})
}

// UpdateMessageParams are the fields of a message to change; at least one
// must be set.
type UpdateMessageParams struct {
	Content  *string        // inbound messages only
	Metadata MetadataUpdate // any message, replies included
}

// UpdateMessageFields changes the content and merges the metadata of the
// message with id.
func (c *Client) UpdateMessageFields(ctx context.Context, id string, p UpdateMessageParams) (*Message, error) {
	body := map[string]any{}
	setString(body, "content", p.Content)
	setMetadataUpdate(body, p.Metadata)
	return patch[Message](ctx, c, "/messages", id, body)
}

// CreateConversationParams is a conversation to start without a message.
type CreateConversationParams struct {
	AssistantID string // required: the conversation's assistant
	Title       string // at most 200 characters
	Metadata    Metadata
	// IdempotencyKey is sent as the Idempotency-Key header; empty lets the
	// client generate one.
	IdempotencyKey string
}

// UpdateConversationParams are the fields of a conversation to change;
// nil fields are kept.
type UpdateConversationParams struct {
	Title    *string
	Metadata MetadataUpdate // merged into the conversation's
}

// CreateConversation starts an empty conversation; send messages into it
// with SendMessage and its ID.
func (c *Client) CreateConversation(ctx context.Context, p CreateConversationParams) (*Conversation, error) {
	body := map[string]any{"assistant_id": p.AssistantID}
	if p.Title != "" {
		body["title"] = p.Title
	}
	setMetadata(body, p.Metadata)
	return post[Conversation](ctx, c, "/conversations", body, p.IdempotencyKey)
}

// UpdateConversation changes the fields p sets of the conversation with id.
func (c *Client) UpdateConversation(ctx context.Context, id string, p UpdateConversationParams) (*Conversation, error) {
	body := map[string]any{}
	setString(body, "title", p.Title)
	setMetadataUpdate(body, p.Metadata)
	return patch[Conversation](ctx, c, "/conversations", id, body)
}

// DeleteConversation deletes the conversation with id and its messages
// (the server emits message.deleted for each). The actions run in it
// stay, with its id in their ConversationID.
func (c *Client) DeleteConversation(ctx context.Context, id string) error {
	return del(ctx, c, "/conversations", id)
}

// DeleteMessage deletes a message.
func (c *Client) DeleteMessage(ctx context.Context, id string) error {
	return del(ctx, c, "/messages", id)
}

// CreateTaskParams is a task to create.
type CreateTaskParams struct {
	AssistantID string // required: the assistant that keeps the task
	Title       string // required, at most 500 bytes
	Notes       string
	DueAt       *time.Time
	RemindAt    *time.Time // reminds once, with a task.reminder event
	Metadata    Metadata
	// IdempotencyKey is sent as the Idempotency-Key header; empty lets the
	// client generate one.
	IdempotencyKey string
}

// UpdateTaskParams are the fields of a task to change; nil fields are
// kept. ClearDueAt and ClearRemindAt remove the times.
type UpdateTaskParams struct {
	Title         *string
	Notes         *string
	DueAt         *time.Time
	ClearDueAt    bool
	RemindAt      *time.Time
	ClearRemindAt bool
	Metadata      MetadataUpdate // merged into the task's
}

// ListTasksParams select one page of tasks.
type ListTasksParams struct {
	ListParams
	AssistantID string     // only the tasks of this assistant
	Status      string     // TaskOpen or TaskCompleted
	DueAfter    *time.Time // only tasks due at or after this time
	DueBefore   *time.Time // only tasks due before this time
}

func (p *ListTasksParams) query() url.Values {
	if p == nil {
		return url.Values{}
	}
	q := p.ListParams.query()
	setQuery(q, "assistant_id", p.AssistantID)
	setQuery(q, "status", p.Status)
	setQueryTime(q, "due_after", p.DueAfter)
	setQueryTime(q, "due_before", p.DueBefore)
	return q
}

// CreateTask creates a task.
func (c *Client) CreateTask(ctx context.Context, p CreateTaskParams) (*Task, error) {
	body := map[string]any{"assistant_id": p.AssistantID, "title": p.Title}
	if p.Notes != "" {
		body["notes"] = p.Notes
	}
	setTime(body, "due_at", p.DueAt, false)
	setTime(body, "remind_at", p.RemindAt, false)
	setMetadata(body, p.Metadata)
	return post[Task](ctx, c, "/tasks", body, p.IdempotencyKey)
}

// ListTasks returns one page of the account's tasks.
func (c *Client) ListTasks(ctx context.Context, p *ListTasksParams) (*List[Task], error) {
	return get[List[Task]](ctx, c, "/tasks", p.query())
}

// AllTasks iterates over the tasks from the page p selects on, fetching
// pages as needed; see Paginate.
func (c *Client) AllTasks(ctx context.Context, p *ListTasksParams) iter.Seq2[Task, error] {
	var params ListTasksParams
	if p != nil {
		params = *p
	}
	return Paginate(ctx, &params.ListParams, func(ctx context.Context, lp *ListParams) (*List[Task], error) {
		q := params
		q.ListParams = *lp
		return c.ListTasks(ctx, &q)
	})
}

// GetTask returns the task with id.
func (c *Client) GetTask(ctx context.Context, id string) (*Task, error) {
	return getByID[Task](ctx, c, "/tasks", id)
}

// UpdateTask changes the fields p sets of the task with id.
func (c *Client) UpdateTask(ctx context.Context, id string, p UpdateTaskParams) (*Task, error) {
	body := map[string]any{}
	setString(body, "title", p.Title)
	setString(body, "notes", p.Notes)
	setTime(body, "due_at", p.DueAt, p.ClearDueAt)
	setTime(body, "remind_at", p.RemindAt, p.ClearRemindAt)
	setMetadataUpdate(body, p.Metadata)
	return patch[Task](ctx, c, "/tasks", id, body)
}

// CompleteTask marks the task with id completed. Completing a completed
// task returns it unchanged.
func (c *Client) CompleteTask(ctx context.Context, id string) (*Task, error) {
	if id == "" {
		return nil, fmt.Errorf("ams: POST /tasks/{id}/complete: %w", errEmptyID)
	}
	out := new(Task)
	if err := c.Request(ctx, http.MethodPost, "/tasks/"+url.PathEscape(id)+"/complete", nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteTask deletes the task with id.
func (c *Client) DeleteTask(ctx context.Context, id string) error {
	return del(ctx, c, "/tasks", id)
}

// CreateCalendarEventParams is a calendar event to create.
type CreateCalendarEventParams struct {
	AssistantID string    // required: the assistant that keeps the event
	Title       string    // required, at most 500 bytes
	StartsAt    time.Time // required
	// EndsAt must be after StartsAt; nil means one hour after it.
	EndsAt      *time.Time
	Description string
	Location    string
	RemindAt    *time.Time // reminds once, with an event.reminder event
	Metadata    Metadata
	// IdempotencyKey is sent as the Idempotency-Key header; empty lets the
	// client generate one.
	IdempotencyKey string
}

// UpdateCalendarEventParams are the fields of a calendar event to change;
// nil fields are kept. Moving StartsAt alone keeps the event's length.
type UpdateCalendarEventParams struct {
	Title         *string
	Description   *string
	Location      *string
	StartsAt      *time.Time
	EndsAt        *time.Time
	RemindAt      *time.Time
	ClearRemindAt bool
	Metadata      MetadataUpdate // merged into the event's
}

// ListCalendarEventsParams select one page of calendar events; with both
// times set, the events that overlap [StartsAfter, StartsBefore).
type ListCalendarEventsParams struct {
	ListParams
	AssistantID  string     // only the events of this assistant
	StartsAfter  *time.Time // only events that end after this time
	StartsBefore *time.Time // only events that start before this time
	// Deleted lists the deleted events still restorable instead of the
	// live ones.
	Deleted bool
}

func (p *ListCalendarEventsParams) query() url.Values {
	if p == nil {
		return url.Values{}
	}
	q := p.ListParams.query()
	setQuery(q, "assistant_id", p.AssistantID)
	setQueryTime(q, "starts_after", p.StartsAfter)
	setQueryTime(q, "starts_before", p.StartsBefore)
	if p.Deleted {
		q.Set("deleted", "true")
	}
	return q
}

// CreateCalendarEvent puts an event in the user's calendar.
func (c *Client) CreateCalendarEvent(ctx context.Context, p CreateCalendarEventParams) (*CalendarEvent, error) {
	body := map[string]any{"assistant_id": p.AssistantID, "title": p.Title, "starts_at": formatTime(p.StartsAt)}
	setTime(body, "ends_at", p.EndsAt, false)
	if p.Description != "" {
		body["description"] = p.Description
	}
	if p.Location != "" {
		body["location"] = p.Location
	}
	setTime(body, "remind_at", p.RemindAt, false)
	setMetadata(body, p.Metadata)
	return post[CalendarEvent](ctx, c, "/calendar/events", body, p.IdempotencyKey)
}

// ListCalendarEvents returns one page of the account's calendar events.
func (c *Client) ListCalendarEvents(ctx context.Context, p *ListCalendarEventsParams) (*List[CalendarEvent], error) {
	return get[List[CalendarEvent]](ctx, c, "/calendar/events", p.query())
}

// AllCalendarEvents iterates over the calendar events from the page p
// selects on, fetching pages as needed; see Paginate.
func (c *Client) AllCalendarEvents(ctx context.Context, p *ListCalendarEventsParams) iter.Seq2[CalendarEvent, error] {
	var params ListCalendarEventsParams
	if p != nil {
		params = *p
	}
	return Paginate(ctx, &params.ListParams, func(ctx context.Context, lp *ListParams) (*List[CalendarEvent], error) {
		q := params
		q.ListParams = *lp
		return c.ListCalendarEvents(ctx, &q)
	})
}

// GetCalendarEvent returns the calendar event with id.
func (c *Client) GetCalendarEvent(ctx context.Context, id string) (*CalendarEvent, error) {
	return getByID[CalendarEvent](ctx, c, "/calendar/events", id)
}

// UpdateCalendarEvent changes the fields p sets of the calendar event
// with id.
func (c *Client) UpdateCalendarEvent(ctx context.Context, id string, p UpdateCalendarEventParams) (*CalendarEvent, error) {
	body := map[string]any{}
	setString(body, "title", p.Title)
	setString(body, "description", p.Description)
	setString(body, "location", p.Location)
	setTime(body, "starts_at", p.StartsAt, false)
	setTime(body, "ends_at", p.EndsAt, false)
	setTime(body, "remind_at", p.RemindAt, p.ClearRemindAt)
	setMetadataUpdate(body, p.Metadata)
	return patch[CalendarEvent](ctx, c, "/calendar/events", id, body)
}

// DeleteCalendarEvent deletes the calendar event with id; it can be
// restored with RestoreCalendarEvent for 30 days.
func (c *Client) DeleteCalendarEvent(ctx context.Context, id string) error {
	return del(ctx, c, "/calendar/events", id)
}

// RestoreCalendarEvent brings back the calendar event with id, deleted
// through the API or by a calendar sync within the last 30 days (emits
// event.restored). An *Error with code "calendar_event_not_deleted" (409)
// for a live event, "resource_missing" (404) for one that is not a
// deleted event of the account.
func (c *Client) RestoreCalendarEvent(ctx context.Context, id string) (*CalendarEvent, error) {
	if id == "" {
		return nil, fmt.Errorf("ams: POST /calendar/events/{id}/restore: %w", errEmptyID)
	}
	out := new(CalendarEvent)
	if err := c.Request(ctx, http.MethodPost, "/calendar/events/"+url.PathEscape(id)+"/restore", nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// RunActionParams is a tool for an assistant to run.
type RunActionParams struct {
	// Type is the tool, such as ToolCreateTask (required).
	Type string
	// Input is the tool's input object: a map or a struct that encodes to
	// one, such as map[string]any{"title": "Call Bob"}. nil sends none.
	Input any
	// IdempotencyKey is sent as the Idempotency-Key header; empty lets the
	// client generate one.
	IdempotencyKey string
}

// RunAction runs one of the assistant's tools and returns the action
// record (status succeeded; bad input is an *Error naming "type" or
// "input.<field>", and nothing is stored).
func (c *Client) RunAction(ctx context.Context, assistantID string, p RunActionParams) (*Action, error) {
	if assistantID == "" {
		return nil, fmt.Errorf("ams: POST /assistants/{id}/actions: %w", errEmptyID)
	}
	body := map[string]any{"type": p.Type}
	if p.Input != nil {
		body["input"] = p.Input
	}
	return post[Action](ctx, c, "/assistants/"+url.PathEscape(assistantID)+"/actions", body, p.IdempotencyKey)
}

// ListActions returns one page of the assistant's actions.
func (c *Client) ListActions(ctx context.Context, assistantID string, p *ListParams) (*List[Action], error) {
	if assistantID == "" {
		return nil, fmt.Errorf("ams: GET /assistants/{id}/actions: %w", errEmptyID)
	}
	return get[List[Action]](ctx, c, "/assistants/"+url.PathEscape(assistantID)+"/actions", p.query())
}

// AllActions iterates over the assistant's actions from the page p
// selects on, fetching pages as needed; see Paginate.
func (c *Client) AllActions(ctx context.Context, assistantID string, p *ListParams) iter.Seq2[Action, error] {
	return Paginate(ctx, p, func(ctx context.Context, lp *ListParams) (*List[Action], error) {
		return c.ListActions(ctx, assistantID, lp)
	})
}

// GetAction returns the action with id of the assistant.
func (c *Client) GetAction(ctx context.Context, assistantID, id string) (*Action, error) {
	if assistantID == "" || id == "" {
		return nil, fmt.Errorf("ams: GET /assistants/{id}/actions/{action_id}: %w", errEmptyID)
	}
	return get[Action](ctx, c, "/assistants/"+url.PathEscape(assistantID)+"/actions/"+url.PathEscape(id), nil)
}

// ListConversationActions returns one page of the assistant's actions
// run while answering in the conversation conversationID.
func (c *Client) ListConversationActions(ctx context.Context, assistantID, conversationID string, p *ListParams) (*List[Action], error) {
	if assistantID == "" || conversationID == "" {
		return nil, fmt.Errorf("ams: GET /assistants/{id}/actions?conversation_id=: %w", errEmptyID)
	}
	q := p.query()
	q.Set("conversation_id", conversationID)
	return get[List[Action]](ctx, c, "/assistants/"+url.PathEscape(assistantID)+"/actions", q)
}

// post sends body to path with an idempotency key (generated when key is
// empty) and decodes the answer into a new T.
func post[T any](ctx context.Context, c *Client, path string, body any, key string) (*T, error) {
	out := new(T)
	if err := c.Request(ctx, http.MethodPost, path, body, out, WithIdempotencyKey(key)); err != nil {
		return nil, err
	}
	return out, nil
}

// patch sends body to prefix/id and decodes the answer into a new T.
func patch[T any](ctx context.Context, c *Client, prefix, id string, body any) (*T, error) {
	if id == "" {
		return nil, fmt.Errorf("ams: PATCH %s/{id}: %w", prefix, errEmptyID)
	}
	out := new(T)
	if err := c.Request(ctx, http.MethodPatch, prefix+"/"+url.PathEscape(id), body, out); err != nil {
		return nil, err
	}
	return out, nil
}

// del deletes the record at prefix/id.
func del(ctx context.Context, c *Client, prefix, id string) error {
	if id == "" {
		return fmt.Errorf("ams: DELETE %s/{id}: %w", prefix, errEmptyID)
	}
	return c.Request(ctx, http.MethodDelete, prefix+"/"+url.PathEscape(id), nil, nil)
}

// setMetadata sets the metadata of a record to create, when it has any.
func setMetadata(body map[string]any, m Metadata) {
	if len(m) > 0 {
		body["metadata"] = m
	}
}

// setMetadataUpdate sets the metadata to merge (nil values: null, which
// removes the key), when there is any.
func setMetadataUpdate(body map[string]any, m MetadataUpdate) {
	if len(m) > 0 {
		body["metadata"] = m
	}
}

func setString(body map[string]any, name string, v *string) {
	if v != nil {
		body[name] = *v
	}
}

// setTime sets a time field: null when clear, the time when set.
func setTime(body map[string]any, name string, v *time.Time, clear bool) {
	switch {
	case clear:
		body[name] = nil
	case v != nil:
		body[name] = formatTime(*v)
	}
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func setQuery(q url.Values, name, v string) {
	if v != "" {
		q.Set(name, v)
	}
}

func setQueryTime(q url.Values, name string, v *time.Time) {
	if v != nil {
		q.Set(name, formatTime(*v))
	}
}
