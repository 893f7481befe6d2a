package sqlite

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
	"github.com/amsdev/ams/internal/sqlrow"
)

// The assistant's world (ams.WorldStore). Writes go through Update, on the
// one write connection: its transaction begins IMMEDIATE, so it holds
// SQLite's write lock from the start and writers (of this process and of
// others) are serialized; the Find methods of the Tx therefore need no row
// locks to make a read-modify-write safe.

var _ ams.WorldStore = (*DB)(nil)

// Update runs fn in one write transaction; see ams.Tx. fn's error is
// returned unchanged (after rolling back). fn must not call the store's
// other writing methods: the write connection is fn's until it returns.
func (db *DB) Update(ctx context.Context, fn func(tx ams.Tx) error) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	wt := &worldTx{db: db, tx: tx}
	if err := fn(wt); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	db.signalJobs(wt.queued)
	return nil
}

// worldTx is the ams.Tx of an Update.
type worldTx struct {
	db     *DB
	tx     *sql.Tx
	queued int64 // delivery jobs queued by Emit
}

var _ ams.Tx = (*worldTx)(nil)

// affected returns ams.NotFound(object, id) when res changed no row.
func affected(res sql.Result, object, id string) error {
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ams.NotFound(object, id)
	}
	return nil
}

// findOne reads one record with scan, mapping no row to ams.NotFound.
func findOne[T any](ctx context.Context, q rowQuerier, scan func(scanner) (T, error), object, id, query string, args ...any) (T, error) {
	v, err := scan(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		var zero T
		return zero, ams.NotFound(object, id)
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("find %s: %w", object, err)
	}
	return v, nil
}

// ownedAssistant checks that the user has the (not deleted) assistant.
func (t *worldTx) ownedAssistant(ctx context.Context, userID, id string) error {
	var n int
	if err := t.tx.QueryRowContext(ctx, `SELECT count(*) FROM assistants WHERE id = ? AND user_id = ? AND deleted_at IS NULL`, id, userID).Scan(&n); err != nil {
		return fmt.Errorf("find assistant: %w", err)
	}
	if n == 0 {
		return ams.NotFound("assistant", id)
	}
	return nil
}

// ownedIntegration checks that the user has the integration.
func (t *worldTx) ownedIntegration(ctx context.Context, userID, id string) error {
	var n int
	if err := t.tx.QueryRowContext(ctx, `SELECT count(*) FROM integrations WHERE id = ? AND user_id = ?`, id, userID).Scan(&n); err != nil {
		return fmt.Errorf("find integration: %w", err)
	}
	if n == 0 {
		return ams.NotFound("integration", id)
	}
	return nil
}

// FindAssistant returns the user's assistant, unless deleted.
func (t *worldTx) FindAssistant(ctx context.Context, userID, id string) (*ams.Assistant, error) {
	return findOne(ctx, txQuerier{t.tx}, sqlrow.Assistant, "assistant", id,
		`SELECT `+sqlrow.AssistantCols+` FROM assistants WHERE id = ? AND user_id = ? AND deleted_at IS NULL`, id, userID)
}

// CreateAssistant stores a.
func (t *worldTx) CreateAssistant(ctx context.Context, a *ams.Assistant) error {
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO assistants (`+sqlrow.AssistantCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.UserID, a.Name, a.Description, a.Instructions, a.Model, ms(a.CreatedAt), ms(a.UpdatedAt)); err != nil {
		return fmt.Errorf("insert assistant: %w", err)
	}
	return nil
}

// UpdateAssistant writes a's name, description, instructions, model and
// updated_at.
func (t *worldTx) UpdateAssistant(ctx context.Context, a *ams.Assistant) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE assistants SET name = ?, description = ?, instructions = ?, model = ?, updated_at = ?
		WHERE id = ? AND user_id = ? AND deleted_at IS NULL`, a.Name, a.Description, a.Instructions, a.Model, ms(a.UpdatedAt), a.ID, a.UserID)
	if err != nil {
		return fmt.Errorf("update assistant: %w", err)
	}
	return affected(res, "assistant", a.ID)
}

// DeleteAssistant marks the assistant deleted at now.
func (t *worldTx) DeleteAssistant(ctx context.Context, userID, id string, now time.Time) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE assistants SET deleted_at = ?, updated_at = ? WHERE id = ? AND user_id = ? AND deleted_at IS NULL`,
		ms(now), ms(now), id, userID)
	if err != nil {
		return fmt.Errorf("delete assistant: %w", err)
	}
	return affected(res, "assistant", id)
}

// FindMessage returns the user's message.
func (t *worldTx) FindMessage(ctx context.Context, userID, id string) (*ams.Message, error) {
	return findOne(ctx, txQuerier{t.tx}, sqlrow.Message, "message", id,
		`SELECT `+sqlrow.MessageCols+` FROM messages WHERE id = ? AND user_id = ?`, id, userID)
}

// UpdateMessage writes m's content and updated_at.
func (t *worldTx) UpdateMessage(ctx context.Context, m *ams.Message) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE messages SET content = ?, updated_at = ? WHERE id = ? AND user_id = ?`,
		m.Content, ms(m.UpdatedAt), m.ID, m.UserID)
	if err != nil {
		return fmt.Errorf("update message: %w", err)
	}
	return affected(res, "message", m.ID)
}

// DeleteMessage deletes the message and counts it out of its
// conversation: message_count goes down by one, last_message_at becomes
// that of the latest message left (the conversation's creation when none).
func (t *worldTx) DeleteMessage(ctx context.Context, userID, id string, now time.Time) error {
	var conv string
	err := t.tx.QueryRowContext(ctx, `DELETE FROM messages WHERE id = ? AND user_id = ? RETURNING conversation_id`, id, userID).Scan(&conv)
	if errors.Is(err, sql.ErrNoRows) {
		return ams.NotFound("message", id)
	} else if err != nil {
		return fmt.Errorf("delete message: %w", err)
	}
	if _, err := t.tx.ExecContext(ctx, `UPDATE conversations SET message_count = max(message_count - 1, 0),
		last_message_at = coalesce((SELECT max(created_at) FROM messages WHERE conversation_id = conversations.id), created_at),
		updated_at = ? WHERE id = ?`, ms(now), conv); err != nil {
		return fmt.Errorf("count message out: %w", err)
	}
	return nil
}

// FindTask returns the user's task.
func (t *worldTx) FindTask(ctx context.Context, userID, id string) (*ams.Task, error) {
	return findOne(ctx, txQuerier{t.tx}, sqlrow.Task, "task", id, `SELECT `+sqlrow.TaskCols+` FROM tasks WHERE id = ? AND user_id = ?`, id, userID)
}

// CreateTask stores tk; ENOTFOUND if its assistant is not the user's.
func (t *worldTx) CreateTask(ctx context.Context, tk *ams.Task) error {
	if err := t.ownedAssistant(ctx, tk.UserID, tk.AssistantID); err != nil {
		return err
	}
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO tasks (`+sqlrow.TaskCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sqlrow.TaskArgs(tk)...); err != nil {
		if isUnique(err) {
			return ams.Errorf(ams.ECONFLICT, "resource_exists", "Task '%s' already exists.", tk.ID)
		}
		return fmt.Errorf("insert task: %w", err)
	}
	return nil
}

// UpdateTask writes tk's title, notes, status, due_at, remind_at,
// completed_at and updated_at (its assistant and creation stay). When
// remind_at differs from the stored one, reminded_at is cleared so that
// the new reminder fires; otherwise it is kept. tk.RemindedAt is set to
// the stored value.
func (t *worldTx) UpdateTask(ctx context.Context, tk *ams.Task) error {
	var reminded sql.NullInt64
	remind := sqlrow.NullMS(tk.RemindAt)
	err := t.tx.QueryRowContext(ctx, `UPDATE tasks SET title = ?, notes = ?, status = ?, due_at = ?,
		reminded_at = CASE WHEN remind_at IS ? THEN reminded_at END, remind_at = ?, completed_at = ?, updated_at = ?
		WHERE id = ? AND user_id = ? RETURNING reminded_at`,
		tk.Title, tk.Notes, tk.Status, sqlrow.NullMS(tk.DueAt), remind, remind, sqlrow.NullMS(tk.CompletedAt), ms(tk.UpdatedAt),
		tk.ID, tk.UserID).Scan(&reminded)
	if errors.Is(err, sql.ErrNoRows) {
		return ams.NotFound("task", tk.ID)
	} else if err != nil {
		return fmt.Errorf("update task: %w", err)
	}
	tk.RemindedAt = fromNullMS(reminded)
	return nil
}

// DeleteTask deletes the user's task.
func (t *worldTx) DeleteTask(ctx context.Context, userID, id string) error {
	res, err := t.tx.ExecContext(ctx, `DELETE FROM tasks WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return fmt.Errorf("delete task: %w", err)
	}
	return affected(res, "task", id)
}

// FindCalendarEvent returns the user's calendar event.
func (t *worldTx) FindCalendarEvent(ctx context.Context, userID, id string) (*ams.CalendarEvent, error) {
	return findOne(ctx, txQuerier{t.tx}, sqlrow.CalendarEvent, "calendar_event", id,
		`SELECT `+sqlrow.CalendarEventCols+` FROM calendar_events WHERE id = ? AND user_id = ?`, id, userID)
}

// FindCalendarEventByUID returns the event the integration keeps under uid.
func (t *worldTx) FindCalendarEventByUID(ctx context.Context, userID, integrationID, uid string) (*ams.CalendarEvent, error) {
	return findOne(ctx, txQuerier{t.tx}, sqlrow.CalendarEvent, "calendar_event", uid,
		`SELECT `+sqlrow.CalendarEventCols+` FROM calendar_events WHERE user_id = ? AND integration_id = ? AND external_uid = ? AND external_uid != ''`,
		userID, integrationID, uid)
}

// checkEventRefs checks that an event's assistant and integration (when
// set) are the user's, that an external UID comes with its integration,
// and that no other event (than id) of the integration has the UID.
func (t *worldTx) checkEventRefs(ctx context.Context, e *ams.CalendarEvent, assistant bool) error {
	if e.ExternalUID != "" && e.IntegrationID == "" {
		return ams.Errorf(ams.EINVALID, "parameter_invalid", "A calendar event with an external UID needs its integration.")
	}
	if assistant && e.AssistantID != "" {
		if err := t.ownedAssistant(ctx, e.UserID, e.AssistantID); err != nil {
			return err
		}
	}
	if e.IntegrationID != "" {
		if err := t.ownedIntegration(ctx, e.UserID, e.IntegrationID); err != nil {
			return err
		}
	}
	if e.ExternalUID != "" {
		var n int
		if err := t.tx.QueryRowContext(ctx, `SELECT count(*) FROM calendar_events WHERE user_id = ? AND integration_id = ? AND external_uid = ? AND id != ?`,
			e.UserID, e.IntegrationID, e.ExternalUID, e.ID).Scan(&n); err != nil {
			return fmt.Errorf("find calendar event: %w", err)
		}
		if n > 0 {
			return eventConflict(e)
		}
	}
	return nil
}

// CreateCalendarEvent stores e; ENOTFOUND if its assistant or integration
// is not the user's, ECONFLICT if the integration already keeps an event
// under its external UID.
func (t *worldTx) CreateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	if err := t.checkEventRefs(ctx, e, true); err != nil {
		return err
	}
	// ON CONFLICT DO NOTHING, as in PostgreSQL, where a failed statement
	// would end the transaction: a taken id leaves it usable in both.
	res, err := t.tx.ExecContext(ctx, `INSERT INTO calendar_events (`+sqlrow.CalendarEventCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, sqlrow.CalendarEventArgs(e)...)
	if err != nil {
		return fmt.Errorf("insert calendar event: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return eventConflict(e)
	}
	return nil
}

// eventConflict is the error of a calendar event whose id or external UID
// is taken.
func eventConflict(e *ams.CalendarEvent) error {
	if e.ExternalUID != "" {
		return ams.Errorf(ams.ECONFLICT, "resource_exists", "Integration '%s' already has an event with UID '%s'.", e.IntegrationID, e.ExternalUID)
	}
	return ams.Errorf(ams.ECONFLICT, "resource_exists", "Calendar event '%s' already exists.", e.ID)
}

// UpdateCalendarEvent writes e's fields except its assistant and
// creation; ENOTFOUND if its integration is not the user's, ECONFLICT if
// another event of the integration has its external UID. When remind_at differs from the stored one, reminded_at is
// cleared so that the new reminder fires; otherwise it is kept.
// e.RemindedAt is set to the stored value.
func (t *worldTx) UpdateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	if err := t.checkEventRefs(ctx, e, false); err != nil {
		return err
	}
	var reminded sql.NullInt64
	remind := sqlrow.NullMS(e.RemindAt)
	err := t.tx.QueryRowContext(ctx, `UPDATE calendar_events SET title = ?, description = ?, location = ?, starts_at = ?, ends_at = ?,
		reminded_at = CASE WHEN remind_at IS ? THEN reminded_at END, remind_at = ?,
		integration_id = ?, external_uid = ?, external_path = ?, external_etag = ?, updated_at = ?
		WHERE id = ? AND user_id = ? RETURNING reminded_at`,
		e.Title, e.Description, e.Location, ms(e.StartsAt), ms(e.EndsAt), remind, remind,
		sqlrow.NullText(e.IntegrationID), e.ExternalUID, e.ExternalPath, e.ExternalETag, ms(e.UpdatedAt), e.ID, e.UserID).Scan(&reminded)
	if errors.Is(err, sql.ErrNoRows) {
		return ams.NotFound("calendar_event", e.ID)
	} else if err != nil {
		return fmt.Errorf("update calendar event: %w", err)
	}
	e.RemindedAt = fromNullMS(reminded)
	return nil
}

// DeleteCalendarEvent deletes the user's calendar event.
func (t *worldTx) DeleteCalendarEvent(ctx context.Context, userID, id string) error {
	res, err := t.tx.ExecContext(ctx, `DELETE FROM calendar_events WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return fmt.Errorf("delete calendar event: %w", err)
	}
	return affected(res, "calendar_event", id)
}

// FindIntegration returns the user's integration.
func (t *worldTx) FindIntegration(ctx context.Context, userID, id string) (*ams.Integration, error) {
	return findOne(ctx, txQuerier{t.tx}, scanIntegration, "integration", id,
		`SELECT `+sqlrow.IntegrationCols+` FROM integrations WHERE id = ? AND user_id = ?`, id, userID)
}

func configJSON(in *ams.Integration) (string, error) {
	if in.Config == nil {
		return "{}", nil
	}
	b, err := json.Marshal(in.Config)
	if err != nil {
		return "", fmt.Errorf("encode integration config: %w", err)
	}
	return string(b), nil
}

// CreateIntegration stores in with its secrets sealed (bound to its id).
func (t *worldTx) CreateIntegration(ctx context.Context, in *ams.Integration, secrets map[string]string) error {
	config, err := configJSON(in)
	if err != nil {
		return err
	}
	plain, err := sqlrow.SecretsJSON(secrets)
	if err != nil {
		return fmt.Errorf("encode integration secrets: %w", err)
	}
	var sealed any
	if plain != "" {
		sealed = t.db.sealer.Seal(plain, in.ID)
	}
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO integrations (`+sqlrow.IntegrationCols+`, secrets) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		in.ID, in.UserID, in.Provider, in.Status, config, in.LastError, ms(in.ConnectedAt), ms(in.CreatedAt), ms(in.UpdatedAt), sealed); err != nil {
		if isUnique(err) {
			return ams.Errorf(ams.ECONFLICT, "resource_exists", "Integration '%s' already exists.", in.ID)
		}
		return fmt.Errorf("insert integration: %w", err)
	}
	return nil
}

// UpdateIntegration writes in's status, config, last error, connected_at
// and updated_at; its secrets stay.
func (t *worldTx) UpdateIntegration(ctx context.Context, in *ams.Integration) error {
	config, err := configJSON(in)
	if err != nil {
		return err
	}
	res, err := t.tx.ExecContext(ctx, `UPDATE integrations SET status = ?, config = ?, last_error = ?, connected_at = ?, updated_at = ?
		WHERE id = ? AND user_id = ?`, in.Status, config, in.LastError, ms(in.ConnectedAt), ms(in.UpdatedAt), in.ID, in.UserID)
	if err != nil {
		return fmt.Errorf("update integration: %w", err)
	}
	return affected(res, "integration", in.ID)
}

// CreateAction stores a; ENOTFOUND if its assistant is not the user's,
// EINVALID if its input or result is not JSON.
func (t *worldTx) CreateAction(ctx context.Context, a *ams.Action) error {
	if err := validActionJSON(a); err != nil {
		return err
	}
	if err := t.ownedAssistant(ctx, a.UserID, a.AssistantID); err != nil {
		return err
	}
	args, err := sqlrow.ActionArgs(a)
	if err != nil {
		return fmt.Errorf("encode action: %w", err)
	}
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO actions (`+sqlrow.ActionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
		if isUnique(err) {
			return ams.Errorf(ams.ECONFLICT, "resource_exists", "Action '%s' already exists.", a.ID)
		}
		return fmt.Errorf("insert action: %w", err)
	}
	return nil
}

// validActionJSON checks what PostgreSQL's JSON columns would refuse, so
// that both engines accept the same actions.
func validActionJSON(a *ams.Action) error {
	if len(a.Input) > 0 && !json.Valid(a.Input) {
		return ams.Errorf(ams.EINVALID, "parameter_invalid", "Action input is not JSON.")
	}
	if len(a.Result) > 0 && !json.Valid(a.Result) {
		return ams.Errorf(ams.EINVALID, "parameter_invalid", "Action result is not JSON.")
	}
	return nil
}

// Emit writes events into the outbox and queues their deliveries; the
// worker is woken after the commit.
func (t *worldTx) Emit(ctx context.Context, events ...*ams.Event) error {
	n, err := insertEvents(ctx, t.tx, events)
	if err != nil {
		return err
	}
	t.queued += n
	return nil
}

// FindTask returns the user's task; ENOTFOUND otherwise.
func (db *DB) FindTask(ctx context.Context, userID, id string) (*ams.Task, error) {
	return findOne(ctx, &db.rq, sqlrow.Task, "task", id, `SELECT `+sqlrow.TaskCols+` FROM tasks WHERE id = ? AND user_id = ?`, id, userID)
}

// ListTasks returns a page of the user's tasks that pass f.
func (db *DB) ListTasks(ctx context.Context, userID string, f ams.TaskFilter, p ams.ListParams) (*ams.Page[*ams.Task], error) {
	where, args := "user_id = ?", []any{userID}
	if f.AssistantID != "" {
		where, args = where+" AND assistant_id = ?", append(args, f.AssistantID)
	}
	if f.Status != "" {
		where, args = where+" AND status = ?", append(args, f.Status)
	}
	if f.DueAfter != nil {
		where, args = where+" AND due_at >= ?", append(args, ms(*f.DueAfter))
	}
	if f.DueBefore != nil {
		where, args = where+" AND due_at < ?", append(args, ms(*f.DueBefore))
	}
	return list(ctx, &db.rq, sqlrow.TaskCols, "tasks", where, args, p, sqlrow.Task)
}

// FindCalendarEvent returns the user's calendar event; ENOTFOUND otherwise.
func (db *DB) FindCalendarEvent(ctx context.Context, userID, id string) (*ams.CalendarEvent, error) {
	return findOne(ctx, &db.rq, sqlrow.CalendarEvent, "calendar_event", id,
		`SELECT `+sqlrow.CalendarEventCols+` FROM calendar_events WHERE id = ? AND user_id = ?`, id, userID)
}

// ListCalendarEvents returns a page of the user's calendar events that
// pass f.
func (db *DB) ListCalendarEvents(ctx context.Context, userID string, f ams.CalendarFilter, p ams.ListParams) (*ams.Page[*ams.CalendarEvent], error) {
	where, args := "user_id = ?", []any{userID}
	if f.AssistantID != "" {
		where, args = where+" AND assistant_id = ?", append(args, f.AssistantID)
	}
	if f.StartsAfter != nil {
		where, args = where+" AND ends_at > ?", append(args, ms(*f.StartsAfter))
	}
	if f.StartsBefore != nil {
		where, args = where+" AND starts_at < ?", append(args, ms(*f.StartsBefore))
	}
	return list(ctx, &db.rq, sqlrow.CalendarEventCols, "calendar_events", where, args, p, sqlrow.CalendarEvent)
}

// FindAction returns the user's action; ENOTFOUND otherwise.
func (db *DB) FindAction(ctx context.Context, userID, id string) (*ams.Action, error) {
	return findOne(ctx, &db.rq, sqlrow.Action, "action", id, `SELECT `+sqlrow.ActionCols+` FROM actions WHERE id = ? AND user_id = ?`, id, userID)
}

// ListActions returns a page of the user's actions, of one assistant when
// assistantID is set.
func (db *DB) ListActions(ctx context.Context, userID, assistantID string, p ams.ListParams) (*ams.Page[*ams.Action], error) {
	where, args := "user_id = ?", []any{userID}
	if assistantID != "" {
		where, args = where+" AND assistant_id = ?", append(args, assistantID)
	}
	return list(ctx, &db.rq, sqlrow.ActionCols, "actions", where, args, p, sqlrow.Action)
}

// FindIntegration returns the user's integration; ENOTFOUND otherwise.
func (db *DB) FindIntegration(ctx context.Context, userID, id string) (*ams.Integration, error) {
	return findOne(ctx, &db.rq, scanIntegration, "integration", id,
		`SELECT `+sqlrow.IntegrationCols+` FROM integrations WHERE id = ? AND user_id = ?`, id, userID)
}

// IntegrationSecrets returns the unsealed secrets of the user's
// integration (empty when it has none); ENOTFOUND otherwise.
func (db *DB) IntegrationSecrets(ctx context.Context, userID, id string) (map[string]string, error) {
	var sealed sql.NullString
	err := db.rq.QueryRowContext(ctx, `SELECT secrets FROM integrations WHERE id = ? AND user_id = ?`, id, userID).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("integration", id)
	} else if err != nil {
		return nil, fmt.Errorf("find integration: %w", err)
	}
	var plain string
	if sealed.Valid {
		if plain, err = db.sealer.Open(sealed.String, id); err != nil {
			return nil, fmt.Errorf("integration %s: %w", id, err)
		}
	}
	return sqlrow.DecodeSecrets(plain)
}

// ActiveIntegrations returns the provider's integrations of every account
// whose status is connected or error, oldest first.
func (db *DB) ActiveIntegrations(ctx context.Context, provider string) ([]*ams.Integration, error) {
	rows, err := db.rq.QueryContext(ctx, `SELECT `+sqlrow.IntegrationCols+` FROM integrations
		WHERE provider = ? AND status IN ('connected', 'error') ORDER BY seq`, provider)
	if err != nil {
		return nil, fmt.Errorf("list integrations: %w", err)
	}
	defer rows.Close()
	var out []*ams.Integration
	for rows.Next() {
		in, err := scanIntegration(rows)
		if err != nil {
			return nil, fmt.Errorf("scan integration: %w", err)
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list integrations: %w", err)
	}
	return out, nil
}

// fireQuery marks due reminders of a table fired and returns the records.
func fireQuery(table, cols, cond string) string {
	return `UPDATE ` + table + ` SET reminded_at = ?1 WHERE seq IN (SELECT seq FROM ` + table + `
		WHERE remind_at <= ?1 AND reminded_at IS NULL` + cond + ` ORDER BY remind_at, seq LIMIT ?2) RETURNING ` + cols
}

// FireReminders emits the due reminders; see ams.WorldStore. Tasks come
// first: calendar events fill what is left of limit (a caller that gets
// limit back calls again). The write transaction serializes callers, so
// each reminder fires once.
func (db *DB) FireReminders(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	tasks, err := queryAll(ctx, tx, sqlrow.Task, fireQuery("tasks", sqlrow.TaskCols, " AND status = 'open'"), ms(now), limit)
	if err != nil {
		return 0, fmt.Errorf("fire task reminders: %w", err)
	}
	slices.SortFunc(tasks, func(a, b *ams.Task) int { return cmp.Compare(ms(*a.RemindAt), ms(*b.RemindAt)) })
	var evs []*ams.CalendarEvent
	if len(tasks) < limit {
		if evs, err = queryAll(ctx, tx, sqlrow.CalendarEvent, fireQuery("calendar_events", sqlrow.CalendarEventCols, ""), ms(now), limit-len(tasks)); err != nil {
			return 0, fmt.Errorf("fire event reminders: %w", err)
		}
		slices.SortFunc(evs, func(a, b *ams.CalendarEvent) int { return cmp.Compare(ms(*a.RemindAt), ms(*b.RemindAt)) })
	}
	events := make([]*ams.Event, 0, len(tasks)+len(evs))
	for _, t := range tasks {
		events = append(events, ams.TaskEvent(ams.EventTaskReminder, t, now))
	}
	for _, e := range evs {
		events = append(events, ams.CalendarEventEvent(ams.EventEventReminder, e, now))
	}
	queued, err := insertEvents(ctx, tx, events)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit reminders: %w", err)
	}
	db.signalJobs(queued)
	return len(events), nil
}

// queryAll runs query in tx and scans every row.
func queryAll[T any](ctx context.Context, tx *sql.Tx, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// NextReminder returns the earliest remind_at still to fire; zero if none.
func (db *DB) NextReminder(ctx context.Context) (time.Time, error) {
	var next sql.NullInt64
	err := db.rq.QueryRowContext(ctx, `SELECT min(m) FROM (
		SELECT min(remind_at) AS m FROM tasks WHERE remind_at IS NOT NULL AND reminded_at IS NULL AND status = 'open'
		UNION ALL
		SELECT min(remind_at) FROM calendar_events WHERE remind_at IS NOT NULL AND reminded_at IS NULL)`).Scan(&next)
	if err != nil {
		return time.Time{}, fmt.Errorf("next reminder: %w", err)
	}
	if !next.Valid {
		return time.Time{}, nil
	}
	return fromMS(next.Int64), nil
}
