package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"slices"
)

// get fetches path with query q into a new T.
func get[T any](ctx context.Context, c *Client, path string, q url.Values) (*T, error) {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	out := new(T)
	if err := c.Request(ctx, http.MethodGet, path, nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// getByID fetches the record at prefix/id.
func getByID[T any](ctx context.Context, c *Client, prefix, id string) (*T, error) {
	if id == "" {
		return nil, fmt.Errorf("ams: GET %s/{id}: %w", prefix, errEmptyID)
	}
	return get[T](ctx, c, prefix+"/"+url.PathEscape(id), nil)
}

var errEmptyID = errors.New("id is empty")

// ListAssistants returns one page of the account's assistants.
func (c *Client) ListAssistants(ctx context.Context, p *ListParams) (*List[Assistant], error) {
	return get[List[Assistant]](ctx, c, "/assistants", p.query())
}

// GetAssistant returns the assistant with id.
func (c *Client) GetAssistant(ctx context.Context, id string) (*Assistant, error) {
	return getByID[Assistant](ctx, c, "/assistants", id)
}

// SendMessage sends a message to an assistant and returns the assistant's
// reply (direction "outbound"). The reply's ConversationID names the
// conversation, new unless p.ConversationID was set. The request carries
// p.IdempotencyKey, or a generated key, so retries cannot send it twice.
func (c *Client) SendMessage(ctx context.Context, p SendMessageParams) (*Message, error) {
	out := new(Message)
	if err := c.Request(ctx, http.MethodPost, "/messages", sendBody(p, false), out, WithIdempotencyKey(p.IdempotencyKey)); err != nil {
		return nil, err
	}
	return out, nil
}

// sendBody is the body of POST /messages for p.
func sendBody(p SendMessageParams, background bool) any {
	return struct {
		AssistantID       string   `json:"assistant_id"`
		Message           string   `json:"message"`
		ConversationID    string   `json:"conversation_id,omitempty"`
		Metadata          Metadata `json:"metadata,omitempty"`
		MultitaskStrategy string   `json:"multitask_strategy,omitempty"`
		Background        bool     `json:"background,omitempty"`
	}{p.AssistantID, p.Message, p.ConversationID, p.Metadata, p.MultitaskStrategy, background}
}

// GetMessage returns the message with id.
func (c *Client) GetMessage(ctx context.Context, id string) (*Message, error) {
	return getByID[Message](ctx, c, "/messages", id)
}

// ListConversations returns one page of the account's conversations,
// optionally only those of one assistant.
func (c *Client) ListConversations(ctx context.Context, p *ListConversationsParams) (*List[Conversation], error) {
	var q url.Values
	if p == nil {
		q = url.Values{}
	} else {
		q = p.ListParams.query()
		if p.AssistantID != "" {
			q.Set("assistant_id", p.AssistantID)
		}
	}
	return get[List[Conversation]](ctx, c, "/conversations", q)
}

// GetConversation returns the conversation with id.
func (c *Client) GetConversation(ctx context.Context, id string) (*Conversation, error) {
	return getByID[Conversation](ctx, c, "/conversations", id)
}

// ListConversationMessages returns one page of a conversation's messages,
// newest first unless p.Order is OrderAsc.
func (c *Client) ListConversationMessages(ctx context.Context, conversationID string, p *ListParams) (*List[Message], error) {
	if conversationID == "" {
		return nil, fmt.Errorf("ams: GET /conversations/{id}/messages: %w", errEmptyID)
	}
	return get[List[Message]](ctx, c, "/conversations/"+url.PathEscape(conversationID)+"/messages", p.query())
}

// ListIntegrations returns one page of the account's integrations.
func (c *Client) ListIntegrations(ctx context.Context, p *ListParams) (*List[Integration], error) {
	return get[List[Integration]](ctx, c, "/integrations", p.query())
}

// ListEvents returns one page of the account's events of the last 30
// days, optionally only those of one type or created in a time range.
//
// The list's order only grows at its end: walking it with Order "asc"
// and After set to the last id seen (AllEvents, or polling again with
// that id when HasMore is false) yields every event exactly once, even
// those whose change committed late. An event is listed once every
// change that began writing before it has finished, which may be a
// moment after GetEvent or a webhook already has it.
func (c *Client) ListEvents(ctx context.Context, p *ListEventsParams) (*List[Event], error) {
	var q url.Values
	if p == nil {
		q = url.Values{}
	} else {
		q = p.ListParams.query()
		setQuery(q, "type", p.Type)
		setQueryTime(q, "created_after", p.CreatedAfter)
		setQueryTime(q, "created_before", p.CreatedBefore)
	}
	return get[List[Event]](ctx, c, "/events", q)
}

// GetEvent returns one event of the account's last 30 days by its id.
func (c *Client) GetEvent(ctx context.Context, id string) (*Event, error) {
	return getByID[Event](ctx, c, "/events", id)
}

// AllAssistants iterates over the assistants from the page p selects on,
// fetching pages as needed; see Paginate.
func (c *Client) AllAssistants(ctx context.Context, p *ListParams) iter.Seq2[Assistant, error] {
	return Paginate(ctx, p, c.ListAssistants)
}

// AllConversations iterates over the conversations from the page p selects
// on, fetching pages as needed; see Paginate.
func (c *Client) AllConversations(ctx context.Context, p *ListConversationsParams) iter.Seq2[Conversation, error] {
	var params ListConversationsParams
	if p != nil {
		params = *p
	}
	return Paginate(ctx, &params.ListParams, func(ctx context.Context, lp *ListParams) (*List[Conversation], error) {
		q := params
		q.ListParams = *lp
		return c.ListConversations(ctx, &q)
	})
}

// AllConversationMessages iterates over a conversation's messages from the
// page p selects on, fetching pages as needed; see Paginate.
func (c *Client) AllConversationMessages(ctx context.Context, conversationID string, p *ListParams) iter.Seq2[Message, error] {
	return Paginate(ctx, p, func(ctx context.Context, lp *ListParams) (*List[Message], error) {
		return c.ListConversationMessages(ctx, conversationID, lp)
	})
}

// AllIntegrations iterates over the integrations from the page p selects
// on, fetching pages as needed; see Paginate.
func (c *Client) AllIntegrations(ctx context.Context, p *ListParams) iter.Seq2[Integration, error] {
	return Paginate(ctx, p, c.ListIntegrations)
}

// AllEvents iterates over the events from the page p selects on, fetching
// pages as needed; see Paginate.
func (c *Client) AllEvents(ctx context.Context, p *ListEventsParams) iter.Seq2[Event, error] {
	var params ListEventsParams
	if p != nil {
		params = *p
	}
	return Paginate(ctx, &params.ListParams, func(ctx context.Context, lp *ListParams) (*List[Event], error) {
		q := params
		q.ListParams = *lp
		return c.ListEvents(ctx, &q)
	})
}

// Paginate turns a page-fetching function into an iterator over every
// record of a list. It fetches the page p selects (p is not modified; nil
// means the defaults), yields its records, and while the page says
// has_more fetches the next one with After set to the page's last id.
//
// When p.Before is set the walk goes the other way: the next page is
// fetched with Before set to the page's first id, and each page's records
// are yielded last to first, so records come nearest to the Before record
// first, that is in the reverse of the list's order.
//
// A failed fetch is yielded once as (zero T, err) and ends the iteration.
// Stopping the loop early fetches no further pages.
func Paginate[T any](ctx context.Context, p *ListParams, fetch func(context.Context, *ListParams) (*List[T], error)) iter.Seq2[T, error] {
	var start ListParams
	if p != nil {
		start = *p
	}
	return func(yield func(T, error) bool) {
		params := start // each range over the iterator starts afresh
		backward := params.Before != ""
		for {
			page, err := fetch(ctx, &params)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			data := page.Data
			if backward {
				data = slices.Clone(data)
				slices.Reverse(data)
			}
			for _, v := range data {
				if !yield(v, nil) {
					return
				}
			}
			if !page.HasMore || len(page.Data) == 0 {
				return
			}
			prev := params
			if backward {
				params.Before = page.FirstID
			} else {
				params.After = page.LastID
			}
			if params == prev || (params.After == "" && params.Before == "") {
				var zero T
				yield(zero, fmt.Errorf("ams: pagination stopped: page has_more but its cursor (%q) does not move on", page.LastID))
				return
			}
		}
	}
}
