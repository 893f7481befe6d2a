package webhook_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/amstest"
)

// claimCounter counts the claims a worker makes and the jobs they take.
type claimCounter struct {
	ams.DeliveryQueue
	mu           sync.Mutex
	claims, jobs int
}

func (c *claimCounter) ClaimJobs(ctx context.Context, now time.Time, cl ams.Claim) ([]*ams.Job, error) {
	jobs, err := c.DeliveryQueue.ClaimJobs(ctx, now, cl)
	c.mu.Lock()
	if len(jobs) > 0 {
		c.claims++
		c.jobs += len(jobs)
	}
	c.mu.Unlock()
	return jobs, err
}

// TestClaimGather: while a backlog drains, the worker waits ClaimGather
// after a freed slot, so that one claim refills the slots freed meanwhile:
// a backlog of 80 deliveries through 8 slots takes about 10 claims, and every delivery arrives once.
func TestClaimGather(t *testing.T) {
	f := amstest.New(t)
	rc := newReceiver(t, time.Now)
	createWebhook(t, f, rc.URL, "message.created")
	for range 40 { // 80 events
		sendMessage(t, f, "backlog")
	}
	cc := &claimCounter{DeliveryQueue: f.Worker.Queue}
	f.Worker.Queue = cc
	f.Worker.Concurrency, f.Worker.PerWebhook, f.Worker.ClaimGather = 16, 8, 100*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Worker.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); len(rc.requests()) < 80; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 80 deliveries arrived in 10 s", len(rc.requests()))
		}
	}
	seen := map[string]bool{}
	for _, r := range rc.requests() {
		id := r.header.Get("webhook-id")
		if seen[id] {
			t.Fatalf("event %s delivered twice", id)
		}
		seen[id] = true
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	// Without the wait, claims take one or a few jobs each (23 claims
	// here, where it was measured); with it, about the 8 slots each.
	if cc.jobs != 80 || cc.claims > 16 {
		t.Fatalf("%d claims took %d jobs; want 80 jobs in at most 16 claims (5 or more a claim)", cc.claims, cc.jobs)
	}
	t.Logf("%d claims for %d deliveries", cc.claims, cc.jobs)
}
