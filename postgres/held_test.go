package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/amsdev/ams/internal/testing/wait"
)

// holder is what the tracers that hold combined statements share: it
// holds the first statement it is told of until release is closed, and
// records how many records each carried.
type holder struct {
	mu      sync.Mutex
	sizes   []int
	holding chan struct{} // closed once the first is held
	release chan struct{}
}

// reset forgets what was seen: the next statement is held.
func (h *holder) reset() {
	h.mu.Lock()
	h.sizes, h.holding, h.release = nil, make(chan struct{}), make(chan struct{})
	h.mu.Unlock()
}

// seen records a combined statement of n records and holds it if it is
// the first.
func (h *holder) seen(n int) {
	h.mu.Lock()
	h.sizes = append(h.sizes, n)
	first := len(h.sizes) == 1
	h.mu.Unlock()
	if first {
		close(h.holding)
		<-h.release
	}
}

// batches returns the records each statement seen carried.
func (h *holder) batches() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sizes)
}

// leavesQueue checks that a call queued behind a combined statement in
// flight waits no longer than its context allows: call runs with a
// context cancelled once queued counts it, and must answer the
// context's error and leave the queue.
func leavesQueue(t *testing.T, what string, queued func() int, call func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gave := make(chan error, 1)
	go func() { gave <- call(ctx) }()
	wait.Eventually(t, "the "+what+" to queue", func() bool { return queued() == 1 })
	cancel()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("a queued %s whose caller went away: %v", what, err)
	}
	if n := queued(); n != 0 {
		t.Fatalf("%d queued after the %s's caller went away", n, what)
	}
}
