package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
	"github.com/jackc/pgx/v5"
)

// CreateAssistant stores a.
func (db *DB) CreateAssistant(ctx context.Context, a *ams.Assistant) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO assistants (`+sqlrow.AssistantCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		a.ID, a.UserID, a.Name, a.Description, a.Instructions, a.Model, ms(a.CreatedAt), ms(a.UpdatedAt))
	if err != nil {
		return fail("insert assistant", err)
	}
	return nil
}

// FindAssistant returns the user's assistant; ENOTFOUND if it does not
// exist, belongs to another user, or was deleted.
func (db *DB) FindAssistant(ctx context.Context, userID, id string) (*ams.Assistant, error) {
	a, err := sqlrow.Assistant(db.pool.QueryRow(ctx, `SELECT `+sqlrow.AssistantCols+` FROM assistants WHERE id = $1 AND user_id = $2 AND deleted_at IS NULL`, id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
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
	return list(ctx, db.pool, sqlrow.AssistantCols, "assistants", "user_id = $1 AND deleted_at IS NULL", []any{userID}, p, sqlrow.Assistant)
}

// FindConversation returns the user's conversation; ENOTFOUND otherwise.
func (db *DB) FindConversation(ctx context.Context, userID, id string) (*ams.Conversation, error) {
	c, err := sqlrow.Conversation(db.pool.QueryRow(ctx, `SELECT `+sqlrow.ConversationCols+` FROM conversations WHERE id = $1 AND user_id = $2`, id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
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
	where, args := "user_id = $1", []any{userID}
	if assistantID != "" {
		where, args = where+" AND assistant_id = $2", append(args, assistantID)
	}
	return list(ctx, db.pool, sqlrow.ConversationCols, "conversations", where, args, p, sqlrow.Conversation)
}

// FindMessage returns the user's message; ENOTFOUND otherwise.
func (db *DB) FindMessage(ctx context.Context, userID, id string) (*ams.Message, error) {
	m, err := sqlrow.Message(db.pool.QueryRow(ctx, `SELECT `+sqlrow.MessageCols+` FROM messages WHERE id = $1 AND user_id = $2`, id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("message", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find message: %w", err)
	}
	return m, nil
}

// ListMessages returns a page of one conversation's messages.
func (db *DB) ListMessages(ctx context.Context, userID, conversationID string, p ams.ListParams) (*ams.Page[*ams.Message], error) {
	return list(ctx, db.pool, sqlrow.MessageCols, "messages", "conversation_id = $1 AND user_id = $2", []any{conversationID, userID}, p, sqlrow.Message)
}

// RecentMessages returns the last n messages of a conversation, oldest first.
func (db *DB) RecentMessages(ctx context.Context, userID, conversationID string, n int) ([]*ams.Message, error) {
	page, err := list(ctx, db.pool, sqlrow.MessageCols, "messages", "conversation_id = $1 AND user_id = $2", []any{conversationID, userID},
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
// reply, the conversation's counters, and the events with their delivery
// jobs. The statements go in two pipelined batches: the conversation
// first (its counter update proves that it exists and is the user's),
// then everything else.
func (db *DB) SaveExchange(ctx context.Context, x *ams.Exchange) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	var msgs []*ams.Message
	for _, m := range []*ams.Message{x.Inbound, x.Reply} {
		if m != nil {
			msgs = append(msgs, m)
		}
	}
	b := &pgx.Batch{}
	if c := x.NewConversation; c != nil {
		b.Queue(`INSERT INTO conversations (`+sqlrow.ConversationCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			c.ID, c.UserID, c.AssistantID, c.Title, 0, ms(c.LastMessageAt), ms(c.CreatedAt), ms(c.UpdatedAt))
	}
	// Count the turn into the conversation first: this also proves that
	// the conversation exists and is the user's before anything is written.
	if len(msgs) > 0 {
		last := msgs[len(msgs)-1]
		b.Queue(`UPDATE conversations SET message_count = message_count + $1, last_message_at = $2, updated_at = $2
			WHERE id = $3 AND user_id = $4`, len(msgs), ms(last.CreatedAt), x.ConversationID, last.UserID)
	}
	if b.Len() > 0 {
		br := tx.SendBatch(ctx, b)
		if x.NewConversation != nil {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return fail("insert conversation", err)
			}
		}
		if len(msgs) > 0 {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return fail("update conversation", err)
			}
			if tag.RowsAffected() == 0 {
				br.Close()
				return ams.NotFound("conversation", x.ConversationID)
			}
		}
		if err := br.Close(); err != nil {
			return fmt.Errorf("save exchange: %w", err)
		}
	}
	b = &pgx.Batch{}
	for _, m := range msgs {
		b.Queue(`INSERT INTO messages (`+sqlrow.MessageCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			m.ID, m.UserID, m.AssistantID, m.ConversationID, m.Direction, m.Content, ms(m.CreatedAt), ms(m.UpdatedAt))
	}
	if err := queueEvents(b, x.Events); err != nil {
		return err
	}
	queued, err := runBatch(ctx, tx, b, len(msgs))
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit exchange: %w", err)
	}
	db.signalJobs(queued)
	return nil
}

// fanOut queues a delivery job for every active webhook subscribed to the
// event's type. It share-locks those webhooks: a concurrent deactivation
// (UpdateWebhook, or a final failure) either waits for this transaction
// and then cancels its jobs, or commits first and is seen here, so no
// pending job outlives its webhook's deactivation.
const fanOut = `INSERT INTO webhook_jobs (user_id, webhook_id, event_id, next_at, created_at, updated_at)
	SELECT w.user_id, w.id, $1, $2, $2, $2 FROM webhook_subscriptions s JOIN webhooks w ON w.id = s.webhook_id
	WHERE s.user_id = $3 AND s.event_type = $4 AND w.active
	FOR SHARE OF w`

const insertEventSQL = `INSERT INTO events (id, user_id, type, data, created_at) VALUES ($1, $2, $3, $4, $5)`

// queueEvents adds to b, for each event, its insert into the outbox and
// its fan-out into webhook_jobs.
func queueEvents(b *pgx.Batch, events []*ams.Event) error {
	for _, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return fmt.Errorf("encode event data: %w", err)
		}
		b.Queue(insertEventSQL, e.ID, e.UserID, e.Type, data, ms(e.CreatedAt))
		b.Queue(fanOut, e.ID, ms(e.CreatedAt), e.UserID, e.Type)
	}
	return nil
}

// runBatch sends b within tx: skip plain statements, then pairs of event
// insert and fan-out as queueEvents made them. It returns how many jobs
// the fan-outs queued.
func runBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch, skip int) (int64, error) {
	if b.Len() == 0 {
		return 0, nil
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	for range skip {
		if _, err := br.Exec(); err != nil {
			return 0, fail("insert message", err)
		}
	}
	var queued int64
	for i := skip; i < b.Len(); i += 2 {
		if _, err := br.Exec(); err != nil {
			return 0, fail("insert event", err)
		}
		tag, err := br.Exec()
		if err != nil {
			return 0, fmt.Errorf("queue deliveries: %w", err)
		}
		queued += tag.RowsAffected()
	}
	if err := br.Close(); err != nil {
		return 0, fmt.Errorf("save events: %w", err)
	}
	return queued, nil
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
// Workers of other processes find them when they poll.
func (db *DB) JobsReady() <-chan struct{} { return db.jobs }

// FindEvent returns the user's event; ENOTFOUND otherwise.
func (db *DB) FindEvent(ctx context.Context, userID, id string) (*ams.Event, error) {
	e, err := scanEvent(db.pool.QueryRow(ctx, `SELECT `+sqlrow.EventCols+` FROM events WHERE id = $1 AND user_id = $2`, id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("event", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find event: %w", err)
	}
	return e, nil
}

func scanEvent(s scanner) (*ams.Event, error) {
	e := &ams.Event{Object: "event"}
	var data []byte
	var c int64
	if err := s.Scan(&e.ID, &e.UserID, &e.Type, &data, &c); err != nil {
		return nil, err
	}
	e.CreatedAt = fromMS(c)
	if err := json.Unmarshal(data, &e.Data); err != nil {
		return nil, fmt.Errorf("decode event %s: %w", e.ID, err)
	}
	return e, nil
}

// ListEvents returns a page of the user's events, of one type when set.
func (db *DB) ListEvents(ctx context.Context, userID, eventType string, p ams.ListParams) (*ams.Page[*ams.Event], error) {
	where, args := "user_id = $1", []any{userID}
	if eventType != "" {
		where, args = where+" AND type = $2", append(args, eventType)
	}
	return list(ctx, db.pool, sqlrow.EventCols, "events", where, args, p, scanEvent)
}

func scanIntegration(s scanner) (*ams.Integration, error) {
	in := &ams.Integration{Object: "integration"}
	var config []byte
	var conn, c, u int64
	if err := s.Scan(&in.ID, &in.UserID, &in.Provider, &in.Status, &config, &in.LastError, &conn, &c, &u); err != nil {
		return nil, err
	}
	in.ConnectedAt, in.CreatedAt, in.UpdatedAt = fromMS(conn), fromMS(c), fromMS(u)
	if err := json.Unmarshal(config, &in.Config); err != nil {
		return nil, fmt.Errorf("decode integration config %s: %w", in.ID, err)
	}
	if in.Config == nil {
		in.Config = map[string]any{}
	}
	return in, nil
}

// ListIntegrations returns a page of the user's integrations.
func (db *DB) ListIntegrations(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Integration], error) {
	return list(ctx, db.pool, sqlrow.IntegrationCols, "integrations", "user_id = $1", []any{userID}, p, scanIntegration)
}
