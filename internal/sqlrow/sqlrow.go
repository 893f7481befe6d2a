// Package sqlrow holds what both SQL storage engines read the same way:
// the column lists of the tables they share, the scan functions of the
// records whose columns are alike on both, and the finishing of a cursor
// page. Each engine keeps its own SQL.
package sqlrow

import (
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
const UserCols = `id, email, password_hash, plan, rpm, rpd, timezone, created_at, updated_at`

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
	if err := s.Scan(&u.ID, &u.Email, &u.PasswordHash, &u.Plan, &u.RPM, &u.RPD, &u.Timezone, &created, &updated); err != nil {
		return nil, err
	}
	u.CreatedAt, u.UpdatedAt = fromMS(created), fromMS(updated)
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
