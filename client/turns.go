package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"time"
)

// Turn statuses.
const (
	TurnRunning   = "running"
	TurnCompleted = "completed"
	TurnFailed    = "failed"
	TurnCancelled = "cancelled"
)

// Turn is the record of one SendMessage: its inbound message, the tool
// calls of its engine (actions with its TurnID) and its reply. A failed
// or cancelled turn keeps the effects of the calls that committed; a
// retry with the same idempotency key resumes a failed turn without
// running those calls again.
type Turn struct {
	ID               string `json:"id"`     // "trn_..."
	Object           string `json:"object"` // "turn"
	AssistantID      string `json:"assistant_id"`
	ConversationID   string `json:"conversation_id"`
	Status           string `json:"status"` // TurnRunning, TurnCompleted, TurnFailed or TurnCancelled
	InboundMessageID string `json:"inbound_message_id"`
	ReplyMessageID   string `json:"reply_message_id"` // "" until completed
	// Error is why a failed or cancelled turn ended (code "turn_cancelled"
	// for a cancel); nil otherwise.
	Error *ActionError `json:"error"`
	// CancelRequested: a cancel was asked of the process that runs the
	// turn, which has not acted on it yet.
	CancelRequested bool       `json:"cancel_requested"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	CompletedAt     *time.Time `json:"completed_at"`

	// Background: started with SendMessageBackground; it runs on the
	// server within its --background-turn-timeout.
	Background bool `json:"background"`
	// MultitaskStrategy is what its send did with the conversation's
	// unfinished turns (MultitaskEnqueue, MultitaskReject,
	// MultitaskInterrupt).
	MultitaskStrategy string `json:"multitask_strategy"`
	// RequiredAction is what a turn in TurnRequiresAction waits for
	// (SubmitToolOutputs or ApproveToolCalls answer it); nil otherwise.
	RequiredAction *RequiredAction `json:"required_action"`
	// Usage is the tokens its engine calls took.
	Usage TurnUsage `json:"usage"`
	// StopReason is why it stopped ("" while queued or running):
	// "end_turn", "max_output_tokens", "requires_action", "cancelled",
	// "interrupted" or "error".
	StopReason string `json:"stop_reason"`
	// ActionIDs are the actions its tool calls recorded, in order.
	ActionIDs []string `json:"action_ids"`
}

// TurnUsage is a turn's token count.
type TurnUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// Statuses of a turn beyond running, completed, failed and cancelled: a
// send queued behind the unfinished turns of its conversation, and a
// turn waiting for tool outputs or approvals.
const (
	TurnQueued         = "queued"
	TurnRequiresAction = "requires_action"
)

// Multitask strategies (SendMessageParams.MultitaskStrategy): what a send
// does when its conversation has an unfinished turn.
const (
	MultitaskEnqueue   = "enqueue"
	MultitaskReject    = "reject"
	MultitaskInterrupt = "interrupt"
)

// SendMessageBackground sends a message with "background": true: the
// server answers at once (202) with the turn, queued or running, which
// runs on the server (another process takes it over if its process
// dies). Follow it with GetTurn, FollowTurn, or the turn.* events.
func (c *Client) SendMessageBackground(ctx context.Context, p SendMessageParams) (*Turn, error) {
	out := new(Turn)
	if err := c.Request(ctx, http.MethodPost, "/messages", sendBody(p, true), out, WithIdempotencyKey(p.IdempotencyKey)); err != nil {
		return nil, err
	}
	return out, nil
}

// ListTurnsParams select one page of turns.
type ListTurnsParams struct {
	ListParams
	ConversationID string // only the turns of this conversation
}

// GetTurn returns the turn with id.
func (c *Client) GetTurn(ctx context.Context, id string) (*Turn, error) {
	return getByID[Turn](ctx, c, "/turns", id)
}

// ListTurns returns one page of the account's turns, optionally only
// those of one conversation.
func (c *Client) ListTurns(ctx context.Context, p *ListTurnsParams) (*List[Turn], error) {
	q := url.Values{}
	if p != nil {
		q = p.ListParams.query()
		if p.ConversationID != "" {
			q.Set("conversation_id", p.ConversationID)
		}
	}
	return get[List[Turn]](ctx, c, "/turns", q)
}

// AllTurns iterates over the account's turns from the first page to the
// last.
func (c *Client) AllTurns(ctx context.Context, p *ListTurnsParams) iter.Seq2[Turn, error] {
	var params ListTurnsParams
	if p != nil {
		params = *p
	}
	return Paginate(ctx, &params.ListParams, func(ctx context.Context, lp *ListParams) (*List[Turn], error) {
		q := params
		q.ListParams = *lp
		return c.ListTurns(ctx, &q)
	})
}

// CancelTurn stops a running turn and returns it: cancelled, or still
// running with CancelRequested when another server process runs it (it
// stops at its next tool call). A turn that has ended is returned
// unchanged.
func (c *Client) CancelTurn(ctx context.Context, id string) (*Turn, error) {
	if id == "" {
		return nil, fmt.Errorf("ams: POST /turns/{id}/cancel: %w", errEmptyID)
	}
	out := new(Turn)
	if err := c.Request(ctx, http.MethodPost, "/turns/"+url.PathEscape(id)+"/cancel", nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CancelMessage is CancelTurn for the turn whose inbound message is
// messageID.
func (c *Client) CancelMessage(ctx context.Context, messageID string) (*Turn, error) {
	if messageID == "" {
		return nil, fmt.Errorf("ams: POST /messages/{id}/cancel: %w", errEmptyID)
	}
	out := new(Turn)
	if err := c.Request(ctx, http.MethodPost, "/messages/"+url.PathEscape(messageID)+"/cancel", nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// FollowTurn reads the turn's stream from after the event lastEventID
// ("" from its start), calling fn with each event, live while the turn
// runs, until its last event: a StreamEventCompleted (FollowTurn returns
// nil) or an "error" event (it returns the *Error). A dropped connection
// is resumed from the last event received (with Last-Event-ID), up to the
// client's retry count; fn's error stops it and is returned.
func (c *Client) FollowTurn(ctx context.Context, turnID, lastEventID string, fn func(MessageStreamEvent) error) error {
	if turnID == "" {
		return fmt.Errorf("ams: GET /turns/{id}/events: %w", errEmptyID)
	}
	st := &turnStream{c: c, turnID: turnID, lastID: lastEventID}
	for ev, err := range st.events(ctx, nil) {
		if err != nil {
			return err
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

// turnStream reads a turn's events over one or more connections.
type turnStream struct {
	c      *Client
	turnID string
	lastID string
}

// events yields the events of resp (the first connection, nil to open
// GET /turns/{id}/events), then of as many resumed connections as needed.
func (st *turnStream) events(ctx context.Context, resp *http.Response) iter.Seq2[MessageStreamEvent, error] {
	return func(yield func(MessageStreamEvent, error) bool) {
		reconnects := 0
		for {
			if resp == nil {
				var err error
				var retry retryClass
				if resp, retry, err = st.open(ctx); err != nil {
					// A resume that failed as a connection can (a reset,
					// a 5xx, a 429) counts as one more reconnect.
					if retry == retryNo || reconnects >= st.c.maxRetries {
						yield(MessageStreamEvent{}, err)
						return
					}
					wait := backoff(reconnects)
					var apiErr *Error
					if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
						wait = apiErr.RetryAfter
					}
					if serr := st.c.sleep(ctx, wait); serr != nil {
						yield(MessageStreamEvent{}, serr)
						return
					}
					reconnects++
					continue
				}
			}
			done, err := st.read(resp, yield)
			resp.Body.Close()
			resp = nil
			if done {
				return
			}
			if ctx.Err() != nil || st.turnID == "" || reconnects >= st.c.maxRetries {
				switch {
				case err == nil || errors.Is(err, io.EOF):
					err = io.ErrUnexpectedEOF
				case ctx.Err() == nil && !errors.Is(err, io.ErrUnexpectedEOF):
					// A reset or another network failure: still a
					// stream that ended early, whatever cut it.
					err = fmt.Errorf("%w (%w)", io.ErrUnexpectedEOF, err)
				}
				yield(MessageStreamEvent{}, fmt.Errorf("ams: turn %s: the stream ended before the turn did: %w", st.turnID, err))
				return
			}
			if serr := st.c.sleep(ctx, backoff(reconnects)); serr != nil {
				yield(MessageStreamEvent{}, serr)
				return
			}
			reconnects++
		}
	}
}

// open opens GET /turns/{id}/events after the last event received; retry
// says whether a failure may go away by itself (retryNo when not).
func (st *turnStream) open(ctx context.Context) (*http.Response, retryClass, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.c.baseURL+"/v1/turns/"+url.PathEscape(st.turnID)+"/events", nil)
	if err != nil {
		return nil, retryNo, err
	}
	req.Header.Set("Authorization", "Bearer "+st.c.apiKey)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", st.c.userAgent)
	if st.lastID != "" {
		req.Header.Set("Last-Event-ID", st.lastID)
	}
	resp, err := st.c.httpClient.Do(req)
	if err != nil {
		return nil, networkRetry(ctx, err), fmt.Errorf("ams: GET /turns/%s/events: %w", st.turnID, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		e := parseError(resp, raw, st.c.now())
		if retry := errorRetry(e); retry == retryNo || (e.RetryAfter > maxRetryAfter) {
			return nil, retryNo, e
		}
		return nil, retryIfRepeatable, e
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, retryNo, fmt.Errorf("ams: GET /turns/%s/events: answer is %q, not an event stream", st.turnID, resp.Header.Get("Content-Type"))
	}
	return resp, retryNo, nil
}

// read yields the events of one connection; done is true when the turn's
// last event was read, yield said stop, or an event could not be read.
func (st *turnStream) read(resp *http.Response, yield func(MessageStreamEvent, error) bool) (done bool, err error) {
	br := bufio.NewReader(resp.Body)
	for {
		id, name, data, err := readSSEWithID(br)
		if err != nil {
			return false, err
		}
		ev := MessageStreamEvent{Type: name, ID: id, TurnID: st.turnID}
		var derr error
		switch name {
		case StreamEventTurnStarted:
			ev.Turn = new(TurnStarted)
			derr = json.Unmarshal(data, ev.Turn)
			if derr == nil {
				st.turnID, ev.TurnID = ev.Turn.TurnID, ev.Turn.TurnID
			}
		case StreamEventToolCall:
			ev.ToolCall = new(ToolCall)
			derr = json.Unmarshal(data, ev.ToolCall)
		case StreamEventToolResult:
			ev.ToolResult = new(ToolResult)
			derr = json.Unmarshal(data, ev.ToolResult)
		case StreamEventDelta:
			var d struct {
				Delta string `json:"delta"`
			}
			derr = json.Unmarshal(data, &d)
			ev.Delta = d.Delta
		case StreamEventCompleted:
			ev.Message = new(Message)
			derr = json.Unmarshal(data, ev.Message)
		case "error":
			if id != "" {
				st.lastID = id
			}
			yield(MessageStreamEvent{}, parseError(resp, data, st.c.now()))
			return true, nil
		case StreamEventTurnRequiresAction:
			// The turn waits for tool outputs or approvals: the stream
			// ends here, and goes on once the turn is resumed.
			ev.TurnRecord = new(Turn)
			if derr = json.Unmarshal(data, ev.TurnRecord); derr == nil {
				if id != "" {
					st.lastID = id
				}
				yield(ev, nil)
				return true, nil
			}
		default:
			// Other events are for later versions: skipped.
			if id != "" {
				st.lastID = id
			}
			continue
		}
		if derr != nil {
			yield(MessageStreamEvent{}, fmt.Errorf("ams: turn %s: decode %s event: %w", st.turnID, name, derr))
			return true, nil
		}
		if id != "" {
			st.lastID = id
		}
		if !yield(ev, nil) || name == StreamEventCompleted {
			return true, nil
		}
	}
}

// readSSEWithID reads the next event of a stream with its id.
func readSSEWithID(br *bufio.Reader) (id, name string, data []byte, err error) {
	id = ""
	name, data, err = readSSEFields(br, &id)
	return id, name, data, err
}
