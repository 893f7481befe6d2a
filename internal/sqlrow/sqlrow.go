// Package sqlrow holds what both SQL storage engines read the same way:
// the column lists of the tables they share, the scan functions of the
// records whose columns are alike on both, and the finishing of a cursor
// page. Each engine keeps its own SQL.
package sqlrow

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/amsdev/ams"
)

// Scanner is the part of a row or rows value that scan functions use; both
// database/sql and pgx rows have it.
type Scanner interface{ Scan(dest ...any) error }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// FinishPage trims a page read with one extra row to limit, setting
// HasMore, and restores the list's order when the rows were read in the
// opposite direction (a "before" cursor).
func FinishPage[T any](page *ams.Page[T], limit int, forward bool) *ams.Page[T] {
	if len(page.Data) > limit {
		page.Data, page.HasMore = page.Data[:limit], true
	}
	if !forward {
		slices.Reverse(page.Data)
	}
	return page
}

// UserCols are the columns User reads.
const UserCols = `id, email, password_hash, plan, rpm, rpd, timezone, created_at, updated_at, approved_at, admin`

// KeyCols are the columns of api_keys, qualified by the alias k.
const KeyCols = `k.id, k.user_id, k.name, k.hint, k.hash, k.permissions, k.created_at, k.last_used_at, k.expires_at, k.revoked_at`

// AssistantCols are the columns Assistant reads.
const AssistantCols = `id, user_id, name, description, instructions, model, created_at, updated_at`

// ConversationCols are the columns Conversation reads.
const ConversationCols = `id, user_id, assistant_id, title, message_count, last_message_at, created_at, updated_at`

// MessageCols are the columns Message reads.
const MessageCols = `id, user_id, assistant_id, conversation_id, direction, content, created_at, updated_at`

// EventCols are the columns of events.
const EventCols = `id, user_id, type, data, created_at`

// IntegrationCols are the columns of integrations.
const IntegrationCols = `id, user_id, provider, status, config, last_error, connected_at, created_at, updated_at`

// DeliveryCols are the columns of webhook_deliveries.
const DeliveryCols = `id, user_id, webhook_id, event_id, event_type, attempt, url, success, status_code, duration_ms, error, response_body, created_at`

// ClientCols are the columns of oauth_clients.
const ClientCols = `id, user_id, name, redirect_uris, public, secret_hash, created_at, updated_at`

// User reads one row of user columns.
func User(s Scanner) (*ams.User, error) {
	var u ams.User
	var created, updated int64
	var approved *int64
	if err := s.Scan(&u.ID, &u.Email, &u.PasswordHash, &u.Plan, &u.RPM, &u.RPD, &u.Timezone, &created, &updated, &approved, &u.Admin); err != nil {
		return nil, err
	}
	u.CreatedAt, u.UpdatedAt, u.ApprovedAt = fromMS(created), fromMS(updated), fromNullMS(approved)
	return &u, nil
}

// Assistant reads one row of assistant columns.
func Assistant(s Scanner) (*ams.Assistant, error) {
	a := &ams.Assistant{Object: "assistant"}
	var c, u int64
	if err := s.Scan(&a.ID, &a.UserID, &a.Name, &a.Description, &a.Instructions, &a.Model, &c, &u); err != nil {
		return nil, err
	}
	a.CreatedAt, a.UpdatedAt = fromMS(c), fromMS(u)
	return a, nil
}

// Conversation reads one row of conversation columns.
func Conversation(s Scanner) (*ams.Conversation, error) {
	c := &ams.Conversation{Object: "conversation"}
	var last, cr, up int64
	if err := s.Scan(&c.ID, &c.UserID, &c.AssistantID, &c.Title, &c.MessageCount, &last, &cr, &up); err != nil {
		return nil, err
	}
	c.LastMessageAt, c.CreatedAt, c.UpdatedAt = fromMS(last), fromMS(cr), fromMS(up)
	return c, nil
}

// Message reads one row of message columns.
func Message(s Scanner) (*ams.Message, error) {
	m := &ams.Message{Object: "message"}
	var c, u int64
	if err := s.Scan(&m.ID, &m.UserID, &m.AssistantID, &m.ConversationID, &m.Direction, &m.Content, &c, &u); err != nil {
		return nil, err
	}
	m.CreatedAt, m.UpdatedAt = fromMS(c), fromMS(u)
	return m, nil
}

// SortEvents puts event types in their canonical order, dropping blanks,
// duplicates and unknown types.
func SortEvents(types []string) []string {
	out := []string{}
	for _, t := range ams.EventTypes {
		if slices.Contains(types, t) {
			out = append(out, t)
		}
	}
	return out
}

// The assistant's world (tasks, calendar events, actions). Nullable
// columns read into pointers, which both database/sql and pgx set to nil
// on NULL; JSON columns read into []byte (TEXT in SQLite, JSON in
// PostgreSQL, both kept as written).

func fromNullMS(v *int64) *time.Time {
	if v == nil {
		return nil
	}
	t := fromMS(*v)
	return &t
}

// NullMS converts an optional time to stored milliseconds (nil: NULL).
func NullMS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}

// NullText converts a string to a nullable column value: "" is NULL.
func NullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TaskCols are the columns Task reads and TaskArgs writes.
const TaskCols = `id, user_id, assistant_id, title, notes, status, due_at, remind_at, reminded_at, completed_at, created_at, updated_at`

// TaskArgs returns the values of TaskCols for t.
func TaskArgs(t *ams.Task) []any {
	return []any{t.ID, t.UserID, t.AssistantID, t.Title, t.Notes, t.Status, NullMS(t.DueAt), NullMS(t.RemindAt), NullMS(t.RemindedAt),
		NullMS(t.CompletedAt), t.CreatedAt.UnixMilli(), t.UpdatedAt.UnixMilli()}
}

// Task reads one row of TaskCols.
func Task(s Scanner) (*ams.Task, error) {
	t := &ams.Task{Object: "task"}
	var due, remind, reminded, completed *int64
	var c, u int64
	if err := s.Scan(&t.ID, &t.UserID, &t.AssistantID, &t.Title, &t.Notes, &t.Status, &due, &remind, &reminded, &completed, &c, &u); err != nil {
		return nil, err
	}
	t.DueAt, t.RemindAt, t.RemindedAt, t.CompletedAt = fromNullMS(due), fromNullMS(remind), fromNullMS(reminded), fromNullMS(completed)
	t.CreatedAt, t.UpdatedAt = fromMS(c), fromMS(u)
	return t, nil
}

// CalendarEventCols are the columns CalendarEvent reads and
// CalendarEventArgs writes. assistant_id and integration_id are NULL when
// empty.
const CalendarEventCols = `id, user_id, assistant_id, title, description, location, starts_at, ends_at, remind_at, reminded_at,
	integration_id, external_uid, external_path, external_etag, created_at, updated_at`

// CalendarEventArgs returns the values of CalendarEventCols for e.
func CalendarEventArgs(e *ams.CalendarEvent) []any {
	return []any{e.ID, e.UserID, NullText(e.AssistantID), e.Title, e.Description, e.Location, e.StartsAt.UnixMilli(), e.EndsAt.UnixMilli(),
		NullMS(e.RemindAt), NullMS(e.RemindedAt), NullText(e.IntegrationID), e.ExternalUID, e.ExternalPath, e.ExternalETag,
		e.CreatedAt.UnixMilli(), e.UpdatedAt.UnixMilli()}
}

// CalendarEvent reads one row of CalendarEventCols.
func CalendarEvent(s Scanner) (*ams.CalendarEvent, error) {
	e := &ams.CalendarEvent{Object: "calendar_event"}
	var assistant, integration *string
	var remind, reminded *int64
	var starts, ends, c, u int64
	if err := s.Scan(&e.ID, &e.UserID, &assistant, &e.Title, &e.Description, &e.Location, &starts, &ends, &remind, &reminded,
		&integration, &e.ExternalUID, &e.ExternalPath, &e.ExternalETag, &c, &u); err != nil {
		return nil, err
	}
	e.AssistantID, e.IntegrationID = deref(assistant), deref(integration)
	e.StartsAt, e.EndsAt, e.CreatedAt, e.UpdatedAt = fromMS(starts), fromMS(ends), fromMS(c), fromMS(u)
	e.RemindAt, e.RemindedAt = fromNullMS(remind), fromNullMS(reminded)
	return e, nil
}

// ActionCols are the columns Action reads and ActionArgs writes.
const ActionCols = `id, user_id, assistant_id, conversation_id, type, input, status, result, error, created_at`

// ActionArgs returns the values of ActionCols for a. The JSON values are
// passed as strings (SQLite would store a []byte as a BLOB): input as
// given ("null" when empty), result and error NULL when absent.
func ActionArgs(a *ams.Action) ([]any, error) {
	input := "null"
	if len(a.Input) > 0 {
		input = string(a.Input)
	}
	var result, actErr any
	if len(a.Result) > 0 {
		result = string(a.Result)
	}
	if a.Error != nil {
		b, err := json.Marshal(a.Error)
		if err != nil {
			return nil, err
		}
		actErr = string(b)
	}
	return []any{a.ID, a.UserID, a.AssistantID, a.ConversationID, a.Type, input, a.Status, result, actErr, a.CreatedAt.UnixMilli()}, nil
}

// Action reads one row of ActionCols.
func Action(s Scanner) (*ams.Action, error) {
	a := &ams.Action{Object: "action"}
	var input, result, actErr []byte
	var c int64
	if err := s.Scan(&a.ID, &a.UserID, &a.AssistantID, &a.ConversationID, &a.Type, &input, &a.Status, &result, &actErr, &c); err != nil {
		return nil, err
	}
	a.CreatedAt = fromMS(c)
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

// SecretsJSON encodes an integration's secrets map for sealing; ""
// (stored as NULL) when there are none.
func SecretsJSON(secrets map[string]string) (string, error) {
	if len(secrets) == 0 {
		return "", nil
	}
	b, err := json.Marshal(secrets)
	return string(b), err
}

// DecodeSecrets decodes unsealed secrets JSON; "" is none (an empty map).
func DecodeSecrets(plain string) (map[string]string, error) {
	out := map[string]string{}
	if plain == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(plain), &out); err != nil {
		return nil, fmt.Errorf("decode integration secrets: %w", err)
	}
	return out, nil
}
