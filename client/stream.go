package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"strings"
	"time"
)

// Event types of a streamed reply.
const (
	StreamEventTurnStarted = "turn.started"
	StreamEventToolCall    = "tool_call"
	StreamEventToolResult  = "tool_result"
	StreamEventDelta       = "message.delta"
	StreamEventCompleted   = "message.completed"
	// StreamEventTurnRequiresAction ends the stream of a turn that waits
	// for tool outputs or approvals (MessageStreamEvent.TurnRecord).
	// turn.completed, turn.failed and turn.cancelled follow
	// message.completed or the error, which end the sequence already.
	StreamEventTurnRequiresAction = "turn.requires_action"
)

// MessageStreamEvent is one event of a streamed reply.
type MessageStreamEvent struct {
	// Type is one of the StreamEvent constants.
	Type string
	// ID is the event's number in its turn's stream (a resume starts
	// after it); TurnID is the turn.
	ID     string
	TurnID string
	// Turn names the turn (StreamEventTurnStarted, the first event; a
	// retry that resumes a failed turn begins with another one).
	Turn *TurnStarted
	// ToolCall is a tool call of the engine (StreamEventToolCall), and
	// ToolResult its action (StreamEventToolResult).
	ToolCall   *ToolCall
	ToolResult *ToolResult
	// Delta is the next piece of the reply's text (StreamEventDelta). The
	// deltas put together are the reply's content.
	Delta string
	// Message is the stored reply (StreamEventCompleted), the last event.
	Message *Message
	// TurnRecord is the turn of a StreamEventTurnRequiresAction.
	TurnRecord *Turn
}

// TurnStarted is the data of a turn.started event.
type TurnStarted struct {
	TurnID           string `json:"turn_id"`
	InboundMessageID string `json:"inbound_message_id"`
	ConversationID   string `json:"conversation_id"`
	AssistantID      string `json:"assistant_id"`
	// Resumed: a retry resumed the failed or interrupted turn.
	Resumed bool `json:"resumed"`
}

// ToolCall is the data of a tool_call event.
type ToolCall struct {
	TurnID    string          `json:"turn_id"`
	CallSeq   int             `json:"call_seq"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult is the data of a tool_result event: the call's action.
// Replayed is true when a resumed turn found the call committed by an
// earlier attempt and did not run it again.
type ToolResult struct {
	TurnID   string  `json:"turn_id"`
	CallSeq  int     `json:"call_seq"`
	Name     string  `json:"name"`
	Action   *Action `json:"action"`
	Replayed bool    `json:"replayed"`
}

// SendMessageStream sends a message like SendMessage, with "stream": true,
// and yields the turn's events as the server produces them: one
// StreamEventTurnStarted naming the turn, StreamEventToolCall and
// StreamEventToolResult for each tool call, StreamEventDelta events with
// pieces of text, then one StreamEventCompleted event with the stored
// reply. An error ends the sequence: an *Error for an error answer before
// the stream began (retried like any request: 429 and 5xx, honouring
// Retry-After) or for an "error" event after it began (StatusCode 200:
// the turn failed, keeping what its tool calls did; retry with the same
// p.IdempotencyKey to resume it). A dropped connection is resumed from
// the last event received (GET /v1/turns/{id}/events with
// Last-Event-ID), up to the client's retry count, so that no event is
// lost or repeated; after that, an error wrapping io.ErrUnexpectedEOF.
//
//	for ev, err := range c.SendMessageStream(ctx, p) {
//		if err != nil {
//			return err
//		}
//		fmt.Print(ev.Delta)
//	}
//
// Stopping the loop early closes the connection; the turn runs on to its
// end on the server (CancelTurn stops it).
func (c *Client) SendMessageStream(ctx context.Context, p SendMessageParams) iter.Seq2[MessageStreamEvent, error] {
	return func(yield func(MessageStreamEvent, error) bool) {
		resp, err := c.openStream(ctx, p)
		if err != nil {
			yield(MessageStreamEvent{}, err)
			return
		}
		st := &turnStream{c: c, turnID: resp.Header.Get("X-Turn-Id")}
		for ev, err := range st.events(ctx, resp) {
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// openStream posts the message and returns the answer once it is an event
// stream. Failures before that are retried like Request's.
func (c *Client) openStream(ctx context.Context, p SendMessageParams) (*http.Response, error) {
	payload, err := json.Marshal(struct {
		AssistantID       string `json:"assistant_id"`
		Message           string `json:"message"`
		ConversationID    string `json:"conversation_id,omitempty"`
		MultitaskStrategy string `json:"multitask_strategy,omitempty"`
		Stream            bool   `json:"stream"`
	}{p.AssistantID, p.Message, p.ConversationID, p.MultitaskStrategy, true})
	if err != nil {
		return nil, fmt.Errorf("ams: POST /v1/messages: encode request body: %w", err)
	}
	url := c.baseURL + "/v1/messages"
	header := make(http.Header)
	header.Set("Authorization", "Bearer "+c.apiKey)
	header.Set("Accept", "text/event-stream")
	header.Set("Content-Type", "application/json")
	header.Set("User-Agent", c.userAgent)
	key := p.IdempotencyKey
	if key == "" {
		key = NewIdempotencyKey()
	}
	header.Set("Idempotency-Key", key)
	for attempt := 0; ; attempt++ {
		resp, retry, err := c.streamAttempt(ctx, url, header, payload)
		if err == nil {
			return resp, nil
		}
		if attempt >= c.maxRetries || retry == retryNo {
			return nil, err
		}
		wait := backoff(attempt)
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > maxRetryAfter {
				return nil, err
			}
			wait = apiErr.RetryAfter
		}
		if dl, ok := ctx.Deadline(); ok && c.now().Add(wait).After(dl) {
			return nil, err
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("ams: POST /v1/messages: waiting to retry: %w (last attempt: %w)", serr, err)
		}
	}
}

// streamAttempt sends the request once. The client's timeout bounds the
// wait for the answer's headers only: a stream may last longer.
func (c *Client) streamAttempt(ctx context.Context, url string, header http.Header, payload []byte) (*http.Response, retryClass, error) {
	actx, cancel := context.WithCancel(ctx)
	var timer *time.Timer
	if c.timeout > 0 {
		timer = time.AfterFunc(c.timeout, cancel)
	}
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		cancel()
		return nil, retryNo, fmt.Errorf("ams: POST %s: %w", url, err)
	}
	req.Header = header.Clone()
	resp, err := c.httpClient.Do(req)
	if timer != nil && !timer.Stop() && err == nil {
		// The timeout fired as the headers came: the body is canceled.
		resp.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		// Every POST carries an idempotency key: a retry cannot send twice.
		return nil, networkRetry(ctx, err), fmt.Errorf("ams: POST %s: %w", url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		cancel()
		e := parseError(resp, raw, c.now())
		return nil, errorRetry(e), e
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		cancel()
		return nil, retryNo, fmt.Errorf("ams: POST %s: answer is %q, not an event stream (request %s)",
			url, resp.Header.Get("Content-Type"), resp.Header.Get("X-Request-Id"))
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, retryNo, nil
}

// cancelBody releases the attempt's context when the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// readSSE reads the next event of a Server-Sent Events stream: its name
// ("message" when it has none) and its data lines joined by newlines.
// Comments and fields other than event and data are skipped.
func readSSE(br *bufio.Reader) (string, []byte, error) {
	return readSSEFields(br, nil)
}

// readSSEFields is readSSE that also sets *id to the event's id field
// (when id is not nil).
func readSSEFields(br *bufio.Reader, id *string) (string, []byte, error) {
	var name string
	var data []byte
	seen := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && !seen {
				return "", nil, io.EOF
			}
			if err == io.EOF {
				return "", nil, io.ErrUnexpectedEOF
			}
			return "", nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !seen {
				continue
			}
			if name == "" {
				name = "message"
			}
			return name, data, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name, seen = value, true
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
			seen = true
		case "id":
			if id != nil {
				*id = value
			}
		}
	}
}
