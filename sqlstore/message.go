package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/amsdev/ams"
)

const assistantCols = `id, user_id, name, description, instructions, model, created_at, updated_at, metadata, tools, require_approval, multitask_strategy`

func scanAssistant(s scanner) (*ams.Assistant, error) {
	a := &ams.Assistant{Object: "assistant"}
	var c, u int64
	var meta, tools, approval string
	if err := s.Scan(&a.ID, &a.UserID, &a.Name, &a.Description, &a.Instructions, &a.Model, &c, &u, &meta, &tools, &approval, &a.MultitaskStrategy); err != nil {
		return nil, err
	}
	a.CreatedAt, a.UpdatedAt = FromMS(c), FromMS(u)
	a.Tools, a.RequireApproval = []*ams.ClientTool{}, []string{}
	if tools != "[]" {
		if err := json.Unmarshal([]byte(tools), &a.Tools); err != nil {
			return nil, fmt.Errorf("assistant %s: tools: %w", a.ID, err)
		}
	}
	if approval != "[]" {
		if err := json.Unmarshal([]byte(approval), &a.RequireApproval); err != nil {
			return nil, fmt.Errorf("assistant %s: require_approval: %w", a.ID, err)
		}
	}
	return a, scanMetadata(&a.Metadata, meta, "assistant", a.ID)
}

// assistantTurnFields returns the JSON of a's tools and require_approval,
// and its multitask strategy ("enqueue" when unset).
func assistantTurnFields(a *ams.Assistant) (string, string, string) {
	tools, approval := "[]", "[]"
	if len(a.Tools) > 0 {
		b, _ := json.Marshal(a.Tools)
		tools = string(b)
	}
	if len(a.RequireApproval) > 0 {
		b, _ := json.Marshal(a.RequireApproval)
		approval = string(b)
	}
	strategy := a.MultitaskStrategy
	if strategy == "" {
		strategy = ams.MultitaskEnqueue
	}
	return tools, approval, strategy
}

// scanMetadata decodes the metadata column of record id into dst.
func scanMetadata(dst *ams.Metadata, text, object, id string) error {
	if text == "{}" {
		// Most records have none: what ams.DecodeMetadata gives for {},
		// without the JSON decoder.
		*dst = ams.Metadata{}
		return nil
	}
	m, err := ams.DecodeMetadata(text)
	if err != nil {
		return fmt.Errorf("%s %s: metadata: %w", object, id, err)
	}
	*dst = m
	return nil
}

// conflict maps a unique violation to ECONFLICT with message msg.
func (q *Queries) conflict(op string, err error, msg string, args ...any) error {
	if q.isUnique(err) {
		return ams.Errorf(ams.ECONFLICT, "resource_exists", msg, args...)
	}
	return q.fail(op, err)
}

// CreateAssistant stores a.
func (q *Queries) CreateAssistant(ctx context.Context, a *ams.Assistant) error {
	tools, approval, strategy := assistantTurnFields(a)
	if _, err := q.w.Exec(ctx, `INSERT INTO assistants (`+assistantCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		a.ID, a.UserID, a.Name, a.Description, a.Instructions, a.Model, MS(a.CreatedAt), MS(a.UpdatedAt), ams.EncodeMetadata(a.Metadata),
		tools, approval, strategy); err != nil {
		return q.conflict("insert assistant", err, "Assistant '%s' already exists.", a.ID)
	}
	return nil
}

// FindAssistant returns the user's assistant (locked in a transaction);
// ENOTFOUND if it does not exist, belongs to another user, or was deleted.
func (q *Queries) FindAssistant(ctx context.Context, userID, id string) (*ams.Assistant, error) {
	a, err := findByID(ctx, q, q.s.points.assistants, userID, id)
	if err == nil && q.tx != nil {
		if q.tx.locked == nil {
			q.tx.locked = map[string]string{}
		}
		q.tx.locked[id] = userID
	}
	return a, err
}

// ListAssistants returns a page of the user's assistants, deleted ones
// left out.
func (q *Queries) ListAssistants(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Assistant], error) {
	return list(ctx, q, assistantCols, "assistants", where("user_id = $1 AND deleted_at IS NULL", userID), p, scanAssistant)
}

// UpdateAssistant writes a's name, description, instructions, model,
// metadata, tools, require_approval, multitask_strategy and updated_at.
func (q *Queries) UpdateAssistant(ctx context.Context, a *ams.Assistant) error {
	tools, approval, strategy := assistantTurnFields(a)
	n, err := q.exec(ctx, "update assistant", `UPDATE assistants SET name = $1, description = $2, instructions = $3, model = $4, updated_at = $5,
		metadata = $6, tools = $9, require_approval = $10, multitask_strategy = $11 WHERE id = $7 AND user_id = $8 AND deleted_at IS NULL`,
		a.Name, a.Description, a.Instructions, a.Model, MS(a.UpdatedAt), ams.EncodeMetadata(a.Metadata), a.ID, a.UserID, tools, approval, strategy)
	if err != nil {
		return err
	}
	return affected(n, "assistant", a.ID)
}

// DeleteAssistant marks the assistant deleted at now.
func (q *Queries) DeleteAssistant(ctx context.Context, userID, id string, now time.Time) error {
	if q.tx != nil {
		delete(q.tx.locked, id)
	}
	n, err := q.exec(ctx, "delete assistant", `UPDATE assistants SET deleted_at = $1, updated_at = $1 WHERE id = $2 AND user_id = $3 AND deleted_at IS NULL`,
		MS(now), id, userID)
	if err != nil {
		return err
	}
	return affected(n, "assistant", id)
}

// ownedAssistant checks that the user has the (not deleted) assistant;
// without a query when this transaction found and locked it.
func (q *Queries) ownedAssistant(ctx context.Context, userID, id string) error {
	if q.tx != nil {
		if owner, ok := q.tx.locked[id]; ok && owner == userID {
			return nil
		}
	}
	ok, err := q.exists(ctx, "assistant", `SELECT 1 FROM assistants WHERE id = $1 AND user_id = $2 AND deleted_at IS NULL`, id, userID)
	if err == nil && !ok {
		err = ams.NotFound("assistant", id)
	}
	return err
}

const conversationCols = `id, user_id, assistant_id, title, message_count, last_message_at, created_at, updated_at, metadata`

func scanConversation(s scanner) (*ams.Conversation, error) {
	c := &ams.Conversation{Object: "conversation"}
	var last, cr, up int64
	var meta string
	if err := s.Scan(&c.ID, &c.UserID, &c.AssistantID, &c.Title, &c.MessageCount, &last, &cr, &up, &meta); err != nil {
		return nil, err
	}
	c.LastMessageAt, c.CreatedAt, c.UpdatedAt = FromMS(last), FromMS(cr), FromMS(up)
	return c, scanMetadata(&c.Metadata, meta, "conversation", c.ID)
}

// insertConversation is the statement that stores c with no messages.
func insertConversation(c *ams.Conversation) Stmt {
	return Stmt{opInsertConversation, insertConversationsSQL(1),
		[]any{c.ID, c.UserID, c.AssistantID, c.Title, c.MessageCount, MS(c.LastMessageAt), MS(c.CreatedAt), MS(c.UpdatedAt), ams.EncodeMetadata(c.Metadata)}}
}

// opInsertConversation names the insert of new conversations
// (insertConversationsSQL).
const opInsertConversation = "insert conversation"

// insertConversationsSQL inserts n conversations (9 parameters each).
func insertConversationsSQL(n int) string {
	return `INSERT INTO conversations (` + conversationCols + `) VALUES ` + valueRows(n, 9)
}

// opInsertMessages names the insert of an exchange's messages
// (insertMessagesSQL).
const opInsertMessages = "insert message"

// insertMessagesSQL inserts n messages (9 parameters each), in order.
func insertMessagesSQL(n int) string {
	return `INSERT INTO messages (` + messageCols + `) VALUES ` + valueRows(n, 9)
}

// FindConversation returns the user's conversation (locked in a
// transaction); ENOTFOUND otherwise.
func (q *Queries) FindConversation(ctx context.Context, userID, id string) (*ams.Conversation, error) {
	return findByID(ctx, q, q.s.points.conversations, userID, id)
}

// CreateConversation stores c, with no messages; ENOTFOUND if its
// assistant is not the user's.
func (q *Queries) CreateConversation(ctx context.Context, c *ams.Conversation) error {
	return q.inTx(ctx, func(q *Queries) error {
		if err := q.ownedAssistant(ctx, c.UserID, c.AssistantID); err != nil {
			return err
		}
		st := insertConversation(c)
		if _, err := q.w.Exec(ctx, st.SQL, st.Args...); err != nil {
			return q.conflict("insert conversation", err, "Conversation '%s' already exists.", c.ID)
		}
		return nil
	})
}

// UpdateConversation writes c's title, metadata and updated_at.
func (q *Queries) UpdateConversation(ctx context.Context, c *ams.Conversation) error {
	n, err := q.exec(ctx, "update conversation", `UPDATE conversations SET title = $1, metadata = $2, updated_at = $3 WHERE id = $4 AND user_id = $5`,
		c.Title, ams.EncodeMetadata(c.Metadata), MS(c.UpdatedAt), c.ID, c.UserID)
	if err != nil {
		return err
	}
	return affected(n, "conversation", c.ID)
}

// DeleteConversation deletes the conversation with its messages and
// returns the messages deleted, oldest first.
func (q *Queries) DeleteConversation(ctx context.Context, userID, id string) ([]*ams.Message, error) {
	var msgs []*ams.Message
	err := q.inTx(ctx, func(q *Queries) error {
		ok, err := q.exists(ctx, "conversation", `SELECT 1 FROM conversations WHERE id = $1 AND user_id = $2`+q.lock("FOR UPDATE"), id, userID)
		if err != nil {
			return err
		}
		if !ok {
			return ams.NotFound("conversation", id)
		}
		if msgs, err = collect(ctx, q.w, "conversation messages", scanMessage,
			`SELECT `+messageCols+` FROM messages WHERE conversation_id = $1 AND user_id = $2 ORDER BY seq`+q.lock("FOR UPDATE"), id, userID); err != nil {
			return q.fail("read messages", err)
		}
		if err := q.eraseMessages(ctx, userID, "conversation_id", id); err != nil {
			return err
		}
		n, err := q.batch(ctx, []Stmt{
			{"delete messages", `DELETE FROM messages WHERE conversation_id = $1 AND user_id = $2`, []any{id, userID}},
			{"delete conversation", `DELETE FROM conversations WHERE id = $1 AND user_id = $2`, []any{id, userID}},
			{"delete turn events", `DELETE FROM turn_events WHERE turn_id IN (SELECT id FROM turns WHERE conversation_id = $1 AND user_id = $2)`, []any{id, userID}},
			{"delete turns", `DELETE FROM turns WHERE conversation_id = $1 AND user_id = $2`, []any{id, userID}},
		})
		if err != nil {
			return err
		}
		return affected(n[1], "conversation", id)
	})
	if err != nil {
		return nil, err
	}
	return msgs, nil
}

// ListConversations returns a page of the user's conversations, of one
// assistant when assistantID is set.
func (q *Queries) ListConversations(ctx context.Context, userID, assistantID string, p ams.ListParams) (*ams.Page[*ams.Conversation], error) {
	f := where("user_id = $1", userID)
	if assistantID != "" {
		f.add("assistant_id = $?", assistantID)
	}
	return list(ctx, q, conversationCols, "conversations", f, p, scanConversation)
}

const messageCols = `id, user_id, assistant_id, conversation_id, direction, content, created_at, updated_at, metadata`

func scanMessage(s scanner) (*ams.Message, error) {
	m := &ams.Message{Object: "message"}
	var c, u int64
	var meta string
	if err := s.Scan(&m.ID, &m.UserID, &m.AssistantID, &m.ConversationID, &m.Direction, &m.Content, &c, &u, &meta); err != nil {
		return nil, err
	}
	m.CreatedAt, m.UpdatedAt = FromMS(c), FromMS(u)
	return m, scanMetadata(&m.Metadata, meta, "message", m.ID)
}

// FindMessage returns the user's message (locked in a transaction);
// ENOTFOUND otherwise.
func (q *Queries) FindMessage(ctx context.Context, userID, id string) (*ams.Message, error) {
	return findByID(ctx, q, q.s.points.messages, userID, id)
}

// ListMessages returns a page of one conversation's messages.
func (q *Queries) ListMessages(ctx context.Context, userID, conversationID string, p ams.ListParams) (*ams.Page[*ams.Message], error) {
	return list(ctx, q, messageCols, "messages", where("conversation_id = $1 AND user_id = $2", conversationID, userID), p, scanMessage)
}

// RecentMessages returns the last n messages of a conversation, oldest first.
func (q *Queries) RecentMessages(ctx context.Context, userID, conversationID string, n int) ([]*ams.Message, error) {
	page, err := q.ListMessages(ctx, userID, conversationID, ams.ListParams{Limit: n, Order: ams.OrderDesc})
	if err != nil {
		return nil, err
	}
	slices.Reverse(page.Data)
	return page.Data, nil
}

// UpdateMessage writes m's content, metadata and updated_at.
func (q *Queries) UpdateMessage(ctx context.Context, m *ams.Message) error {
	n, err := q.exec(ctx, "update message", `UPDATE messages SET content = $1, metadata = $2, updated_at = $3 WHERE id = $4 AND user_id = $5`,
		m.Content, ams.EncodeMetadata(m.Metadata), MS(m.UpdatedAt), m.ID, m.UserID)
	if err != nil {
		return err
	}
	return affected(n, "message", m.ID)
}

// DeleteMessage deletes the message and counts it out of its
// conversation: message_count goes down by one, last_message_at becomes
// that of the latest message left (the conversation's creation when none).
func (q *Queries) DeleteMessage(ctx context.Context, userID, id string, now time.Time) error {
	return q.inTx(ctx, func(q *Queries) error {
		var conv string
		err := q.w.QueryRow(ctx, `DELETE FROM messages WHERE id = $1 AND user_id = $2 RETURNING conversation_id`, id, userID).Scan(&conv)
		if errors.Is(err, sql.ErrNoRows) {
			return ams.NotFound("message", id)
		} else if err != nil {
			return q.fail("delete message", err)
		}
		_, err = q.exec(ctx, "count message out", `UPDATE conversations
			SET message_count = CASE WHEN message_count > 0 THEN message_count - 1 ELSE 0 END,
			last_message_at = coalesce((SELECT max(m.created_at) FROM messages m WHERE m.conversation_id = conversations.id), created_at),
			updated_at = $1 WHERE id = $2`, MS(now), conv)
		if err != nil {
			return err
		}
		return q.eraseMessages(ctx, userID, "message_id", id)
	})
}

// SaveExchange writes a conversation turn and its events in one
// transaction: the new conversation (if any), the inbound message, the
// reply, the conversation's counters, and the events with their delivery
// jobs; with x.Turn, the turn and its stream events too.
func (q *Queries) SaveExchange(ctx context.Context, x *ams.Exchange) error {
	var msgs []*ams.Message
	for _, m := range []*ams.Message{x.Inbound, x.Reply} {
		if m != nil {
			msgs = append(msgs, m)
		}
	}
	// The statements are made before the transaction (on SQLite it runs
	// on the one writer, which then only runs them) and go in one batch
	// (one round trip on PostgreSQL), after the update of an existing
	// conversation, which must find it (and lock it) before anything
	// refers to it.
	var rest []Stmt
	if c := x.NewConversation; c != nil {
		nc := *c
		if len(msgs) > 0 {
			last := msgs[len(msgs)-1]
			nc.MessageCount, nc.LastMessageAt, nc.UpdatedAt = len(msgs), last.CreatedAt, last.CreatedAt
		}
		rest = append(rest, insertConversation(&nc))
	}
	if t := x.Turn; t != nil {
		stmts, err := insertTurn(t)
		if err != nil {
			return err
		}
		rest = append(rest, stmts...)
	}
	if len(msgs) > 0 {
		// Both messages in one INSERT, in order.
		args := make([]any, 0, 9*len(msgs))
		for _, m := range msgs {
			args = append(args, m.ID, m.UserID, m.AssistantID, m.ConversationID, m.Direction, m.Content, MS(m.CreatedAt), MS(m.UpdatedAt),
				ams.EncodeMetadata(m.Metadata))
		}
		rest = append(rest, Stmt{opInsertMessages, insertMessagesSQL(len(msgs)), args})
	}
	rest = append(rest, turnEventStmts(x.Stream)...)
	head := len(rest)
	if x.Turn != nil {
		turnEvents(x.Turn.ID, x.Events)
	}
	evs, err := q.eventStmts(ctx, x.Events, true)
	if err != nil {
		return err
	}
	rest = append(rest, evs...)
	began := q.tx == nil
	if began && x.NewConversation != nil && q.s.d.CombineWrites && pendingRequest(ctx) == nil {
		// A whole turn in a new conversation: with others where the
		// dialect combines writes (exchange.go).
		return q.s.exchanges.write(ctx, rest, head)
	}
	return q.inTx(ctx, func(q *Queries) error {
		if x.NewConversation == nil && len(msgs) > 0 {
			last := msgs[len(msgs)-1]
			n, err := q.exec(ctx, "update conversation", `UPDATE conversations SET message_count = message_count + $1, last_message_at = $2, updated_at = $2
				WHERE id = $3 AND user_id = $4`, len(msgs), MS(last.CreatedAt), x.ConversationID, last.UserID)
			if err != nil {
				return err
			}
			if n == 0 {
				return ams.NotFound("conversation", x.ConversationID)
			}
		}
		return q.runEmitLast(ctx, rest, head, began)
	})
}
