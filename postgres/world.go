package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The assistant's world (ams.WorldStore). Update runs in one READ
// COMMITTED transaction; the Find methods of its Tx lock the row they read
// (FOR UPDATE) until it ends, so a read-modify-write cannot lose a
// concurrent update from another process. A statement that fails in
// PostgreSQL ends the transaction: the Tx methods check what they can
// (ownership, a taken external UID) before writing, so that their
// ENOTFOUND and ECONFLICT answers leave the transaction usable, as in
// SQLite. Other errors (a NUL character, a broken connection) mean fn
// must return.

var _ ams.WorldStore = (*DB)(nil)

// Update runs fn in one transaction; see ams.Tx. fn's error is returned
// unchanged (after rolling back).
func (db *DB) Update(ctx context.Context, fn func(tx ams.Tx) error) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	wt := &worldTx{db: db, tx: tx}
	if err := fn(wt); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	db.signalJobs(wt.queued)
	return nil
}

// worldTx is the ams.Tx of an Update.
type worldTx struct {
	db     *DB
	tx     pgx.Tx
	queued int64 // delivery jobs queued by Emit
}

var _ ams.Tx = (*worldTx)(nil)

// affected returns ams.NotFound(object, id) when tag changed no row.
func affected(tag pgconn.CommandTag, object, id string) error {
	if tag.RowsAffected() == 0 {
		return ams.NotFound(object, id)
	}
	return nil
}

// findOne reads one record with scan, mapping no row to ams.NotFound.
func findOne[T any](ctx context.Context, q querier, scan func(scanner) (T, error), object, id, query string, args ...any) (T, error) {
	v, err := scan(q.QueryRow(ctx, query, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		var zero T
		return zero, ams.NotFound(object, id)
	}
	if err != nil {
		var zero T
		return zero, fail("find "+object, err)
	}
	return v, nil
}

// exists runs a SELECT EXISTS query.
func (t *worldTx) exists(ctx context.Context, what, query string, args ...any) (bool, error) {
	var ok bool
	if err := t.tx.QueryRow(ctx, query, args...).Scan(&ok); err != nil {
		return false, fail("find "+what, err)
	}
	return ok, nil
}

// ownedAssistant checks that the user has the (not deleted) assistant.
func (t *worldTx) ownedAssistant(ctx context.Context, userID, id string) error {
	ok, err := t.exists(ctx, "assistant", `SELECT EXISTS (SELECT 1 FROM assistants WHERE id = $1 AND user_id = $2 AND deleted_at IS NULL)`, id, userID)
	if err == nil && !ok {
		err = ams.NotFound("assistant", id)
	}
	return err
}

// ownedIntegration checks that the user has the integration.
func (t *worldTx) ownedIntegration(ctx context.Context, userID, id string) error {
	ok, err := t.exists(ctx, "integration", `SELECT EXISTS (SELECT 1 FROM integrations WHERE id = $1 AND user_id = $2)`, id, userID)
	if err == nil && !ok {
		err = ams.NotFound("integration", id)
	}
	return err
}

// conflict maps a unique violation to ECONFLICT with message msg.
func conflict(op string, err error, msg string, args ...any) error {
	if code, _ := pgCode(err); code == codeUniqueViolation {
		return ams.Errorf(ams.ECONFLICT, "resource_exists", msg, args...)
	}
	return fail(op, err)
}

// FindAssistant returns the user's assistant, unless deleted, and locks it.
func (t *worldTx) FindAssistant(ctx context.Context, userID, id string) (*ams.Assistant, error) {
	return findOne(ctx, t.tx, sqlrow.Assistant, "assistant", id,
		`SELECT `+sqlrow.AssistantCols+` FROM assistants WHERE id = $1 AND user_id = $2 AND deleted_at IS NULL FOR UPDATE`, id, userID)
}

// CreateAssistant stores a.
func (t *worldTx) CreateAssistant(ctx context.Context, a *ams.Assistant) error {
	if _, err := t.tx.Exec(ctx, `INSERT INTO assistants (`+sqlrow.AssistantCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		a.ID, a.UserID, a.Name, a.Description, a.Instructions, a.Model, ms(a.CreatedAt), ms(a.UpdatedAt)); err != nil {
		return conflict("insert assistant", err, "Assistant '%s' already exists.", a.ID)
	}
	return nil
}

// UpdateAssistant writes a's name, description, instructions, model and
// updated_at.
func (t *worldTx) UpdateAssistant(ctx context.Context, a *ams.Assistant) error {
	tag, err := t.tx.Exec(ctx, `UPDATE assistants SET name = $1, description = $2, instructions = $3, model = $4, updated_at = $5
		WHERE id = $6 AND user_id = $7 AND deleted_at IS NULL`, a.Name, a.Description, a.Instructions, a.Model, ms(a.UpdatedAt), a.ID, a.UserID)
	if err != nil {
		return fail("update assistant", err)
	}
	return affected(tag, "assistant", a.ID)
}

// DeleteAssistant marks the assistant deleted at now.
func (t *worldTx) DeleteAssistant(ctx context.Context, userID, id string, now time.Time) error {
	tag, err := t.tx.Exec(ctx, `UPDATE assistants SET deleted_at = $1, updated_at = $1 WHERE id = $2 AND user_id = $3 AND deleted_at IS NULL`,
		ms(now), id, userID)
	if err != nil {
		return fail("delete assistant", err)
	}
	return affected(tag, "assistant", id)
}

// FindMessage returns the user's message and locks it.
func (t *worldTx) FindMessage(ctx context.Context, userID, id string) (*ams.Message, error) {
	return findOne(ctx, t.tx, sqlrow.Message, "message", id,
		`SELECT `+sqlrow.MessageCols+` FROM messages WHERE id = $1 AND user_id = $2 FOR UPDATE`, id, userID)
}

// UpdateMessage writes m's content and updated_at.
func (t *worldTx) UpdateMessage(ctx context.Context, m *ams.Message) error {
	tag, err := t.tx.Exec(ctx, `UPDATE messages SET content = $1, updated_at = $2 WHERE id = $3 AND user_id = $4`,
		m.Content, ms(m.UpdatedAt), m.ID, m.UserID)
	if err != nil {
		return fail("update message", err)
	}
	return affected(tag, "message", m.ID)
}

// DeleteMessage deletes the message and counts it out of its
// conversation: message_count goes down by one, last_message_at becomes
// that of the latest message left (the conversation's creation when none).
func (t *worldTx) DeleteMessage(ctx context.Context, userID, id string, now time.Time) error {
	var conv string
	err := t.tx.QueryRow(ctx, `DELETE FROM messages WHERE id = $1 AND user_id = $2 RETURNING conversation_id`, id, userID).Scan(&conv)
	if errors.Is(err, pgx.ErrNoRows) {
		return ams.NotFound("message", id)
	} else if err != nil {
		return fail("delete message", err)
	}
	if _, err := t.tx.Exec(ctx, `UPDATE conversations SET message_count = greatest(message_count - 1, 0),
		last_message_at = coalesce((SELECT max(m.created_at) FROM messages m WHERE m.conversation_id = conversations.id), created_at),
		updated_at = $1 WHERE id = $2`, ms(now), conv); err != nil {
		return fail("count message out", err)
	}
	return nil
}

// FindTask returns the user's task and locks it.
func (t *worldTx) FindTask(ctx context.Context, userID, id string) (*ams.Task, error) {
	return findOne(ctx, t.tx, sqlrow.Task, "task", id, `SELECT `+sqlrow.TaskCols+` FROM tasks WHERE id = $1 AND user_id = $2 FOR UPDATE`, id, userID)
}

// CreateTask stores tk; ENOTFOUND if its assistant is not the user's.
func (t *worldTx) CreateTask(ctx context.Context, tk *ams.Task) error {
	if err := t.ownedAssistant(ctx, tk.UserID, tk.AssistantID); err != nil {
		return err
	}
	if _, err := t.tx.Exec(ctx, `INSERT INTO tasks (`+sqlrow.TaskCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		sqlrow.TaskArgs(tk)...); err != nil {
		return conflict("insert task", err, "Task '%s' already exists.", tk.ID)
	}
	return nil
}

// UpdateTask writes tk's title, notes, status, due_at, remind_at,
// completed_at and updated_at (its assistant and creation stay). When
// remind_at differs from the stored one, reminded_at is cleared so that
// the new reminder fires; otherwise it is kept. tk.RemindedAt is set to
// the stored value.
func (t *worldTx) UpdateTask(ctx context.Context, tk *ams.Task) error {
	var reminded *int64
	err := t.tx.QueryRow(ctx, `UPDATE tasks SET title = $1, notes = $2, status = $3, due_at = $4,
		reminded_at = CASE WHEN remind_at IS NOT DISTINCT FROM $5::bigint THEN reminded_at END, remind_at = $5,
		completed_at = $6, updated_at = $7
		WHERE id = $8 AND user_id = $9 RETURNING reminded_at`,
		tk.Title, tk.Notes, tk.Status, nullMS(tk.DueAt), nullMS(tk.RemindAt), nullMS(tk.CompletedAt), ms(tk.UpdatedAt),
		tk.ID, tk.UserID).Scan(&reminded)
	if errors.Is(err, pgx.ErrNoRows) {
		return ams.NotFound("task", tk.ID)
	} else if err != nil {
		return fail("update task", err)
	}
	tk.RemindedAt = fromNullMS(reminded)
	return nil
}

// DeleteTask deletes the user's task.
func (t *worldTx) DeleteTask(ctx context.Context, userID, id string) error {
	tag, err := t.tx.Exec(ctx, `DELETE FROM tasks WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return fail("delete task", err)
	}
	return affected(tag, "task", id)
}

// FindCalendarEvent returns the user's calendar event and locks it.
func (t *worldTx) FindCalendarEvent(ctx context.Context, userID, id string) (*ams.CalendarEvent, error) {
	return findOne(ctx, t.tx, sqlrow.CalendarEvent, "calendar_event", id,
		`SELECT `+sqlrow.CalendarEventCols+` FROM calendar_events WHERE id = $1 AND user_id = $2 FOR UPDATE`, id, userID)
}

// FindCalendarEventByUID returns the event the integration keeps under
// uid and locks it.
func (t *worldTx) FindCalendarEventByUID(ctx context.Context, userID, integrationID, uid string) (*ams.CalendarEvent, error) {
	return findOne(ctx, t.tx, sqlrow.CalendarEvent, "calendar_event", uid,
		`SELECT `+sqlrow.CalendarEventCols+` FROM calendar_events
		WHERE user_id = $1 AND integration_id = $2 AND external_uid = $3 AND external_uid <> '' FOR UPDATE`,
		userID, integrationID, uid)
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
		taken, err := t.exists(ctx, "calendar event", `SELECT EXISTS (SELECT 1 FROM calendar_events
			WHERE user_id = $1 AND integration_id = $2 AND external_uid = $3 AND id <> $4)`, e.UserID, e.IntegrationID, e.ExternalUID, e.ID)
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
func (t *worldTx) CreateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	if err := t.checkEventRefs(ctx, e, true); err != nil {
		return err
	}
	// ON CONFLICT DO NOTHING: a UID taken by a concurrent transaction since
	// the check is ECONFLICT with the transaction still usable.
	tag, err := t.tx.Exec(ctx, `INSERT INTO calendar_events (`+sqlrow.CalendarEventCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT DO NOTHING`, sqlrow.CalendarEventArgs(e)...)
	if err != nil {
		return fail("insert calendar event", err)
	}
	if tag.RowsAffected() == 0 {
		return eventConflict(e)
	}
	return nil
}

// UpdateCalendarEvent writes e's fields except its assistant and
// creation; ENOTFOUND if its integration is not the user's, ECONFLICT if
// another event of the integration has its external UID. When remind_at
// differs from the stored one, reminded_at is cleared so that the new
// reminder fires; otherwise it is kept. e.RemindedAt is set to the stored
// value.
func (t *worldTx) UpdateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	if err := t.checkEventRefs(ctx, e, false); err != nil {
		return err
	}
	var reminded *int64
	err := t.tx.QueryRow(ctx, `UPDATE calendar_events SET title = $1, description = $2, location = $3, starts_at = $4, ends_at = $5,
		reminded_at = CASE WHEN remind_at IS NOT DISTINCT FROM $6::bigint THEN reminded_at END, remind_at = $6,
		integration_id = $7, external_uid = $8, external_path = $9, external_etag = $10, updated_at = $11
		WHERE id = $12 AND user_id = $13 RETURNING reminded_at`,
		e.Title, e.Description, e.Location, ms(e.StartsAt), ms(e.EndsAt), nullMS(e.RemindAt),
		sqlrow.NullText(e.IntegrationID), e.ExternalUID, e.ExternalPath, e.ExternalETag, ms(e.UpdatedAt), e.ID, e.UserID).Scan(&reminded)
	if errors.Is(err, pgx.ErrNoRows) {
		return ams.NotFound("calendar_event", e.ID)
	} else if err != nil {
		return conflict("update calendar event", err, "Integration '%s' already has an event with UID '%s'.", e.IntegrationID, e.ExternalUID)
	}
	e.RemindedAt = fromNullMS(reminded)
	return nil
}

// DeleteCalendarEvent deletes the user's calendar event.
func (t *worldTx) DeleteCalendarEvent(ctx context.Context, userID, id string) error {
	tag, err := t.tx.Exec(ctx, `DELETE FROM calendar_events WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return fail("delete calendar event", err)
	}
	return affected(tag, "calendar_event", id)
}

// FindIntegration returns the user's integration and locks it.
func (t *worldTx) FindIntegration(ctx context.Context, userID, id string) (*ams.Integration, error) {
	return findOne(ctx, t.tx, scanIntegration, "integration", id,
		`SELECT `+sqlrow.IntegrationCols+` FROM integrations WHERE id = $1 AND user_id = $2 FOR UPDATE`, id, userID)
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
	var sealed *string
	if plain != "" {
		s := t.db.sealer.Seal(plain, in.ID)
		sealed = &s
	}
	if _, err := t.tx.Exec(ctx, `INSERT INTO integrations (`+sqlrow.IntegrationCols+`, secrets) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		in.ID, in.UserID, in.Provider, in.Status, config, in.LastError, ms(in.ConnectedAt), ms(in.CreatedAt), ms(in.UpdatedAt), sealed); err != nil {
		return conflict("insert integration", err, "Integration '%s' already exists.", in.ID)
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
	tag, err := t.tx.Exec(ctx, `UPDATE integrations SET status = $1, config = $2, last_error = $3, connected_at = $4, updated_at = $5
		WHERE id = $6 AND user_id = $7`, in.Status, config, in.LastError, ms(in.ConnectedAt), ms(in.UpdatedAt), in.ID, in.UserID)
	if err != nil {
		return fail("update integration", err)
	}
	return affected(tag, "integration", in.ID)
}

// CreateAction stores a; ENOTFOUND if its assistant is not the user's,
// EINVALID if its input or result is not JSON.
func (t *worldTx) CreateAction(ctx context.Context, a *ams.Action) error {
	if len(a.Input) > 0 && !json.Valid(a.Input) {
		return ams.Errorf(ams.EINVALID, "parameter_invalid", "Action input is not JSON.")
	}
	if len(a.Result) > 0 && !json.Valid(a.Result) {
		return ams.Errorf(ams.EINVALID, "parameter_invalid", "Action result is not JSON.")
	}
	if err := t.ownedAssistant(ctx, a.UserID, a.AssistantID); err != nil {
		return err
	}
	args, err := sqlrow.ActionArgs(a)
	if err != nil {
		return fmt.Errorf("encode action: %w", err)
	}
	if _, err := t.tx.Exec(ctx, `INSERT INTO actions (`+sqlrow.ActionCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, args...); err != nil {
		return conflict("insert action", err, "Action '%s' already exists.", a.ID)
	}
	return nil
}

// Emit writes events into the outbox and queues their deliveries (the
// statements of SaveExchange, in one pipelined batch); the worker of this
// process is woken after the commit.
func (t *worldTx) Emit(ctx context.Context, events ...*ams.Event) error {
	b := &pgx.Batch{}
	if err := queueEvents(b, events); err != nil {
		return err
	}
	n, err := runBatch(ctx, t.tx, b, 0)
	if err != nil {
		return err
	}
	t.queued += n
	return nil
}

// FindTask returns the user's task; ENOTFOUND otherwise.
func (db *DB) FindTask(ctx context.Context, userID, id string) (*ams.Task, error) {
	return findOne(ctx, db.pool, sqlrow.Task, "task", id, `SELECT `+sqlrow.TaskCols+` FROM tasks WHERE id = $1 AND user_id = $2`, id, userID)
}

// filter builds a WHERE condition with numbered placeholders.
type filter struct {
	where string
	args  []any
}

func (f *filter) add(cond string, arg any) {
	f.args = append(f.args, arg)
	f.where += " AND " + cond + " $" + strconv.Itoa(len(f.args))
}

// ListTasks returns a page of the user's tasks that pass f.
func (db *DB) ListTasks(ctx context.Context, userID string, f ams.TaskFilter, p ams.ListParams) (*ams.Page[*ams.Task], error) {
	w := filter{"user_id = $1", []any{userID}}
	if f.AssistantID != "" {
		w.add("assistant_id =", f.AssistantID)
	}
	if f.Status != "" {
		w.add("status =", f.Status)
	}
	if f.DueAfter != nil {
		w.add("due_at >=", ms(*f.DueAfter))
	}
	if f.DueBefore != nil {
		w.add("due_at <", ms(*f.DueBefore))
	}
	return list(ctx, db.pool, sqlrow.TaskCols, "tasks", w.where, w.args, p, sqlrow.Task)
}

// FindCalendarEvent returns the user's calendar event; ENOTFOUND otherwise.
func (db *DB) FindCalendarEvent(ctx context.Context, userID, id string) (*ams.CalendarEvent, error) {
	return findOne(ctx, db.pool, sqlrow.CalendarEvent, "calendar_event", id,
		`SELECT `+sqlrow.CalendarEventCols+` FROM calendar_events WHERE id = $1 AND user_id = $2`, id, userID)
}

// ListCalendarEvents returns a page of the user's calendar events that
// pass f.
func (db *DB) ListCalendarEvents(ctx context.Context, userID string, f ams.CalendarFilter, p ams.ListParams) (*ams.Page[*ams.CalendarEvent], error) {
	w := filter{"user_id = $1", []any{userID}}
	if f.AssistantID != "" {
		w.add("assistant_id =", f.AssistantID)
	}
	if f.StartsAfter != nil {
		w.add("ends_at >", ms(*f.StartsAfter))
	}
	if f.StartsBefore != nil {
		w.add("starts_at <", ms(*f.StartsBefore))
	}
	return list(ctx, db.pool, sqlrow.CalendarEventCols, "calendar_events", w.where, w.args, p, sqlrow.CalendarEvent)
}

// FindAction returns the user's action; ENOTFOUND otherwise.
func (db *DB) FindAction(ctx context.Context, userID, id string) (*ams.Action, error) {
	return findOne(ctx, db.pool, sqlrow.Action, "action", id, `SELECT `+sqlrow.ActionCols+` FROM actions WHERE id = $1 AND user_id = $2`, id, userID)
}

// ListActions returns a page of the user's actions, of one assistant when
// assistantID is set.
func (db *DB) ListActions(ctx context.Context, userID, assistantID string, p ams.ListParams) (*ams.Page[*ams.Action], error) {
	w := filter{"user_id = $1", []any{userID}}
	if assistantID != "" {
		w.add("assistant_id =", assistantID)
	}
	return list(ctx, db.pool, sqlrow.ActionCols, "actions", w.where, w.args, p, sqlrow.Action)
}

// FindIntegration returns the user's integration; ENOTFOUND otherwise.
func (db *DB) FindIntegration(ctx context.Context, userID, id string) (*ams.Integration, error) {
	return findOne(ctx, db.pool, scanIntegration, "integration", id,
		`SELECT `+sqlrow.IntegrationCols+` FROM integrations WHERE id = $1 AND user_id = $2`, id, userID)
}

// IntegrationSecrets returns the unsealed secrets of the user's
// integration (empty when it has none); ENOTFOUND otherwise.
func (db *DB) IntegrationSecrets(ctx context.Context, userID, id string) (map[string]string, error) {
	var sealed *string
	err := db.pool.QueryRow(ctx, `SELECT secrets FROM integrations WHERE id = $1 AND user_id = $2`, id, userID).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("integration", id)
	} else if err != nil {
		return nil, fail("find integration", err)
	}
	var plain string
	if sealed != nil {
		if plain, err = db.sealer.Open(*sealed, id); err != nil {
			return nil, fmt.Errorf("integration %s: %w", id, err)
		}
	}
	return sqlrow.DecodeSecrets(plain)
}

// ActiveIntegrations returns the provider's integrations of every account
// whose status is connected or error, oldest first.
func (db *DB) ActiveIntegrations(ctx context.Context, provider string) ([]*ams.Integration, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+sqlrow.IntegrationCols+` FROM integrations
		WHERE provider = $1 AND status IN ('connected', 'error') ORDER BY seq`, provider)
	if err != nil {
		return nil, fail("list integrations", err)
	}
	return collect(rows, scanIntegration)
}

// collect scans every row of rows and closes them.
func collect[T any](rows pgx.Rows, scan func(scanner) (T, error)) ([]T, error) {
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

// fireQuery marks at most $2 due reminders of a table fired and returns
// the records. SKIP LOCKED passes over rows that another caller is firing
// (or an Update holds); a row fired and committed meanwhile is re-checked
// once locked (reminded_at is no longer NULL) and left out, so each
// reminder fires once however many processes call.
func fireQuery(table, cols, cond string) string {
	return `UPDATE ` + table + ` SET reminded_at = $1 WHERE seq IN (SELECT seq FROM ` + table + `
		WHERE remind_at <= $1 AND reminded_at IS NULL` + cond + ` ORDER BY remind_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING ` + cols
}

// FireReminders emits the due reminders; see ams.WorldStore. Tasks come
// first: calendar events fill what is left of limit (a caller that gets
// limit back calls again). The reminders are marked fired and their events
// written in one transaction.
func (db *DB) FireReminders(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, fireQuery("tasks", sqlrow.TaskCols, " AND status = 'open'"), ms(now), limit)
	if err != nil {
		return 0, fail("fire task reminders", err)
	}
	tasks, err := collect(rows, sqlrow.Task)
	if err != nil {
		return 0, fail("fire task reminders", err)
	}
	slices.SortFunc(tasks, func(a, b *ams.Task) int { return cmp.Compare(ms(*a.RemindAt), ms(*b.RemindAt)) })
	var evs []*ams.CalendarEvent
	if len(tasks) < limit {
		rows, err := tx.Query(ctx, fireQuery("calendar_events", sqlrow.CalendarEventCols, ""), ms(now), limit-len(tasks))
		if err != nil {
			return 0, fail("fire event reminders", err)
		}
		if evs, err = collect(rows, sqlrow.CalendarEvent); err != nil {
			return 0, fail("fire event reminders", err)
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
	b := &pgx.Batch{}
	if err := queueEvents(b, events); err != nil {
		return 0, err
	}
	queued, err := runBatch(ctx, tx, b, 0)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit reminders: %w", err)
	}
	db.signalJobs(queued)
	return len(events), nil
}

// NextReminder returns the earliest remind_at still to fire; zero if none.
func (db *DB) NextReminder(ctx context.Context) (time.Time, error) {
	var next *int64
	err := db.pool.QueryRow(ctx, `SELECT least(
		(SELECT min(remind_at) FROM tasks WHERE remind_at IS NOT NULL AND reminded_at IS NULL AND status = 'open'),
		(SELECT min(remind_at) FROM calendar_events WHERE remind_at IS NOT NULL AND reminded_at IS NULL))`).Scan(&next)
	if err != nil {
		return time.Time{}, fail("next reminder", err)
	}
	if next == nil {
		return time.Time{}, nil
	}
	return fromMS(*next), nil
}
