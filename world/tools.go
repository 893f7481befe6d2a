package world

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/amsdev/ams"
)

// The tools every assistant has. Their inputs are JSON objects; times are
// RFC 3339 strings.
const (
	ToolCreateTask          = "create_task"
	ToolUpdateTask          = "update_task"
	ToolCompleteTask        = "complete_task"
	ToolListTasks           = "list_tasks"
	ToolCreateCalendarEvent = "create_calendar_event"
	ToolUpdateCalendarEvent = "update_calendar_event"
	ToolListCalendarEvents  = "list_calendar_events"
)

const timeSchema = `{"type": "string", "format": "date-time", "description": "RFC 3339 time, e.g. 2026-11-21T09:00:00Z"}`
const nullableTimeSchema = `{"type": ["string", "null"], "format": "date-time", "description": "RFC 3339 time, e.g. 2026-11-21T09:00:00Z; null clears it"}`

// Specs are the tools, described for a model (function calling) and for
// the API's documentation. The order is stable.
var Specs = []ams.ToolSpec{
	{Name: ToolCreateTask, Description: "Create a task (a to-do item) for the user, optionally with a due time and a reminder time.",
		Parameters: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["title"], "properties": {
			"title": {"type": "string", "maxLength": 500}, "notes": {"type": "string"},
			"due_at": ` + nullableTimeSchema + `, "remind_at": ` + nullableTimeSchema + `}}`)},
	{Name: ToolUpdateTask, Description: "Change a task's title, notes, due time or reminder time. Only the fields given change.",
		Parameters: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["task_id"], "properties": {
			"task_id": {"type": "string", "description": "task_ id"}, "title": {"type": "string", "maxLength": 500}, "notes": {"type": "string"},
			"due_at": ` + nullableTimeSchema + `, "remind_at": ` + nullableTimeSchema + `}}`)},
	{Name: ToolCompleteTask, Description: "Mark a task as completed.",
		Parameters: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["task_id"], "properties": {
			"task_id": {"type": "string", "description": "task_ id"}}}`)},
	{Name: ToolListTasks, Description: "List the user's tasks, newest first, optionally by status and due-time range.",
		Parameters: json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {
			"status": {"type": "string", "enum": ["open", "completed"]}, "due_after": ` + timeSchema + `, "due_before": ` + timeSchema + `,
			"limit": {"type": "integer", "minimum": 1, "maximum": 100}}}`)},
	{Name: ToolCreateCalendarEvent, Description: "Put an event in the user's calendar. Without ends_at it lasts one hour.",
		Parameters: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["title", "starts_at"], "properties": {
			"title": {"type": "string", "maxLength": 500}, "description": {"type": "string"}, "location": {"type": "string", "maxLength": 500},
			"starts_at": ` + timeSchema + `, "ends_at": ` + timeSchema + `, "remind_at": ` + nullableTimeSchema + `}}`)},
	{Name: ToolUpdateCalendarEvent, Description: "Change a calendar event. Only the fields given change; moving starts_at alone keeps its length.",
		Parameters: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["event_id"], "properties": {
			"event_id": {"type": "string", "description": "cev_ id"}, "title": {"type": "string", "maxLength": 500}, "description": {"type": "string"},
			"location": {"type": "string", "maxLength": 500}, "starts_at": ` + timeSchema + `, "ends_at": ` + timeSchema + `,
			"remind_at": ` + nullableTimeSchema + `}}`)},
	{Name: ToolListCalendarEvents, Description: "List the user's calendar events that overlap a time range.",
		Parameters: json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {
			"starts_after": ` + timeSchema + `, "starts_before": ` + timeSchema + `, "limit": {"type": "integer", "minimum": 1, "maximum": 100}}}`)},
}

// ToolNames returns the names of the tools, in Specs order.
func ToolNames() []string {
	names := make([]string, len(Specs))
	for i, s := range Specs {
		names[i] = s.Name
	}
	return names
}

// RunAction runs tool typ of assistant a with input, directly (the API's
// POST /v1/assistants/{id}/actions, conversationID ""), or for an engine.
// The action carries the turn and call number of ams.ToolCallFrom(ctx).
// On success it stores the action record, succeeded, in the transaction of
// the change it made, and returns it. On bad input (unknown tool, a field
// that does not validate, an unknown record) it returns the *ams.Error,
// naming the field as "input.<field>" (or "type"), and stores nothing.
func (s *Service) RunAction(ctx context.Context, userID string, a *ams.Assistant, conversationID, typ string, input json.RawMessage) (*ams.Action, error) {
	if isMCPTool(typ) {
		return s.runMCP(ctx, userID, a, conversationID, typ, input)
	}
	if !slices.Contains(ToolNames(), typ) {
		return nil, ams.ParamError("parameter_invalid", "type", "Unknown action type '%s'; the tools are: %s.", clip(typ), joinNames())
	}
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	if !json.Valid(input) {
		return nil, ams.ParamError("parameter_invalid", "input", "The input is not valid JSON.")
	}
	call := ams.ToolCallFrom(ctx)
	act := &ams.Action{ID: ams.NewID(ams.PrefixAction), Object: "action", UserID: userID, AssistantID: a.ID,
		ConversationID: conversationID, Type: typ, Input: compact(input), Status: ams.ActionSucceeded, TurnID: call.TurnID, CallSeq: call.Seq}
	result, err := s.runTool(ctx, userID, a, typ, input, act)
	if err != nil {
		return nil, err
	}
	act.Result = result
	if act.CreatedAt.IsZero() {
		// A read-only tool: its record is stored on its own.
		act.CreatedAt = s.now()
		if err := s.Store.Update(ctx, func(tx ams.Tx) error {
			ams.KeepAnswer(ctx, act)
			return tx.CreateAction(ctx, act)
		}); err != nil {
			return nil, err
		}
	}
	return act, nil
}

// runTool runs one tool. Tools that change records store act (with its
// CreatedAt set) in their own transaction, through record.
func (s *Service) runTool(ctx context.Context, userID string, a *ams.Assistant, typ string, input json.RawMessage, act *ams.Action) (json.RawMessage, error) {
	const p = "input."
	ws := &actionStore{Store: s.Store, act: act, clock: s}
	svc := &Service{Store: ws, Clock: s.Clock}
	switch typ {
	case ToolCreateTask:
		return encode(svc.CreateTask(ctx, userID, a.ID, input, p))
	case ToolUpdateTask:
		id, rest, err := takeID(input, "task_id")
		if err != nil {
			return nil, err
		}
		t, err := svc.UpdateTask(ctx, userID, id, rest, p)
		return encode(t, ams.WithParam(err, p+"task_id"))
	case ToolCompleteTask:
		id, rest, err := takeID(input, "task_id")
		if err != nil {
			return nil, err
		}
		if _, err := parseObject(rest, p); err != nil {
			return nil, err
		}
		t, err := svc.CompleteTask(ctx, userID, id)
		return encode(t, ams.WithParam(err, p+"task_id"))
	case ToolListTasks:
		o, err := parseObject(input, p, "status", "due_after", "due_before", "limit")
		if err != nil {
			return nil, err
		}
		f := ams.TaskFilter{Status: o.enum("status", ams.TaskOpen, ams.TaskCompleted)}
		f.DueAfter, f.DueBefore = o.time("due_after", false).Value, o.time("due_before", false).Value
		limit := o.integer("limit", 1, 100, 20)
		if o.err != nil {
			return nil, o.err
		}
		page, err := s.Store.ListTasks(ctx, userID, f, ams.ListParams{Limit: limit})
		if err != nil {
			return nil, err
		}
		return encode(listResult(page.Data, page.HasMore), nil)
	case ToolCreateCalendarEvent:
		return encode(svc.CreateEvent(ctx, userID, a.ID, input, p))
	case ToolUpdateCalendarEvent:
		id, rest, err := takeID(input, "event_id")
		if err != nil {
			return nil, err
		}
		e, err := svc.UpdateEvent(ctx, userID, id, rest, p)
		return encode(e, ams.WithParam(err, p+"event_id"))
	case ToolListCalendarEvents:
		o, err := parseObject(input, p, "starts_after", "starts_before", "limit")
		if err != nil {
			return nil, err
		}
		f := ams.CalendarFilter{StartsAfter: o.time("starts_after", false).Value, StartsBefore: o.time("starts_before", false).Value}
		limit := o.integer("limit", 1, 100, 20)
		if o.err != nil {
			return nil, o.err
		}
		page, err := s.Store.ListCalendarEvents(ctx, userID, f, ams.ListParams{Limit: limit})
		if err != nil {
			return nil, err
		}
		return encode(listResult(page.Data, page.HasMore), nil)
	}
	return nil, ams.ParamError("parameter_invalid", "type", "Unknown action type '%s'.", ams.Clip(typ))
}

// actionStore wraps the store so that the transaction of a tool's change
// also stores the action record: the record exists only if the change
// committed. Its result is filled in after the change is made, inside the
// transaction, by encoding the record the change wrote.
type actionStore struct {
	Store
	act   *ams.Action
	clock *Service
}

func (w *actionStore) Update(ctx context.Context, fn func(tx ams.Tx) error) error {
	return w.Store.Update(ctx, func(tx ams.Tx) error {
		rt := &recordingTx{Tx: tx}
		if err := fn(rt); err != nil {
			return err
		}
		w.act.CreatedAt = w.clock.now()
		b, err := json.Marshal(rt.record)
		if err != nil {
			return err
		}
		w.act.Result = b
		ams.KeepAnswer(ctx, w.act)
		return tx.CreateAction(ctx, w.act)
	})
}

// recordingTx remembers the task or calendar event a tool read or wrote
// last: the action's result.
type recordingTx struct {
	ams.Tx
	record any
}

func (r *recordingTx) FindTask(ctx context.Context, userID, id string) (*ams.Task, error) {
	t, err := r.Tx.FindTask(ctx, userID, id)
	if err == nil {
		r.record = t
	}
	return t, err
}
func (r *recordingTx) FindCalendarEvent(ctx context.Context, userID, id string) (*ams.CalendarEvent, error) {
	e, err := r.Tx.FindCalendarEvent(ctx, userID, id)
	if err == nil {
		r.record = e
	}
	return e, err
}

func (r *recordingTx) CreateTask(ctx context.Context, t *ams.Task) error {
	r.record = t
	return r.Tx.CreateTask(ctx, t)
}
func (r *recordingTx) UpdateTask(ctx context.Context, t *ams.Task) error {
	r.record = t
	return r.Tx.UpdateTask(ctx, t)
}
func (r *recordingTx) CreateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	r.record = e
	return r.Tx.CreateCalendarEvent(ctx, e)
}
func (r *recordingTx) UpdateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	r.record = e
	return r.Tx.UpdateCalendarEvent(ctx, e)
}

// takeID removes the required id field from a tool's input and returns it
// with the rest of the input.
func takeID(input json.RawMessage, field string) (string, json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(input, &m); err != nil || m == nil {
		return "", nil, ams.ParamError("parameter_invalid", "input", "The input must be a JSON object.")
	}
	raw, ok := m[field]
	var id string
	if !ok || json.Unmarshal(raw, &id) != nil || id == "" {
		return "", nil, ams.ParamError("parameter_missing", "input."+field, "The field '%s' is required: the id of the record.", field)
	}
	delete(m, field)
	rest, err := json.Marshal(m)
	if err != nil {
		return "", nil, err
	}
	return id, rest, nil
}

func listResult[T any](data []T, more bool) map[string]any {
	if data == nil {
		data = []T{}
	}
	return map[string]any{"object": "list", "data": data, "has_more": more}
}

func encode[T any](v T, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func compact(raw json.RawMessage) json.RawMessage {
	var b []byte
	var m any
	if json.Unmarshal(raw, &m) == nil {
		b, _ = json.Marshal(m)
	}
	if b == nil {
		return raw
	}
	return b
}

func joinNames() string {
	s := ""
	for i, n := range ToolNames() {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// Toolbox returns the tools of assistant a for an engine answering in a
// conversation: an ams.Toolbox whose failed runs are recorded as failed
// actions (the engine reads the error and may try again), not returned as
// errors.
func (s *Service) Toolbox(userID string, a *ams.Assistant, conversationID string) ams.Toolbox {
	return &toolbox{s: s, userID: userID, a: a, conv: conversationID}
}

type toolbox struct {
	s      *Service
	userID string
	a      *ams.Assistant
	conv   string

	once sync.Once
	mcp  []*ams.Integration // the account's MCP integrations, read once
}

// integrations returns the account's MCP integrations (connected or
// error), read on first use.
func (b *toolbox) integrations() []*ams.Integration {
	b.once.Do(func() {
		if b.s.MCP == nil {
			return
		}
		// Specs has no context: the read is bounded on its own.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ins, err := b.s.Store.AccountIntegrations(ctx, b.userID, ams.ProviderMCP)
		if err != nil {
			slog.Error("read the MCP integrations for a toolbox", "user_id", b.userID, "err", err)
			return
		}
		b.mcp = ins
	})
	return b.mcp
}

// Specs lists the built-in tools, then the tools of the account's MCP
// integrations, each named <integration>__<tool>, in the order the
// integrations were connected and their servers listed them.
func (b *toolbox) Specs() []ams.ToolSpec {
	out := slices.Clone(Specs)
	for _, in := range b.integrations() {
		if in.MCPSettings == nil {
			continue
		}
		for _, t := range in.MCPSettings.Tools {
			out = append(out, ams.ToolSpec{Name: in.MCPSettings.Name + ams.MCPToolSeparator + t.Name, Description: t.Description, Parameters: t.InputSchema})
		}
	}
	return out
}

// NeedsApproval reports whether a call of tool name (as Specs names it)
// must be approved before it runs: an MCP integration's tool that its
// require_approval covers. (The assistant's own require_approval is the
// turn's to add.)
func (b *toolbox) NeedsApproval(name string) bool {
	if !isMCPTool(name) {
		return false
	}
	prefix, _, _ := strings.Cut(name, ams.MCPToolSeparator)
	for _, in := range b.integrations() {
		if in.MCPSettings != nil && in.MCPSettings.Name == prefix {
			return in.MCPSettings.NeedsApproval(name)
		}
	}
	return false
}

// Run implements ams.Toolbox.
func (b *toolbox) Run(ctx context.Context, name string, input json.RawMessage) (*ams.Action, error) {
	act, err := b.s.RunAction(ctx, b.userID, b.a, b.conv, name, input)
	if err == nil {
		return act, nil
	}
	var ae *ams.Error
	if !errors.As(err, &ae) || ae.Kind == ams.EINTERNAL || ae.Kind == ams.EUNAVAILABLE {
		return nil, err
	}
	failed := &ams.Action{ID: ams.NewID(ams.PrefixAction), Object: "action", UserID: b.userID, AssistantID: b.a.ID,
		ConversationID: b.conv, Type: name, Input: compactOrString(input), Status: ams.ActionFailed,
		Error: ams.ActionErrorOf(ae), CreatedAt: b.s.now()}
	call := ams.ToolCallFrom(ctx)
	failed.TurnID, failed.CallSeq = call.TurnID, call.Seq
	if err := b.s.Store.Update(ctx, func(tx ams.Tx) error { return tx.CreateAction(ctx, failed) }); err != nil {
		return nil, err
	}
	return failed, nil
}

// compactOrString keeps a model's input as JSON, or as a JSON string when
// it was not valid JSON, so that the record shows what was sent.
func compactOrString(raw json.RawMessage) json.RawMessage {
	if json.Valid(raw) {
		return compact(raw)
	}
	b, _ := json.Marshal(string(raw))
	return b
}
