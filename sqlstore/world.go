package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/amsdev/ams"
)

// The assistant's world: tasks, calendar events, integrations, actions
// and reminders. Writes run in a transaction (ams.Tx) that checks what it
// can (ownership, a taken external UID) before writing: a statement that
// fails in PostgreSQL ends the transaction, and the ENOTFOUND and
// ECONFLICT answers must leave it usable, as in SQLite.

const taskCols = `id, user_id, assistant_id, title, notes, status, due_at, remind_at, reminded_at, completed_at, created_at, updated_at, metadata`

func scanTask(s scanner) (*ams.Task, error) {
	t := &ams.Task{Object: "task"}
	var due, remind, reminded, completed *int64
	var c, u int64
	var meta string
	if err := s.Scan(&t.ID, &t.UserID, &t.AssistantID, &t.Title, &t.Notes, &t.Status, &due, &remind, &reminded, &completed, &c, &u, &meta); err != nil {
		return nil, err
	}
	t.DueAt, t.RemindAt, t.RemindedAt, t.CompletedAt = fromNullMS(due), fromNullMS(remind), fromNullMS(reminded), fromNullMS(completed)
	t.CreatedAt, t.UpdatedAt = FromMS(c), FromMS(u)
	return t, scanMetadata(&t.Metadata, meta, "task", t.ID)
}

// FindTask returns the user's task (locked in a transaction); ENOTFOUND
// otherwise.
func (q *Queries) FindTask(ctx context.Context, userID, id string) (*ams.Task, error) {
	return findByID(ctx, q, q.s.points.tasks, userID, id)
}

// ListTasks returns a page of the user's tasks that pass f.
func (q *Queries) ListTasks(ctx context.Context, userID string, f ams.TaskFilter, p ams.ListParams) (*ams.Page[*ams.Task], error) {
	w := where("user_id = $1", userID)
	if f.AssistantID != "" {
		w.add("assistant_id = $?", f.AssistantID)
	}
	if f.Status != "" {
		w.add("status = $?", f.Status)
	}
	if f.DueAfter != nil {
		w.add("due_at >= $?", MS(*f.DueAfter))
	}
	if f.DueBefore != nil {
		w.add("due_at < $?", MS(*f.DueBefore))
	}
	return list(ctx, q, taskCols, "tasks", w, p, scanTask)
}

// CreateTask stores t; ENOTFOUND if its assistant is not the user's.
func (q *Queries) CreateTask(ctx context.Context, t *ams.Task) error {
	return q.inTx(ctx, func(q *Queries) error {
		if err := q.ownedAssistant(ctx, t.UserID, t.AssistantID); err != nil {
			return err
		}
		if _, err := q.w.Exec(ctx, `INSERT INTO tasks (`+taskCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			t.ID, t.UserID, t.AssistantID, t.Title, t.Notes, t.Status, nullMS(t.DueAt), nullMS(t.RemindAt), nullMS(t.RemindedAt),
			nullMS(t.CompletedAt), MS(t.CreatedAt), MS(t.UpdatedAt), ams.EncodeMetadata(t.Metadata)); err != nil {
			return q.conflict("insert task", err, "Task '%s' already exists.", t.ID)
		}
		return nil
	})
}

// keepReminded is the SET clause that keeps reminded_at when remind_at
// ($n, the new value) is unchanged and clears it otherwise, so that a new
// reminder fires.
func keepReminded(n string) string {
	return `reminded_at = CASE WHEN remind_at IS NOT DISTINCT FROM CAST(` + n + ` AS BIGINT) THEN reminded_at END, remind_at = ` + n
}

// UpdateTask writes t's title, notes, status, due_at, remind_at,
// completed_at, metadata and updated_at (its assistant and creation stay);
// reminded_at as keepReminded says. t.RemindedAt is set to the stored
// value.
func (q *Queries) UpdateTask(ctx context.Context, t *ams.Task) error {
	var reminded *int64
	err := q.w.QueryRow(ctx, `UPDATE tasks SET title = $1, notes = $2, status = $3, due_at = $4, `+keepReminded("$5")+`,
		completed_at = $6, updated_at = $7, metadata = $8 WHERE id = $9 AND user_id = $10 RETURNING reminded_at`,
		t.Title, t.Notes, t.Status, nullMS(t.DueAt), nullMS(t.RemindAt), nullMS(t.CompletedAt), MS(t.UpdatedAt),
		ams.EncodeMetadata(t.Metadata), t.ID, t.UserID).Scan(&reminded)
	if errors.Is(err, sql.ErrNoRows) {
		return ams.NotFound("task", t.ID)
	} else if err != nil {
		return q.fail("update task", err)
	}
	t.RemindedAt = fromNullMS(reminded)
	return nil
}

// DeleteTask deletes the user's task.
func (q *Queries) DeleteTask(ctx context.Context, userID, id string) error {
	n, err := q.exec(ctx, "delete task", `DELETE FROM tasks WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return err
	}
	return affected(n, "task", id)
}

// calendarEventCols are the columns of calendar_events. assistant_id and
// integration_id are NULL when empty.
const calendarEventCols = `id, user_id, assistant_id, title, description, location, starts_at, ends_at, remind_at, reminded_at,
	integration_id, external_uid, external_path, external_etag, created_at, updated_at, metadata, deleted_at, deleted_by`

func scanCalendarEvent(s scanner) (*ams.CalendarEvent, error) {
	e := &ams.CalendarEvent{Object: "calendar_event"}
	var assistant, integration *string
	var remind, reminded, deleted *int64
	var starts, ends, c, u int64
	var meta string
	if err := s.Scan(&e.ID, &e.UserID, &assistant, &e.Title, &e.Description, &e.Location, &starts, &ends, &remind, &reminded,
		&integration, &e.ExternalUID, &e.ExternalPath, &e.ExternalETag, &c, &u, &meta, &deleted, &e.DeletedBy); err != nil {
		return nil, err
	}
	e.DeletedAt = fromNullMS(deleted)
	e.AssistantID, e.IntegrationID = deref(assistant), deref(integration)
	e.StartsAt, e.EndsAt, e.CreatedAt, e.UpdatedAt = FromMS(starts), FromMS(ends), FromMS(c), FromMS(u)
	e.RemindAt, e.RemindedAt = fromNullMS(remind), fromNullMS(reminded)
	return e, scanMetadata(&e.Metadata, meta, "calendar_event", e.ID)
}

// FindCalendarEvent returns the user's live calendar event (locked in a
// transaction); ENOTFOUND otherwise, a deleted one included.
func (q *Queries) FindCalendarEvent(ctx context.Context, userID, id string) (*ams.CalendarEvent, error) {
	return findOne(ctx, q, scanCalendarEvent, "calendar_event", id,
		`SELECT `+calendarEventCols+` FROM calendar_events WHERE id = $1 AND user_id = $2 AND deleted_at IS NULL`+q.lock("FOR UPDATE"), id, userID)
}

// FindCalendarEventByUID returns the event the integration keeps under
// uid (locked in a transaction); ENOTFOUND if none.
func (q *Queries) FindCalendarEventByUID(ctx context.Context, userID, integrationID, uid string) (*ams.CalendarEvent, error) {
	return findOne(ctx, q, scanCalendarEvent, "calendar_event", uid,
		`SELECT `+calendarEventCols+` FROM calendar_events
		WHERE user_id = $1 AND integration_id = $2 AND external_uid = $3 AND external_uid <> '' AND deleted_at IS NULL`+q.lock("FOR UPDATE"),
		userID, integrationID, uid)
}

// ListCalendarEvents returns a page of the user's calendar events that
// pass f: the live ones, or with f.Deleted the deleted ones.
func (q *Queries) ListCalendarEvents(ctx context.Context, userID string, f ams.CalendarFilter, p ams.ListParams) (*ams.Page[*ams.CalendarEvent], error) {
	w := where("user_id = $1 AND deleted_at IS NULL", userID)
	if f.Deleted {
		w = where("user_id = $1 AND deleted_at IS NOT NULL", userID)
	}
	if f.AssistantID != "" {
		w.add("assistant_id = $?", f.AssistantID)
	}
	if f.StartsAfter != nil {
		w.add("ends_at > $?", MS(*f.StartsAfter))
	}
	if f.StartsBefore != nil {
		w.add("starts_at < $?", MS(*f.StartsBefore))
	}
	return list(ctx, q, calendarEventCols, "calendar_events", w, p, scanCalendarEvent)
}

// eventConflict is the error of a calendar event whose id or external UID
// is taken.
func eventConflict(e *ams.CalendarEvent) error {
	if e.ExternalUID != "" {
		return ams.Errorf(ams.ECONFLICT, "resource_exists", "Integration '%s' already has an event with UID '%s'.", e.IntegrationID, e.ExternalUID)
	}
	return ams.Errorf(ams.ECONFLICT, "resource_exists", "Calendar event '%s' already exists.", e.ID)
}

// checkEventRefs checks that an event's assistant (when assistant is
// true) and integration are the user's, that an external UID comes with
// its integration, and that no other event of the integration has the UID.
func (q *Queries) checkEventRefs(ctx context.Context, e *ams.CalendarEvent, assistant bool) error {
	if e.ExternalUID != "" && e.IntegrationID == "" {
		return ams.Errorf(ams.EINVALID, "parameter_invalid", "A calendar event with an external UID needs its integration.")
	}
	if assistant && e.AssistantID != "" {
		if err := q.ownedAssistant(ctx, e.UserID, e.AssistantID); err != nil {
			return err
		}
	}
	if e.IntegrationID != "" {
		ok, err := q.exists(ctx, "integration", `SELECT 1 FROM integrations WHERE id = $1 AND user_id = $2`, e.IntegrationID, e.UserID)
		if err != nil {
			return err
		}
		if !ok {
			return ams.NotFound("integration", e.IntegrationID)
		}
	}
	if e.ExternalUID != "" {
		taken, err := q.exists(ctx, "calendar event", `SELECT 1 FROM calendar_events
			WHERE user_id = $1 AND integration_id = $2 AND external_uid = $3 AND id <> $4 AND deleted_at IS NULL`, e.UserID, e.IntegrationID, e.ExternalUID, e.ID)
		if err != nil {
			return err
		}
		if taken {
			return eventConflict(e)
		}
	}
	return nil
}

// CreateCalendarEvent stores e; ENOTFOUND if its assistant or integration
// is not the user's, ECONFLICT if the integration already keeps an event
// under its external UID.
func (q *Queries) CreateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	return q.inTx(ctx, func(q *Queries) error {
		if err := q.checkEventRefs(ctx, e, true); err != nil {
			return err
		}
		// ON CONFLICT DO NOTHING: a UID taken by a concurrent transaction
		// since the check is ECONFLICT with the transaction still usable.
		n, err := q.exec(ctx, "insert calendar event", `INSERT INTO calendar_events (`+calendarEventCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, NULL, '') ON CONFLICT DO NOTHING`,
			e.ID, e.UserID, nullText(e.AssistantID), e.Title, e.Description, e.Location, MS(e.StartsAt), MS(e.EndsAt),
			nullMS(e.RemindAt), nullMS(e.RemindedAt), nullText(e.IntegrationID), e.ExternalUID, e.ExternalPath, e.ExternalETag,
			MS(e.CreatedAt), MS(e.UpdatedAt), ams.EncodeMetadata(e.Metadata))
		if err != nil {
			return err
		}
		if n == 0 {
			return eventConflict(e)
		}
		return nil
	})
}

// UpdateCalendarEvent writes e's fields except its assistant and
// creation; ENOTFOUND if its integration is not the user's, ECONFLICT if
// another event of the integration has its external UID. reminded_at as
// keepReminded says; e.RemindedAt is set to the stored value.
func (q *Queries) UpdateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	return q.inTx(ctx, func(q *Queries) error {
		if err := q.checkEventRefs(ctx, e, false); err != nil {
			return err
		}
		var reminded *int64
		err := q.w.QueryRow(ctx, `UPDATE calendar_events SET title = $1, description = $2, location = $3, starts_at = $4, ends_at = $5,
			`+keepReminded("$6")+`, integration_id = $7, external_uid = $8, external_path = $9, external_etag = $10, updated_at = $11,
			metadata = $12 WHERE id = $13 AND user_id = $14 AND deleted_at IS NULL RETURNING reminded_at`,
			e.Title, e.Description, e.Location, MS(e.StartsAt), MS(e.EndsAt), nullMS(e.RemindAt),
			nullText(e.IntegrationID), e.ExternalUID, e.ExternalPath, e.ExternalETag, MS(e.UpdatedAt), ams.EncodeMetadata(e.Metadata),
			e.ID, e.UserID).Scan(&reminded)
		if errors.Is(err, sql.ErrNoRows) {
			return ams.NotFound("calendar_event", e.ID)
		} else if err != nil {
			return q.conflict("update calendar event", err, "Integration '%s' already has an event with UID '%s'.", e.IntegrationID, e.ExternalUID)
		}
		e.RemindedAt = fromNullMS(reminded)
		return nil
	})
}

// DeleteCalendarEvent deletes the user's live calendar event: the row
// stays, marked deleted at at by by, until Purge removes it.
func (q *Queries) DeleteCalendarEvent(ctx context.Context, userID, id, by string, at time.Time) error {
	if by != ams.DeletedByAPI && by != ams.DeletedBySync {
		return fmt.Errorf("delete calendar event: unknown deleter %q", by)
	}
	n, err := q.exec(ctx, "delete calendar event", `UPDATE calendar_events SET deleted_at = $1, deleted_by = $2
		WHERE id = $3 AND user_id = $4 AND deleted_at IS NULL`, MS(at), by, id, userID)
	if err != nil {
		return err
	}
	return affected(n, "calendar_event", id)
}

// FindDeletedCalendarEventByUID returns the event that a sync of the
// integration deleted last under uid (locked in a transaction);
// ENOTFOUND if none.
func (q *Queries) FindDeletedCalendarEventByUID(ctx context.Context, userID, integrationID, uid string) (*ams.CalendarEvent, error) {
	return findOne(ctx, q, scanCalendarEvent, "calendar_event", uid,
		`SELECT `+calendarEventCols+` FROM calendar_events
		WHERE user_id = $1 AND integration_id = $2 AND external_uid = $3 AND external_uid <> ''
		AND deleted_at IS NOT NULL AND deleted_by = '`+ams.DeletedBySync+`' ORDER BY deleted_at DESC, seq DESC LIMIT 1`+q.lock("FOR UPDATE"),
		userID, integrationID, uid)
}

// RestoreCalendarEvent brings back the user's deleted calendar event; see
// ams.CalendarStore.
func (q *Queries) RestoreCalendarEvent(ctx context.Context, userID, id string, at time.Time) (*ams.CalendarEvent, error) {
	var out *ams.CalendarEvent
	err := q.inTx(ctx, func(q *Queries) error {
		e, err := findOne(ctx, q, scanCalendarEvent, "calendar_event", id,
			`SELECT `+calendarEventCols+` FROM calendar_events WHERE id = $1 AND user_id = $2`+q.lock("FOR UPDATE"), id, userID)
		if err != nil {
			return err
		}
		if e.DeletedAt == nil {
			return ams.Errorf(ams.ECONFLICT, "calendar_event_not_deleted", "Calendar event '%s' is not deleted.", id)
		}
		if e.ExternalUID != "" {
			taken, err := q.exists(ctx, "calendar event", `SELECT 1 FROM calendar_events
				WHERE user_id = $1 AND integration_id = $2 AND external_uid = $3 AND id <> $4 AND deleted_at IS NULL`,
				userID, e.IntegrationID, e.ExternalUID, e.ID)
			if err != nil {
				return err
			}
			if taken {
				return ams.Errorf(ams.ECONFLICT, "calendar_event_uid_taken",
					"Calendar event '%s' cannot be restored: its calendar object came back from the server as another event.", id)
			}
		}
		e.DeletedAt, e.DeletedBy, e.ExternalPath, e.ExternalETag, e.UpdatedAt = nil, "", "", "", at
		if e.RemindAt != nil && e.RemindedAt == nil && !e.RemindAt.After(at) {
			e.RemindedAt = &at // came due while deleted: not rung late
		}
		if _, err := q.exec(ctx, "restore calendar event", `UPDATE calendar_events SET deleted_at = NULL, deleted_by = '',
			external_path = '', external_etag = '', updated_at = $1, reminded_at = $2 WHERE id = $3 AND user_id = $4`,
			MS(at), nullMS(e.RemindedAt), id, userID); err != nil {
			return err
		}
		out = e
		return nil
	})
	return out, err
}

const actionCols = `id, user_id, assistant_id, conversation_id, type, input, status, result, error, created_at, turn_id, call_seq, duration_ms`

func scanAction(s scanner) (*ams.Action, error) {
	a := &ams.Action{Object: "action"}
	var input, result, actErr []byte
	var c int64
	var turn *string
	var call *int64
	if err := s.Scan(&a.ID, &a.UserID, &a.AssistantID, &a.ConversationID, &a.Type, &input, &a.Status, &result, &actErr, &c, &turn, &call, &a.DurationMS); err != nil {
		return nil, err
	}
	a.CreatedAt = FromMS(c)
	a.TurnID = deref(turn)
	if call != nil {
		a.CallSeq = int(*call)
	}
	a.Input = json.RawMessage(input)
	if result != nil {
		a.Result = json.RawMessage(result)
	}
	if actErr != nil {
		a.Error = &ams.ActionError{}
		if err := json.Unmarshal(actErr, a.Error); err != nil {
			return nil, fmt.Errorf("decode action error %s: %w", a.ID, err)
		}
	}
	return a, nil
}

// FindAction returns the user's action; ENOTFOUND otherwise.
func (q *Queries) FindAction(ctx context.Context, userID, id string) (*ams.Action, error) {
	return findByID(ctx, q, q.s.points.actions, userID, id)
}

// ListActions returns a page of the user's actions that pass f.
func (q *Queries) ListActions(ctx context.Context, userID string, f ams.ActionFilter, p ams.ListParams) (*ams.Page[*ams.Action], error) {
	w := where("user_id = $1", userID)
	if f.AssistantID != "" {
		w.add("assistant_id = $?", f.AssistantID)
	}
	if f.ConversationID != "" {
		w.add("conversation_id = $?", f.ConversationID)
	}
	return list(ctx, q, actionCols, "actions", w, p, scanAction)
}

// CreateAction stores a; ENOTFOUND if its assistant is not the user's,
// EINVALID if its input or result is not JSON. The JSON values are passed
// as text (SQLite would keep bytes as a BLOB): input as given ("null"
// when empty), result and error NULL when absent.
func (q *Queries) CreateAction(ctx context.Context, a *ams.Action) error {
	if len(a.Input) > 0 && !json.Valid(a.Input) {
		return ams.Errorf(ams.EINVALID, "parameter_invalid", "Action input is not JSON.")
	}
	if len(a.Result) > 0 && !json.Valid(a.Result) {
		return ams.Errorf(ams.EINVALID, "parameter_invalid", "Action result is not JSON.")
	}
	input := "null"
	if len(a.Input) > 0 {
		input = string(a.Input)
	}
	var result, actErr *string
	if len(a.Result) > 0 {
		s := string(a.Result)
		result = &s
	}
	if a.Error != nil {
		b, err := json.Marshal(a.Error)
		if err != nil {
			return fmt.Errorf("encode action: %w", err)
		}
		s := string(b)
		actErr = &s
	}
	return q.inTx(ctx, func(q *Queries) error {
		if err := q.ownedAssistant(ctx, a.UserID, a.AssistantID); err != nil {
			return err
		}
		var call *int64
		if a.TurnID != "" {
			n := int64(a.CallSeq)
			call = &n
		}
		if _, err := q.w.Exec(ctx, `INSERT INTO actions (`+actionCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			a.ID, a.UserID, a.AssistantID, a.ConversationID, a.Type, input, a.Status, result, actErr, MS(a.CreatedAt), nullText(a.TurnID), call, a.DurationMS); err != nil {
			if a.TurnID != "" && q.isUnique(err) {
				return ams.Errorf(ams.ECONFLICT, "turn_call_exists", "Call %d of turn '%s' was already run.", a.CallSeq, a.TurnID)
			}
			return q.conflict("insert action", err, "Action '%s' already exists.", a.ID)
		}
		return nil
	})
}

// fireQuery marks at most $2 due reminders of a table fired and returns
// the records. On PostgreSQL SKIP LOCKED passes over rows that another
// caller is firing (or an Update holds); a row fired and committed
// meanwhile is re-checked once locked (reminded_at is no longer NULL) and
// left out, so each reminder fires once however many processes call.
func (q *Queries) fireQuery(table, cols, cond string) string {
	return `UPDATE ` + table + ` SET reminded_at = $1 WHERE seq IN (SELECT seq FROM ` + table + `
		WHERE remind_at <= $1 AND reminded_at IS NULL` + cond + ` ORDER BY remind_at LIMIT $2` + q.lock("FOR UPDATE SKIP LOCKED") + `)
		RETURNING ` + cols
}

// FireReminders emits the due reminders; see ams.ReminderStore. Tasks
// come first: calendar events fill what is left of limit (a caller that
// gets limit back calls again). The reminders are marked fired and their
// events written in one transaction.
func (q *Queries) FireReminders(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	fired := 0
	err := q.inTx(ctx, func(q *Queries) error {
		tasks, err := collect(ctx, q.w, "task reminders", scanTask, q.fireQuery("tasks", taskCols, " AND status = '"+ams.TaskOpen+"'"), MS(now), limit)
		if err != nil {
			return q.fail("fire task reminders", err)
		}
		slices.SortFunc(tasks, func(a, b *ams.Task) int { return cmp.Compare(MS(*a.RemindAt), MS(*b.RemindAt)) })
		var evs []*ams.CalendarEvent
		if len(tasks) < limit {
			if evs, err = collect(ctx, q.w, "event reminders", scanCalendarEvent, q.fireQuery("calendar_events", calendarEventCols, " AND deleted_at IS NULL"), MS(now), limit-len(tasks)); err != nil {
				return q.fail("fire event reminders", err)
			}
			slices.SortFunc(evs, func(a, b *ams.CalendarEvent) int { return cmp.Compare(MS(*a.RemindAt), MS(*b.RemindAt)) })
		}
		events := make([]*ams.Event, 0, len(tasks)+len(evs))
		for _, t := range tasks {
			events = append(events, ams.TaskEvent(ams.EventTaskReminder, t, now))
		}
		for _, e := range evs {
			events = append(events, ams.CalendarEventEvent(ams.EventEventReminder, e, now))
		}
		fired = len(events)
		return q.emit(ctx, nil, events)
	})
	return fired, err
}

// NextReminder returns the earliest remind_at still to fire; zero if none.
func (q *Queries) NextReminder(ctx context.Context) (time.Time, error) {
	var next *int64
	err := q.r.QueryRow(ctx, `SELECT min(m) FROM (
		SELECT min(remind_at) AS m FROM tasks WHERE remind_at IS NOT NULL AND reminded_at IS NULL AND status = '`+ams.TaskOpen+`'
		UNION ALL
		SELECT min(remind_at) AS m FROM calendar_events WHERE remind_at IS NOT NULL AND reminded_at IS NULL AND deleted_at IS NULL) AS due`).Scan(&next)
	if err != nil {
		return time.Time{}, q.fail("next reminder", err)
	}
	if next == nil {
		return time.Time{}, nil
	}
	return FromMS(*next), nil
}
