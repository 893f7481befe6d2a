package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/testing/amstest"
)

// eventsCutTransport cuts the body of the first GET /v1/events/stream
// answer a few bytes into the second event (after the opening comment
// and the first event), as a dropped connection would.
type eventsCutTransport struct {
	cut atomic.Bool
}

func (t *eventsCutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.URL.Path == "/v1/events/stream" && !t.cut.Swap(true) {
		resp.Body = &cutAfterBlocks{ReadCloser: resp.Body, blocks: 2, extra: 20}
	}
	return resp, err
}

// cutAfterBlocks ends a stream with io.ErrUnexpectedEOF extra bytes after
// its blocks-th blank line.
type cutAfterBlocks struct {
	io.ReadCloser
	blocks, extra int
	prev          byte
}

func (b *cutAfterBlocks) Read(p []byte) (int, error) {
	if b.blocks <= 0 && b.extra <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > 1 {
		p = p[:1] // a byte at a time, to count exactly
	}
	n, err := b.ReadCloser.Read(p)
	if n == 1 {
		if b.blocks <= 0 {
			b.extra--
		} else if p[0] == '\n' && b.prev == '\n' {
			b.blocks--
		}
		b.prev = p[0]
	}
	return n, err
}

// TestFollowEventsLive: TriggerEvent's events come on FollowEvents, in
// order, each once, across a connection cut inside an event; the raw JSON
// is the event's; a bad cursor is the *Error at once.
func TestFollowEventsLive(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) { testFollowEventsLive(t, liveFixture(t, engine)) })
	}
}

func testFollowEventsLive(t *testing.T, f *amstest.Fixture) {
	// The first connection is cut inside the second event.
	c := client.New(f.Server.URL, f.Key, client.WithHTTPClient(&http.Client{Transport: &eventsCutTransport{}}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	connected := make(chan string, 10)
	got := make(chan *client.StreamedEvent, 10)
	done := make(chan error, 1)
	go func() {
		done <- c.FollowEvents(ctx, &client.FollowEventsParams{OnConnect: func(last string) { connected <- last }},
			func(ev *client.StreamedEvent) error { got <- ev; return nil })
	}()
	<-connected
	var want []string
	for _, typ := range []string{"task.created", "task.updated", "message.created"} {
		ev, err := c.TriggerEvent(ctx, typ)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ev.ID)
	}
	var seen []string
	for len(seen) < len(want) {
		ev := <-got
		seen = append(seen, ev.ID)
		var raw map[string]any
		if err := json.Unmarshal(ev.Raw, &raw); err != nil || raw["id"] != ev.ID || !ev.Test || raw["test"] != true {
			t.Fatalf("event %+v raw %s", ev.Event, ev.Raw)
		}
	}
	if resumed := <-connected; resumed != want[0] {
		t.Fatalf("resumed after %q, want %q", resumed, want[0])
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("events %v, want %v", seen, want)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("FollowEvents ended with %v", err)
	}

	err := client.New(f.Server.URL, f.Key).FollowEvents(context.Background(), &client.FollowEventsParams{LastEventID: "evt_nosuchevent"},
		func(*client.StreamedEvent) error { return nil })
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Param != "Last-Event-ID" {
		t.Fatalf("bad cursor: %v", err)
	}
}
