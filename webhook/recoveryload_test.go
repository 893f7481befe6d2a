package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/webhook"
)

// claimLog is the worker's queue, with each claim's jobs noted.
type claimLog struct {
	webhook.Queue
	mu     sync.Mutex
	claims [][]*ams.Job
}

func (c *claimLog) ClaimJobs(ctx context.Context, now time.Time, cl ams.Claim) ([]*ams.Job, error) {
	jobs, err := c.Queue.ClaimJobs(ctx, now, cl)
	if len(jobs) > 0 {
		c.mu.Lock()
		c.claims = append(c.claims, jobs)
		c.mu.Unlock()
	}
	return jobs, err
}

// claimsOf returns how many claims took jobs of the webhook, and how many
// jobs of it they took.
func (c *claimLog) claimsOf(webhookID string) (claims, jobs int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.claims {
		n := 0
		for _, j := range cl {
			if j.WebhookID == webhookID {
				n++
			}
		}
		if n > 0 {
			claims, jobs = claims+1, jobs+n
		}
	}
	return claims, jobs
}

// metric returns the line of the named metric in GET /metrics.
func metric(t *testing.T, f *amstest.Fixture, name string) string {
	t.Helper()
	resp, err := http.Get(f.Server.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return ""
}

// TestRecoveryUnderLoad (issue 27): while a CPU hog takes every core, on
// both engines, the events each recovery queues are all taken by one claim
// and all delivered at their first attempt, with the worker running as in
// ams serve (on the wall clock). The receiver is the worst a keep-alive
// timeout can be: every connection kept alive from an earlier delivery
// is closed the moment it is reused. The lease and the retry delay are 10
// minutes, so that an event that arrives at all within the test's minute
// arrived with the others, neither waiting out a lease nor retried; and
// ams_webhook_leases_expired_total stays 0. Before the fix of send, the
// recovered events of every round after the first failed at their first
// attempt (EOF) and waited for the retry. It takes every core for some
// seconds: not to be run in parallel with the package's other tests.
func TestRecoveryUnderLoad(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { recoveryUnderLoad(t, amstest.New(t)) })
	t.Run("postgres", func(t *testing.T) { recoveryUnderLoad(t, amstest.New(t, amstest.OnStore(pgtest.Open(t)))) })
}

func recoveryUnderLoad(t *testing.T, f *amstest.Fixture) {
	const rounds, perRound = 4, 3 // messages per round: 2 events each
	ctx, cancel := context.WithCancel(context.Background())
	var hogs sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		hogs.Add(1)
		go func() { // the load: a busy loop on every core
			defer hogs.Done()
			for ctx.Err() == nil {
				for i := 0; i < 1e5; i++ {
				}
			}
		}()
	}
	rc := newStaleReceiver(t)
	queue := &claimLog{Queue: f.Worker.Queue}
	f.Worker.Queue, f.Worker.Clock = queue, time.Now
	f.Worker.Lease, f.Worker.Schedule = 10*time.Minute, []time.Duration{0, 10 * time.Minute}
	recorded, count := make(chan string, 64), f.Worker.OnAttempt // the metric's
	f.Worker.OnAttempt = func(outcome string) { count(outcome); recorded <- outcome }
	done := make(chan struct{})
	go func() { f.Worker.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; hogs.Wait() })

	for r := range rounds {
		// An account of its own per round, whose events reach only the
		// round's webhook, created after them, by the recovery.
		f.Clock.Add(time.Minute)
		u := f.NewUser(fmt.Sprintf("load%d@example.com", r), ams.PlanStandard)
		key, a := f.NewKey(u, "read,write,messages"), f.NewAssistant(u, "load")
		since := f.Clock.Now()
		for i := range perRound {
			if res := f.Do("POST", "/v1/messages", key, fmt.Sprintf(`{"assistant_id":%q,"message":"round %d message %d"}`, a.ID, r, i)); res.Status != 201 {
				t.Fatalf("send: %d %s", res.Status, res.Body)
			}
		}
		f.Clock.Add(time.Second) // the recovery's until: after the events
		path := fmt.Sprintf("/round%d", r)
		res := f.Do("POST", "/v1/webhooks", key, fmt.Sprintf(`{"url":%q,"events":["message.created"],"secret":%q}`,
			strings.TrimSuffix(rc.URL, "/hook")+path, secret))
		if res.Status != 201 {
			t.Fatalf("create webhook: %d %s", res.Status, res.Body)
		}
		wh := res.JSON(t)["id"].(string)
		// The events are older than the webhook: include_earlier.
		res = f.Do("POST", "/v1/webhooks/"+wh+"/recover", key, `{"since":"`+since.Format(time.RFC3339)+`","include_earlier":true}`)
		if res.Status != 200 || res.JSON(t)["queued"] != float64(2*perRound) {
			t.Fatalf("recover: %d %s", res.Status, res.Body)
		}
		var got []string
		deadline := time.After(time.Minute) // far above a loaded delivery, far below the lease
		for len(got) < 2*perRound {
			select {
			case a := <-rc.answered:
				if p, id, _ := strings.Cut(a, " "); p == path && !slices.Contains(got, id) {
					got = append(got, id)
				}
			case <-deadline:
				l := f.Do("GET", "/v1/webhooks/"+wh+"/deliveries", key, "")
				t.Fatalf("round %d: %d of %d recovered events arrived; the others wait for a lease or a retry; attempts: %s", r, len(got), 2*perRound, l.Body)
			}
		}
		if claims, jobs := queue.claimsOf(wh); claims != 1 || jobs != 2*perRound {
			t.Errorf("round %d: the recovered jobs were taken by %d claims (%d jobs), want all %d by one", r, claims, jobs, 2*perRound)
		}
		// Each arrived at its first attempt (the attempts are recorded after
		// their receiver answered: wait for the records).
		for range 2 * perRound {
			if o := <-recorded; o != "succeeded" {
				t.Errorf("round %d: an attempt %s", r, o)
			}
		}
		log := f.Do("GET", "/v1/webhooks/"+wh+"/deliveries", key, "").JSON(t)["data"].([]any)
		for _, d := range log {
			if d := d.(map[string]any); d["attempt"] != 1.0 || d["success"] != true {
				t.Errorf("round %d: attempt %v", r, d)
			}
		}
		if len(log) != 2*perRound {
			t.Errorf("round %d: %d attempts logged, want %d", r, len(log), 2*perRound)
		}
	}
	if m := metric(t, f, "ams_webhook_leases_expired_total"); m != "ams_webhook_leases_expired_total 0" {
		t.Errorf("no process died, yet %s", m)
	}
}
