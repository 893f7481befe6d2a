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
	StreamEventDelta     = "message.delta"
	StreamEventCompleted = "message.completed"
)

// MessageStreamEvent is one event of a streamed reply.
type MessageStreamEvent struct {
	// Type is StreamEventDelta or StreamEventCompleted.
	Type string
	// Delta is the next piece of the reply's text (StreamEventDelta). The
	// deltas put together are the reply's content.
	Delta string
	// Message is the stored reply (StreamEventCompleted), the last event.
	Message *Message
}

// SendMessageStream sends a message like SendMessage, with "stream": true,
// and yields the reply as the server produces it: StreamEventDelta events
// with pieces of text, then one StreamEventCompleted event with the stored
// reply. An error ends the sequence: an *Error for an error answer before
// the stream began (retried like any request: 429 and 5xx, honouring
// Retry-After) or for an "error" event after it began (StatusCode 200,
// nothing stored), or an error wrapping io.ErrUnexpectedEOF when the
// stream was cut off (retry with the same p.IdempotencyKey: if the reply
// was stored, the server replays it).
//
//	for ev, err := range c.SendMessageStream(ctx, p) {
//		if err != nil {
//			return err
//		}
//		fmt.Print(ev.Delta)
//	}
//
// Stopping the loop early closes the connection; the server then stores
// nothing, unless the reply was already complete.
func (c *Client) SendMessageStream(ctx context.Context, p SendMessageParams) iter.Seq2[MessageStreamEvent, error] {
	return func(yield func(MessageStreamEvent, error) bool) {
		resp, err := c.openStream(ctx, p)
		if err != nil {
			yield(MessageStreamEvent{}, err)
			return
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		for {
			name, data, err := readSSE(br)
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				yield(MessageStreamEvent{}, fmt.Errorf("ams: POST /v1/messages: the stream ended before the reply was complete (request %s): %w",
					resp.Header.Get("X-Request-Id"), err))
				return
			}
			switch name {
			case StreamEventDelta:
				var d struct {
					Delta string `json:"delta"`
				}
				if err := json.Unmarshal(data, &d); err != nil {
					yield(MessageStreamEvent{}, fmt.Errorf("ams: POST /v1/messages: decode %s event: %w", name, err))
					return
				}
				if !yield(MessageStreamEvent{Type: name, Delta: d.Delta}, nil) {
					return
				}
			case StreamEventCompleted:
				m := new(Message)
				if err := json.Unmarshal(data, m); err != nil {
					yield(MessageStreamEvent{}, fmt.Errorf("ams: POST /v1/messages: decode %s event: %w", name, err))
					return
				}
				yield(MessageStreamEvent{Type: name, Message: m}, nil)
				return
			case "error":
				yield(MessageStreamEvent{}, parseError(resp, data, c.now()))
				return
			}
			// Other events are for later versions: skipped.
		}
	}
}

// openStream posts the message and returns the answer once it is an event
// stream. Failures before that are retried like Request's.
func (c *Client) openStream(ctx context.Context, p SendMessageParams) (*http.Response, error) {
	payload, err := json.Marshal(struct {
		AssistantID    string `json:"assistant_id"`
		Message        string `json:"message"`
		ConversationID string `json:"conversation_id,omitempty"`
		Stream         bool   `json:"stream"`
	}{p.AssistantID, p.Message, p.ConversationID, true})
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
		}
	}
}
