// Package world is the service layer of the assistant's world: tasks,
// calendar events and the actions (tool runs) that change them. The HTTP
// API, the assistants' tools and the engines all go through it, so a task
// is validated, stored and announced the same way whoever creates it.
//
// Every change is written with its events in one transaction
// (ams.WorldStore.Update): task.created, task.updated, task.completed,
// event.created, event.updated. Input is JSON read field by field, so that
// an error names the field at fault; on any error nothing is written.
package world

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/amsdev/ams"
)

// Store is what the service needs of the storage engine.
type Store interface {
	ams.WorldStore
	// ListIntegrations lists the account's integrations (to find its
	// calendar feeds).
	ListIntegrations(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Integration], error)
}

// Service runs the operations of the assistant's world: tasks, calendar
// events and actions, assistants (assistants.go) and integrations
// (integrations.go).
type Service struct {
	// Store is where the world is kept; give it the store Watch returns,
	// so that changes wake the reminder and calendar workers.
	Store Store
	// Clock is the service clock (nil: the wall clock).
	Clock ams.Clock
	// Integrations connects and syncs integrations, by provider
	// ("caldav"); Connect refuses the others.
	Integrations map[string]Integrator
	// MCP talks to the servers of MCP integrations (provider "mcp");
	// nil: that provider is refused.
	MCP MCPClient
}

// Task fields accepted on create and update.
var (
	taskCreateFields = []string{"title", "notes", "due_at", "remind_at"}
	taskUpdateFields = []string{"title", "notes", "due_at", "remind_at"}
	eventFields      = []string{"title", "description", "location", "starts_at", "ends_at", "remind_at"}
)

// DefaultEventLength is an event's length when it is created without
// ends_at.
const DefaultEventLength = time.Hour

// now returns the service clock's time at the stores' precision.
func (s *Service) now() time.Time { return s.Clock.Now().UTC().Truncate(time.Millisecond) }

// CreateTask creates a task of assistantID from a JSON input with the
// fields title (required), notes, due_at and remind_at. prefix is put
// before field names in errors ("input." for a tool's input). When
// assistantID is "", the input must name it in "assistant_id" (the HTTP
// API's form).
func (s *Service) CreateTask(ctx context.Context, userID, assistantID string, input json.RawMessage, prefix string) (*ams.Task, error) {
	fields := taskCreateFields
	if assistantID == "" {
		fields = append([]string{"assistant_id", "metadata"}, fields...)
	}
	o, err := parseObject(input, prefix, fields...)
	if err != nil {
		return nil, err
	}
	if assistantID == "" {
		assistantID, _ = o.str("assistant_id", true, 0)
	}
	title, _ := o.str("title", true, MaxTitle)
	notes, _ := o.str("notes", false, MaxText)
	due := o.time("due_at", true)
	remind := o.time("remind_at", true)
	md := o.metadata(ams.Metadata{})
	if o.err != nil {
		return nil, o.err
	}
	now := s.now()
	t := &ams.Task{Metadata: md, ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: userID, AssistantID: assistantID,
		Title: strings.TrimSpace(title), Notes: notes, Status: ams.TaskOpen, DueAt: due.Value, RemindAt: remind.Value,
		CreatedAt: now, UpdatedAt: now}
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		if _, err := tx.FindAssistant(ctx, userID, assistantID); err != nil {
			return ams.WithParam(err, prefix+"assistant_id")
		}
		if err := tx.CreateTask(ctx, t); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.TaskEvent(ams.EventTaskCreated, t, now))
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// UpdateTask changes the fields of task id that the JSON input names
// (title, notes, due_at, remind_at; null clears a time) and emits
// task.updated. An input that changes nothing emits nothing.
func (s *Service) UpdateTask(ctx context.Context, userID, id string, input json.RawMessage, prefix string) (*ams.Task, error) {
	o, err := parseObject(input, prefix, apiFields(prefix, taskUpdateFields)...)
	if err != nil {
		return nil, err
	}
	title, hasTitle := o.str("title", false, MaxTitle)
	if hasTitle && strings.TrimSpace(title) == "" {
		o.fail("parameter_invalid", "title", "The field 'title' must not be empty.")
	}
	notes, hasNotes := o.str("notes", false, MaxText)
	hasNotes = hasNotes || o.isNull("notes") // null clears, as "" does
	if o.has("title") && o.isNull("title") {
		o.fail("parameter_invalid", "title", "The field 'title' must be a string, not null.")
	}
	due := o.time("due_at", true)
	remind := o.time("remind_at", true)
	meta := o.metadataPatch()
	if o.err != nil {
		return nil, o.err
	}
	var out *ams.Task
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		t, err := tx.FindTask(ctx, userID, id)
		if err != nil {
			return err
		}
		before := *t
		was := ams.TaskEvent(ams.EventTaskUpdated, t, t.UpdatedAt)
		if hasTitle {
			t.Title = strings.TrimSpace(title)
		}
		if hasNotes {
			t.Notes = notes
		}
		if due.Set {
			t.DueAt = due.Value
		}
		if remind.Set {
			t.RemindAt = remind.Value
		}
		if t.Metadata, err = meta.Merge(t.Metadata, prefix+"metadata"); err != nil {
			return err
		}
		out = t
		if taskEqual(&before, t) {
			return nil
		}
		now := s.now()
		t.UpdatedAt = now
		if err := tx.UpdateTask(ctx, t); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.TaskEvent(ams.EventTaskUpdated, t, now).Since(was))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CompleteTask marks task id completed and emits task.completed. A task
// already completed is returned as it is, with no event.
func (s *Service) CompleteTask(ctx context.Context, userID, id string) (*ams.Task, error) {
	var out *ams.Task
	err := s.Store.Update(ctx, func(tx ams.Tx) error {
		t, err := tx.FindTask(ctx, userID, id)
		if err != nil {
			return err
		}
		out = t
		if t.Status == ams.TaskCompleted {
			return nil
		}
		now := s.now()
		t.Status, t.CompletedAt, t.UpdatedAt = ams.TaskCompleted, &now, now
		if err := tx.UpdateTask(ctx, t); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.TaskEvent(ams.EventTaskCompleted, t, now))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteTask deletes task id and emits task.deleted (an addition to the
// interface's event types), whose data is the task as it was.
func (s *Service) DeleteTask(ctx context.Context, userID, id string) error {
	return s.Store.Update(ctx, func(tx ams.Tx) error {
		t, err := tx.FindTask(ctx, userID, id)
		if err != nil {
			return err
		}
		if err := tx.DeleteTask(ctx, userID, id); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.TaskEvent(ams.EventTaskDeleted, t, s.now()))
	})
}

// CreateEvent creates a calendar event of assistantID from a JSON input
// with title and starts_at (required), ends_at (default starts_at + 1 h,
// must be after starts_at), description, location and remind_at. When
// assistantID is "" the input must name it in "assistant_id".
func (s *Service) CreateEvent(ctx context.Context, userID, assistantID string, input json.RawMessage, prefix string) (*ams.CalendarEvent, error) {
	fields := eventFields
	if assistantID == "" {
		fields = append([]string{"assistant_id", "metadata"}, fields...)
	}
	o, err := parseObject(input, prefix, fields...)
	if err != nil {
		return nil, err
	}
	if assistantID == "" {
		assistantID, _ = o.str("assistant_id", true, 0)
	}
	title, _ := o.str("title", true, MaxTitle)
	desc, _ := o.str("description", false, MaxText)
	place, _ := o.str("location", false, MaxPlace)
	starts := o.time("starts_at", false)
	if !starts.Set {
		o.fail("parameter_missing", "starts_at", "The field 'starts_at' is required.")
	}
	ends := o.time("ends_at", false)
	remind := o.time("remind_at", true)
	md := o.metadata(ams.Metadata{})
	if o.err != nil {
		return nil, o.err
	}
	end := starts.Value.Add(DefaultEventLength)
	if ends.Set {
		end = *ends.Value
	}
	if !end.After(*starts.Value) {
		return nil, ams.ParamError("parameter_invalid", prefix+"ends_at", "The event must end after it starts: ends_at %s is not after starts_at %s.",
			end.Format(time.RFC3339), starts.Value.Format(time.RFC3339))
	}
	now := s.now()
	e := &ams.CalendarEvent{Metadata: md, ID: ams.NewID(ams.PrefixCalendar), Object: "calendar_event", UserID: userID, AssistantID: assistantID,
		Title: strings.TrimSpace(title), Description: desc, Location: place, StartsAt: *starts.Value, EndsAt: end, RemindAt: remind.Value,
		CreatedAt: now, UpdatedAt: now}
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		if _, err := tx.FindAssistant(ctx, userID, assistantID); err != nil {
			return ams.WithParam(err, prefix+"assistant_id")
		}
		if err := tx.CreateCalendarEvent(ctx, e); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.CalendarEventEvent(ams.EventEventCreated, e, now))
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// UpdateEvent changes the fields of calendar event id that the JSON input
// names and emits event.updated. Moving starts_at alone keeps the event's
// length; the result must still end after it starts.
func (s *Service) UpdateEvent(ctx context.Context, userID, id string, input json.RawMessage, prefix string) (*ams.CalendarEvent, error) {
	o, err := parseObject(input, prefix, apiFields(prefix, eventFields)...)
	if err != nil {
		return nil, err
	}
	if o.isNull("title") {
		o.fail("parameter_invalid", "title", "The field 'title' must be a string, not null.")
	}
	title, hasTitle := o.str("title", false, MaxTitle)
	if hasTitle && strings.TrimSpace(title) == "" {
		o.fail("parameter_invalid", "title", "The field 'title' must not be empty.")
	}
	desc, hasDesc := o.str("description", false, MaxText)
	place, hasPlace := o.str("location", false, MaxPlace)
	// null clears a text field, as "" does.
	hasDesc = hasDesc || o.isNull("description")
	hasPlace = hasPlace || o.isNull("location")
	starts := o.time("starts_at", false)
	ends := o.time("ends_at", false)
	remind := o.time("remind_at", true)
	meta := o.metadataPatch()
	if o.err != nil {
		return nil, o.err
	}
	var out *ams.CalendarEvent
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		e, err := tx.FindCalendarEvent(ctx, userID, id)
		if err != nil {
			return err
		}
		before := *e
		was := ams.CalendarEventEvent(ams.EventEventUpdated, e, e.UpdatedAt)
		if hasTitle {
			e.Title = strings.TrimSpace(title)
		}
		if hasDesc {
			e.Description = desc
		}
		if hasPlace {
			e.Location = place
		}
		if starts.Set {
			length := e.EndsAt.Sub(e.StartsAt)
			e.StartsAt = *starts.Value
			if !ends.Set {
				e.EndsAt = e.StartsAt.Add(length)
			}
		}
		if ends.Set {
			e.EndsAt = *ends.Value
		}
		if !e.EndsAt.After(e.StartsAt) {
			return ams.ParamError("parameter_invalid", prefix+"ends_at", "The event must end after it starts: ends_at %s is not after starts_at %s.",
				e.EndsAt.Format(time.RFC3339), e.StartsAt.Format(time.RFC3339))
		}
		if remind.Set {
			e.RemindAt = remind.Value
		}
		if e.Metadata, err = meta.Merge(e.Metadata, prefix+"metadata"); err != nil {
			return err
		}
		out = e
		if eventEqual(&before, e) {
			return nil
		}
		now := s.now()
		e.UpdatedAt = now
		if err := tx.UpdateCalendarEvent(ctx, e); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.CalendarEventEvent(ams.EventEventUpdated, e, now).Since(was))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteEvent deletes calendar event id and emits event.deleted (an
// addition to the interface's event types), whose data is the event as it
// was, with deleted_at and deleted_by. The event stays restorable
// (RestoreEvent) for ams.EventRetention, as a deletion by a calendar sync
// does.
func (s *Service) DeleteEvent(ctx context.Context, userID, id string) error {
	return s.Store.Update(ctx, func(tx ams.Tx) error {
		e, err := tx.FindCalendarEvent(ctx, userID, id)
		if err != nil {
			return err
		}
		now := s.now()
		if err := tx.DeleteCalendarEvent(ctx, userID, id, ams.DeletedByAPI, now); err != nil {
			return err
		}
		// The data says it is restorable: deleted_at and deleted_by.
		e.DeletedAt, e.DeletedBy = &now, ams.DeletedByAPI
		return tx.Emit(ctx, ams.CalendarEventEvent(ams.EventEventDeleted, e, now))
	})
}

// RestoreEvent brings back deleted calendar event id (deleted through the
// API or by a calendar sync, within ams.EventRetention) and emits
// event.restored with it, in one transaction. An event of a calendar
// integration is written back to its calendar by the next sync, under its
// UID. ENOTFOUND for an unknown, live-and-unknown or purged id; ECONFLICT
// for a live event (calendar_event_not_deleted) or one whose calendar
// object came back as another event (calendar_event_uid_taken).
func (s *Service) RestoreEvent(ctx context.Context, userID, id string) (*ams.CalendarEvent, error) {
	var out *ams.CalendarEvent
	err := s.Store.Update(ctx, func(tx ams.Tx) error {
		now := s.now()
		e, err := tx.RestoreCalendarEvent(ctx, userID, id, now)
		if err != nil {
			return err
		}
		out = e
		return tx.Emit(ctx, ams.CalendarEventEvent(ams.EventEventRestored, e, now))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func taskEqual(a, b *ams.Task) bool {
	return a.Title == b.Title && a.Notes == b.Notes && timeEqual(a.DueAt, b.DueAt) && timeEqual(a.RemindAt, b.RemindAt) &&
		a.Metadata.Equal(b.Metadata)
}

func eventEqual(a, b *ams.CalendarEvent) bool {
	return a.Title == b.Title && a.Description == b.Description && a.Location == b.Location &&
		a.StartsAt.Equal(b.StartsAt) && a.EndsAt.Equal(b.EndsAt) && timeEqual(a.RemindAt, b.RemindAt) && a.Metadata.Equal(b.Metadata)
}

// apiFields adds metadata to the fields of an input of the API (prefix
// ""): it is the client's own, so the assistants' tools do not set it.
func apiFields(prefix string, fields []string) []string {
	if prefix != "" {
		return fields
	}
	return append([]string{"metadata"}, fields...)
}

func timeEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
