package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
)

// CreateAssistant stores a.
func (db *DB) CreateAssistant(ctx context.Context, a *ams.Assistant) error {
	_, err := db.write.ExecContext(ctx, `INSERT INTO assistants (`+sqlrow.AssistantCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.UserID, a.Name, a.Description, a.Instructions, a.Model, ms(a.CreatedAt), ms(a.UpdatedAt))
	if err != nil {
		return fmt.Errorf("insert assistant: %w", err)
	}
	return nil
}

// FindAssistant returns the user's assistant; ENOTFOUND if it does not
// exist, belongs to another user, or was deleted.
func (db *DB) FindAssistant(ctx context.Context, userID, id string) (*ams.Assistant, error) {
	a, err := sqlrow.Assistant(db.rq.QueryRowContext(ctx, `SELECT `+sqlrow.AssistantCols+` FROM assistants WHERE id = ? AND user_id = ? AND deleted_at IS NULL`, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("assistant", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find assistant: %w", err)
	}
	return a, nil
}

// ListAssistants returns a page of the user's assistants, deleted ones
// left out.
func (db *DB) ListAssistants(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Assistant], error) {
	return list(ctx, &db.rq, sqlrow.AssistantCols, "assistants", "user_id = ? AND deleted_at IS NULL", []any{userID}, p, sqlrow.Assistant)
}

// FindConversation returns the user's conversation; ENOTFOUND otherwise.
func (db *DB) FindConversation(ctx context.Context, userID, id string) (*ams.Conversation, error) {
	c, err := sqlrow.Conversation(db.rq.QueryRowContext(ctx, `SELECT `+sqlrow.ConversationCols+` FROM conversations WHERE id = ? AND user_id = ?`, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("conversation", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find conversation: %w", err)
	}
	return c, nil
}

// ListConversations returns a page of the user's conversations, of one
// assistant when assistantID is set.
func (db *DB) ListConversations(ctx context.Context, userID, assistantID string, p ams.ListParams) (*ams.Page[*ams.Conversation], error) {
	where, args := "user_id = ?", []any{userID}
	if assistantID != "" {
		where, args = where+" AND assistant_id = ?", append(args, assistantID)
	}
	return list(ctx, &db.rq, sqlrow.ConversationCols, "conversations", where, args, p, sqlrow.Conversation)
}

// FindMessage returns the user's message; ENOTFOUND otherwise.
func (db *DB) FindMessage(ctx context.Context, userID, id string) (*ams.Message, error) {
	m, err := sqlrow.Message(db.rq.QueryRowContext(ctx, `SELECT `+sqlrow.MessageCols+` FROM messages WHERE id = ? AND user_id = ?`, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("message", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find message: %w", err)
	}
	return m, nil
}

// ListMessages returns a page of one conversation's messages.
func (db *DB) ListMessages(ctx context.Context, userID, conversationID string, p ams.ListParams) (*ams.Page[*ams.Message], error) {
	return list(ctx, &db.rq, sqlrow.MessageCols, "messages", "conversation_id = ? AND user_id = ?", []any{conversationID, userID}, p, sqlrow.Message)
}

// RecentMessages returns the last n messages of a conversation, oldest first.
func (db *DB) RecentMessages(ctx context.Context, userID, conversationID string, n int) ([]*ams.Message, error) {
	page, err := list(ctx, &db.rq, sqlrow.MessageCols, "messages", "conversation_id = ? AND user_id = ?", []any{conversationID, userID},
		ams.ListParams{Limit: n, Order: ams.OrderDesc}, sqlrow.Message)
	if err != nil {
		return nil, err
	}
	out := page.Data
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// SaveExchange writes a conversation turn and its events in one
// transaction: the new conversation (if any), the inbound message, the
// reply, the conversation's counters, and the events.
func (db *DB) SaveExchange(ctx context.Context, x *ams.Exchange) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if c := x.NewConversation; c != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversations (`+sqlrow.ConversationCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.UserID, c.AssistantID, c.Title, 0, ms(c.LastMessageAt), ms(c.CreatedAt), ms(c.UpdatedAt)); err != nil {
			return fmt.Errorf("insert conversation: %w", err)
		}
	}
	// Count the turn into the conversation first: this also proves that
	// the conversation exists and is the user's before anything is written.
	var msgs []*ams.Message
	for _, m := range []*ams.Message{x.Inbound, x.Reply} {
		if m != nil {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) > 0 {
		last := msgs[len(msgs)-1]
		res, err := tx.ExecContext(ctx, `UPDATE conversations SET message_count = message_count + ?, last_message_at = ?, updated_at = ?
			WHERE id = ? AND user_id = ?`, len(msgs), ms(last.CreatedAt), ms(last.CreatedAt), x.ConversationID, last.UserID)
		if err != nil {
			return fmt.Errorf("update conversation: %w", err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return ams.NotFound("conversation", x.ConversationID)
		}
	}
	for _, m := range msgs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO messages (`+sqlrow.MessageCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			m.ID, m.UserID, m.AssistantID, m.ConversationID, m.Direction, m.Content, ms(m.CreatedAt), ms(m.UpdatedAt)); err != nil {
			return fmt.Errorf("insert message: %w", err)
		}
	}
	queued, err := insertEvents(ctx, tx, x.Events)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit exchange: %w", err)
	}
	db.signalJobs(queued)
	return nil
}

// insertEvents writes events into the outbox within tx and queues a
// delivery job for every active webhook subscribed to each event's type.
// It returns how many jobs it queued.
func insertEvents(ctx context.Context, tx *sql.Tx, events []*ams.Event) (int64, error) {
	var queued int64
	for _, e := range events {
		if err := insertEvent(ctx, tx, e); err != nil {
			return 0, err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO webhook_jobs (user_id, webhook_id, event_id, next_at, created_at, updated_at)
			SELECT w.user_id, w.id, ?, ?, ?, ? FROM webhook_subscriptions s JOIN webhooks w ON w.id = s.webhook_id
			WHERE s.user_id = ? AND s.event_type = ? AND w.active = 1`,
			e.ID, ms(e.CreatedAt), ms(e.CreatedAt), ms(e.CreatedAt), e.UserID, e.Type)
		if err != nil {
			return 0, fmt.Errorf("queue deliveries: %w", err)
		}
		n, _ := res.RowsAffected()
		queued += n
	}
	return queued, nil
}

func insertEvent(ctx context.Context, tx *sql.Tx, e *ams.Event) error {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Errorf("encode event data: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (id, user_id, type, data, created_at) VALUES (?, ?, ?, ?, ?)`,
		e.ID, e.UserID, e.Type, string(data), ms(e.CreatedAt)); err != nil {
		return fmt.Errorf("insert event: %w", err)
	}
	return nil
}

// signalJobs wakes the delivery worker of this process if jobs were queued.
func (db *DB) signalJobs(n int64) {
	if n > 0 {
		select {
		case db.jobs <- struct{}{}:
		default:
		}
	}
}

// JobsReady is signalled when a commit of this process queued jobs.
func (db *DB) JobsReady() <-chan struct{} { return db.jobs }

// FindEvent returns the user's event; ENOTFOUND otherwise.
func (db *DB) FindEvent(ctx context.Context, userID, id string) (*ams.Event, error) {
	e, err := scanEvent(db.rq.QueryRowContext(ctx, `SELECT `+sqlrow.EventCols+` FROM events WHERE id = ? AND user_id = ?`, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("event", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find event: %w", err)
	}
	return e, nil
}

func scanEvent(s scanner) (*ams.Event, error) {
	e := &ams.Event{Object: "event"}
	var data string
	var c int64
	if err := s.Scan(&e.ID, &e.UserID, &e.Type, &data, &c); err != nil {
		return nil, err
	}
	e.CreatedAt = fromMS(c)
	if err := json.Unmarshal([]byte(data), &e.Data); err != nil {
		return nil, fmt.Errorf("decode event %s: %w", e.ID, err)
	}
	return e, nil
}

// ListEvents returns a page of the user's events, of one type when set.
func (db *DB) ListEvents(ctx context.Context, userID, eventType string, p ams.ListParams) (*ams.Page[*ams.Event], error) {
	where, args := "user_id = ?", []any{userID}
	if eventType != "" {
		where, args = where+" AND type = ?", append(args, eventType)
	}
	return list(ctx, &db.rq, sqlrow.EventCols, "events", where, args, p, scanEvent)
}

func scanIntegration(s scanner) (*ams.Integration, error) {
	in := &ams.Integration{Object: "integration"}
	var config string
	var lastErr sql.NullString
	var conn, c, u int64
	if err := s.Scan(&in.ID, &in.UserID, &in.Provider, &in.Status, &config, &lastErr, &conn, &c, &u); err != nil {
		return nil, err
	}
	if lastErr.Valid {
		in.LastError = &lastErr.String
	}
	in.ConnectedAt, in.CreatedAt, in.UpdatedAt = fromMS(conn), fromMS(c), fromMS(u)
	if err := json.Unmarshal([]byte(config), &in.Config); err != nil {
		return nil, fmt.Errorf("decode integration config %s: %w", in.ID, err)
	}
	if in.Config == nil {
		in.Config = map[string]any{}
	}
	return in, nil
}

// ListIntegrations returns a page of the user's integrations.
func (db *DB) ListIntegrations(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Integration], error) {
	return list(ctx, &db.rq, sqlrow.IntegrationCols, "integrations", "user_id = ?", []any{userID}, p, scanIntegration)
}
