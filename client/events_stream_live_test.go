package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/amstest"
)

// eventsCutTransport cuts the body of the first GET /v1/events/stream
// answer after limit bytes, as a dropped connection would.
type eventsCutTransport struct {
	limit int
	cut   atomic.Bool
}

func (t *eventsCutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.URL.Path == "/v1/events/stream" && !t.cut.Swap(true) {
		resp.Body = &cutBody{ReadCloser: resp.Body, left: t.limit}
	}
	return resp, err
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
	// The first connection is cut inside the second event (the first
	// comment is 15 bytes, an event about 200).
	c := client.New(f.Server.URL, f.Key, client.WithHTTPClient(&http.Client{Transport: &eventsCutTransport{limit: 300}}))
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
		if err := json.Unmarshal(ev.Raw, &raw); err != nil || raw["id"] != ev.ID || ev.Data["test"] != true {
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
