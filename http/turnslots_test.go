package http_test

import (
	"context"
	"sync"
	"testing"

	"github.com/amsdev/ams"
	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// TestBackgroundTurnsHoldSlots: background turns count against the
// account's concurrent turns for as long as they run, like turns
// answered at their reply. With the cap at 2 and two background turns
// running, a third background send and a plain one get 429
// concurrent_turns_exceeded with Retry-After (nothing stored); once one
// of them finishes, a new one is admitted.
func TestBackgroundTurnsHoldSlots(t *testing.T) {
	t.Parallel()
	started, finish := make(chan string, 10), make(chan struct{}, 10)
	var stop sync.Once
	halt := make(chan struct{})
	t.Cleanup(func() { stop.Do(func() { close(halt) }) }) // no turn is left waiting
	f := &fixture{amstest.New(t, amstest.WithEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		started <- req.History[len(req.History)-1].Content
		select {
		case <-finish:
		case <-halt:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &ams.Reply{Content: "Done."}, nil
	})))}
	f.API.MaxConcurrentTurns = 2
	background := func(msg string) *response {
		return f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"`+msg+`","background":true}`)
	}
	var ids []string
	for _, msg := range []string{"one", "two"} {
		r := background(msg)
		if r.status != 202 {
			t.Fatalf("background send %s: %d %s", msg, r.status, r.body)
		}
		ids = append(ids, r.json(t)["id"].(string))
	}
	<-started
	<-started
	before := f.counts()
	for _, r := range []*response{background("three"),
		f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"plain"}`)} {
		wantError(t, r, 429, "rate_limit_error", "concurrent_turns_exceeded", "")
		if r.header.Get("Retry-After") != amshttp.TurnRetryAfter {
			t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
		}
	}
	if after := f.counts(); after != before {
		t.Fatalf("a refused send stored something: %v, then %v", before, after)
	}
	// One finishes: its slot is free once it has ended.
	finish <- struct{}{}
	wait.Eventually(t, "a background turn to complete", func() bool {
		n := 0
		for _, id := range ids {
			if r := f.do("GET", "/v1/turns/"+id, ""); r.status == 200 && r.json(t)["status"] == "completed" {
				n++
			}
		}
		return n == 1
	})
	var admitted *response
	wait.Eventually(t, "a new background turn to be admitted", func() bool {
		admitted = background("four")
		return admitted.status != 429
	})
	if admitted.status != 202 {
		t.Fatalf("after one ended: %d %s", admitted.status, admitted.body)
	}
	<-started
	// The cap holds again: two run.
	wantError(t, background("five"), 429, "rate_limit_error", "concurrent_turns_exceeded", "")
	finish <- struct{}{}
	finish <- struct{}{}
}
