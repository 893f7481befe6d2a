package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// FollowEventsParams selects the events FollowEvents reads. Zero fields
// select all.
type FollowEventsParams struct {
	// Type keeps the events of one type.
	Type string
	// LastEventID starts after this event ("": after the newest event
	// listed when FollowEvents is called, so only new events).
	LastEventID string
	// OnConnect, when set, is called each time the stream is open (first
	// connection and every resumption), with the id it resumes after
	// ("" for the first connection without LastEventID).
	OnConnect func(lastEventID string)
}

// StreamedEvent is an event of the account's stream: the Event, and its
// JSON exactly as the server sent it (to forward or verify unchanged).
type StreamedEvent struct {
	Event
	Raw json.RawMessage
}

// DefaultStreamIdle is how long FollowEvents waits without a byte (the
// server sends a keep-alive comment every 15 s) before it takes the
// connection for dead and resumes on a new one.
const DefaultStreamIdle = 45 * time.Second

// TriggerEvent records a test event of type typ (POST /v1/events/trigger):
// listed, streamed and delivered like any event of its type, its data a
// made-up record of the type and its Test true. It returns the event.
func (c *Client) TriggerEvent(ctx context.Context, typ string) (*Event, error) {
	out := new(Event)
	if err := c.Request(ctx, http.MethodPost, "/events/trigger", map[string]string{"type": typ}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// FollowEvents reads the account's events live (GET /v1/events/stream),
// in the catch-up order of ListEvents, calling fn with each, until ctx is
// done (it returns ctx.Err()), fn returns an error (returned), or the
// stream cannot be opened again. A dropped connection, or one silent for
// DefaultStreamIdle, is resumed after the last event received (with
// Last-Event-ID), so that no event is skipped or repeated; up to the
// client's retry count of failed attempts in a row, with backoff. An
// error answer other than 429 or 5xx (a bad key, a cursor that is no
// event) is returned at once as the *Error.
func (c *Client) FollowEvents(ctx context.Context, p *FollowEventsParams, fn func(*StreamedEvent) error) error {
	var par FollowEventsParams
	if p != nil {
		par = *p
	}
	last := par.LastEventID
	if last == "" {
		// Start after the newest event listed now, as the server would,
		// but with the cursor known here: a connection dropped before
		// the first event resumes from it, not from the newest event
		// of the moment of the resumption. (An account without events
		// has no cursor: see the loop.)
		page, err := c.ListEvents(ctx, &ListEventsParams{Type: par.Type, ListParams: ListParams{Limit: 1, Order: "desc"}})
		if err != nil {
			return err
		}
		if len(page.Data) > 0 {
			last = page.Data[0].ID
		}
	}
	failures := 0
	for {
		if last == "" {
			// The account had no event (of this type) when following
			// began, so every event it has now is new: the oldest one, if
			// any (emitted while a connection was down), comes next, and
			// is the cursor to resume from.
			page, err := c.ListEvents(ctx, &ListEventsParams{Type: par.Type, ListParams: ListParams{Limit: 1, Order: "asc"}})
			if err != nil {
				return err
			}
			if len(page.Data) > 0 {
				ev := &StreamedEvent{Event: page.Data[0]}
				if ev.Raw, err = json.Marshal(ev.Event); err != nil {
					return err
				}
				last = ev.ID
				if err := fn(ev); err != nil {
					return err
				}
			}
		}
		resp, err := c.openEvents(ctx, par.Type, last)
		if err == nil {
			failures = 0
			if par.OnConnect != nil {
				par.OnConnect(last)
			}
			var fnErr error
			err, fnErr = c.readEvents(ctx, resp, &last, fn)
			if fnErr != nil {
				return fnErr
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var e *Error
		if errors.As(err, &e) && errorRetry(e) == retryNo {
			return err
		}
		if failures >= c.maxRetries {
			return fmt.Errorf("ams: GET /v1/events/stream: %w", err)
		}
		delay := backoff(failures)
		if e != nil && e.RetryAfter > delay && e.RetryAfter <= maxRetryAfter {
			delay = e.RetryAfter
		}
		if serr := c.sleep(ctx, delay); serr != nil {
			return serr
		}
		failures++
	}
}

// openEvents opens GET /v1/events/stream after the event last.
func (c *Client) openEvents(ctx context.Context, typ, last string) (*http.Response, error) {
	u := c.baseURL + "/v1/events/stream"
	if typ != "" {
		u += "?type=" + url.QueryEscape(typ)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.userAgent)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := c.httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ams: GET /v1/events/stream: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		return nil, parseError(resp, raw, c.now())
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("ams: GET /v1/events/stream: answer is %q, not an event stream", resp.Header.Get("Content-Type"))
	}
	return resp, nil
}

// readEvents calls fn with each event of one connection, moving *last
// along, until the connection ends (err) or fn fails (fnErr).
func (c *Client) readEvents(ctx context.Context, resp *http.Response, last *string, fn func(*StreamedEvent) error) (err, fnErr error) {
	body := &idleBody{r: resp.Body}
	body.timer = time.AfterFunc(DefaultStreamIdle, body.expire)
	defer func() {
		body.timer.Stop()
		resp.Body.Close()
	}()
	br := bufio.NewReader(body)
	for {
		var id string
		name, data, err := readSSEFields(br, &id)
		if err != nil {
			if body.expired() {
				err = fmt.Errorf("no byte for %s: %w", DefaultStreamIdle, err)
			}
			return err, nil
		}
		if id == "" {
			continue // not an event of the account (a later version's)
		}
		ev := &StreamedEvent{Raw: json.RawMessage(data)}
		if err := json.Unmarshal(data, &ev.Event); err != nil {
			return nil, fmt.Errorf("ams: GET /v1/events/stream: decode %s event %s: %w", name, id, err)
		}
		if err := fn(ev); err != nil {
			return nil, err
		}
		*last = id
		if ctx.Err() != nil {
			return ctx.Err(), nil
		}
	}
}

// idleBody is a stream's body that is closed when no byte came for a
// while, so that a read blocked on a dead connection returns.
type idleBody struct {
	r     io.ReadCloser
	timer *time.Timer
	mu    sync.Mutex
	idle  bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.timer.Reset(DefaultStreamIdle)
	}
	return n, err
}

func (b *idleBody) expire() {
	b.mu.Lock()
	b.idle = true
	b.mu.Unlock()
	b.r.Close()
}

func (b *idleBody) expired() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.idle
}
