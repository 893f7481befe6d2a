package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// orderedHook creates an ordered webhook of u on message.created.
func orderedHook(t *testing.T, s ams.Store, u *ams.User) *ams.Webhook {
	t.Helper()
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: u.ID, URL: "https://example.com/ordered/" + u.ID,
		Events: []string{ams.EventMessageCreated}, Active: true, Status: ams.WebhookActive, Secret: "secret-" + u.ID, Ordered: true,
		CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateWebhook(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindWebhook(context.Background(), u.ID, w.ID)
	if err != nil || !got.Ordered {
		t.Fatalf("ordered webhook read back as %+v, %v", got, err)
	}
	return w
}

// ofHook returns the jobs of webhook id among jobs.
func ofHook(jobs []*ams.Job, id string) []*ams.Job {
	var out []*ams.Job
	for _, j := range jobs {
		if j.WebhookID == id {
			out = append(out, j)
		}
	}
	return out
}

// testOrderedWebhook: an ordered webhook gets one delivery in flight at a
// time, whatever the caps allow, in the order its events were emitted;
// a failing event holds the ones behind it until it succeeds; an
// unordered webhook of the same account is not held.
func testOrderedWebhook(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "ordered@example.com")
	a := mustAssistant(t, s, u, "ordered")
	w := orderedHook(t, s, u)
	free := mustWebhook(t, s, u, ams.EventMessageCreated)
	var want []string // the events in the order they were emitted
	for i := range 6 {
		x := sendTurn(t, s, u, a, t0.Add(time.Duration(i)*time.Millisecond))
		for _, e := range x.Events {
			want = append(want, e.ID)
		}
	}
	c := ams.Claim{Limit: 64, PerWebhook: 8, PerAccount: 32, Lease: time.Minute}
	now := t0.Add(time.Second)
	jobs := claim(t, s, now, c)
	if n := len(ofHook(jobs, free.ID)); n != 8 {
		t.Fatalf("the unordered webhook got %d jobs, want its cap of 8", n)
	}
	var got []string
	head := ofHook(jobs, w.ID)
	for step := 0; len(got) < len(want); step++ {
		if len(head) != 1 {
			t.Fatalf("step %d: the ordered webhook got %d jobs at once, want 1", step, len(head))
		}
		j := head[0]
		if j.Event.ID != want[len(got)] {
			t.Fatalf("step %d: the ordered webhook got event %s, want %s (the %d-th emitted)", step, j.Event.ID, want[len(got)], len(got)+1)
		}
		// Nothing more while it is in flight.
		if more := ofHook(claim(t, s, now, c), w.ID); len(more) != 0 {
			t.Fatalf("step %d: a second job of the ordered webhook while one is in flight: %d", step, len(more))
		}
		if step%3 == 1 && j.Attempts == 0 {
			// It fails once: the retry holds the rest until its time.
			if _, err := s.RecordAttempt(ctx, attempt(j, ams.JobRetry, now), now); err != nil {
				t.Fatal(err)
			}
			if held := ofHook(claim(t, s, now.Add(time.Second), c), w.ID); len(held) != 0 {
				t.Fatalf("step %d: the event behind a failed one was claimed before its retry: %s", step, held[0].Event.ID)
			}
			now = now.Add(time.Minute) // the retry's time (attempt's NextAt)
			head = ofHook(claim(t, s, now, c), w.ID)
			if len(head) != 1 || head[0].Seq != j.Seq || head[0].Attempts != 1 {
				t.Fatalf("step %d: after the retry's delay the ordered webhook got %+v, want its retried job", step, head)
			}
			continue
		}
		if _, err := s.RecordAttempt(ctx, attempt(j, ams.JobSucceeded, now), now); err != nil {
			t.Fatal(err)
		}
		got = append(got, j.Event.ID)
		now = now.Add(time.Millisecond)
		head = ofHook(claim(t, s, now, c), w.ID)
	}
	if len(head) != 0 {
		t.Fatalf("the ordered webhook got %d jobs after its last event", len(head))
	}
}

// testOrderedLeases: two workers (claims) share an ordered webhook; the
// second gets nothing while the first holds the head; when the first's
// lease runs out unrecorded (it died), the second gets the same head,
// and the first's late record is refused: the order is kept.
func testOrderedLeases(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "orderedleases@example.com")
	a := mustAssistant(t, s, u, "ordered")
	w := orderedHook(t, s, u)
	x := sendTurn(t, s, u, a, t0)
	c := ams.Claim{Limit: 8, PerWebhook: 8, Lease: 15 * time.Second}
	first := claim(t, s, t0, c)
	if len(first) != 1 || first[0].Event.ID != x.Events[0].ID {
		t.Fatalf("first worker claimed %+v", first)
	}
	if second := claim(t, s, t0.Add(time.Second), c); len(second) != 0 {
		t.Fatalf("second worker claimed %d jobs while the head is in flight", len(second))
	}
	again := claim(t, s, t0.Add(15*time.Second), c)
	if len(again) != 1 || again[0].Seq != first[0].Seq || !again[0].LeaseExpired {
		t.Fatalf("after the first worker's lease ran out: %+v, want the same head, marked LeaseExpired", again)
	}
	if _, err := s.RecordAttempt(ctx, attempt(first[0], ams.JobSucceeded, t0.Add(16*time.Second)), t0.Add(16*time.Second)); !errors.Is(err, ams.ErrLeaseLost) {
		t.Fatalf("the dead worker's late record: %v, want ErrLeaseLost", err)
	}
	if _, err := s.RecordAttempt(ctx, attempt(again[0], ams.JobSucceeded, t0.Add(17*time.Second)), t0.Add(17*time.Second)); err != nil {
		t.Fatal(err)
	}
	next := claim(t, s, t0.Add(17*time.Second), c)
	if len(next) != 1 || next[0].Event.ID != x.Events[1].ID || next[0].WebhookID != w.ID {
		t.Fatalf("after the head succeeded: %+v, want the second event", next)
	}
}

// testOrderedExhaustion: an event that exhausts its attempts marks the
// ordered webhook failing, as any webhook, but its jobs behind it stay
// pending (not canceled); once the webhook is enabled again, the next
// event goes, then the rest in order.
func testOrderedExhaustion(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "orderedfail@example.com")
	a := mustAssistant(t, s, u, "ordered")
	w := orderedHook(t, s, u)
	var want []string
	for i := range 2 {
		for _, e := range sendTurn(t, s, u, a, t0.Add(time.Duration(i)*time.Millisecond)).Events {
			want = append(want, e.ID)
		}
	}
	c := ams.Claim{Limit: 8, PerWebhook: 8, Lease: time.Minute}
	head := claim(t, s, t0.Add(time.Second), c)
	if len(head) != 1 || head[0].Event.ID != want[0] {
		t.Fatalf("claimed %+v", head)
	}
	at := t0.Add(2 * time.Second)
	if failed, err := s.RecordAttempt(ctx, attempt(head[0], ams.JobFailed, at), at); err != nil || !failed {
		t.Fatalf("final failure: %v, %v", failed, err)
	}
	if got, err := s.FindWebhook(ctx, u.ID, w.ID); err != nil || got.Active || got.Status != ams.WebhookFailing {
		t.Fatalf("after the final failure: %+v %v", got, err)
	}
	if jobs := claim(t, s, at, c); len(jobs) != 0 {
		t.Fatalf("a failing webhook's jobs were claimed: %d", len(jobs))
	}
	on := true
	if _, err := s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Active: &on}, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	now := at.Add(2 * time.Second)
	for i, id := range want[1:] {
		jobs := claim(t, s, now, c)
		if len(jobs) != 1 || jobs[0].Event.ID != id || jobs[0].Attempts != 0 {
			t.Fatalf("after enabling, claim %d: %+v, want event %s", i, jobs, id)
		}
		if _, err := s.RecordAttempt(ctx, attempt(jobs[0], ams.JobSucceeded, now), now); err != nil {
			t.Fatal(err)
		}
	}
	if jobs := claim(t, s, now, c); len(jobs) != 0 {
		t.Fatalf("the exhausted event came back: %+v", jobs)
	}
}

// testClaimWakes: a claim finds work however it came due — a new event,
// a retry's time, a lease that ran out, a webhook enabled again — and
// nothing before it is due; it sees a webhook's due jobs whatever number
// of idle webhooks the store holds.
func testClaimWakes(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "wakes@example.com")
	a := mustAssistant(t, s, u, "wakes")
	for range 20 { // idle webhooks of other accounts
		o := mustUser(t, s, ams.NewID("idle")+"@example.com")
		mustWebhook(t, s, o, ams.EventMessageCreated)
	}
	w := mustWebhook(t, s, u, ams.EventMessageCreated)
	c := ams.Claim{Limit: 8, PerWebhook: 8, Lease: time.Minute}
	if jobs := claim(t, s, t0, c); len(jobs) != 0 {
		t.Fatalf("claimed %d jobs of an empty queue", len(jobs))
	}
	x := sendTurn(t, s, u, a, t0.Add(time.Second))
	if jobs := claim(t, s, t0, c); len(jobs) != 0 {
		t.Fatalf("claimed %d jobs before they were due", len(jobs))
	}
	jobs := claim(t, s, t0.Add(2*time.Second), c) // the reply's event is 1 ms after the inbound's
	if len(jobs) != 2 {
		t.Fatalf("claimed %d of 2 new jobs", len(jobs))
	}
	// One retries in a minute; the other's worker dies (its lease runs out).
	if _, err := s.RecordAttempt(ctx, attempt(jobs[0], ams.JobRetry, t0.Add(3*time.Second)), t0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if again := claim(t, s, t0.Add(30*time.Second), c); len(again) != 0 {
		t.Fatalf("claimed %d jobs before the retry and the lease's end", len(again))
	}
	expired := claim(t, s, t0.Add(62*time.Second), c)
	if len(expired) != 1 || expired[0].Seq != jobs[1].Seq || !expired[0].LeaseExpired {
		t.Fatalf("at the lease's end: %+v, want job %d again", expired, jobs[1].Seq)
	}
	retried := claim(t, s, t0.Add(63*time.Second), c)
	if len(retried) != 1 || retried[0].Seq != jobs[0].Seq || retried[0].Attempts != 1 {
		t.Fatalf("at the retry's time: %+v, want job %d", retried, jobs[0].Seq)
	}
	for _, j := range append(expired, retried...) {
		if _, err := s.RecordAttempt(ctx, attempt(j, ams.JobSucceeded, t0.Add(64*time.Second)), t0.Add(64*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if more := claim(t, s, t0.Add(time.Hour), c); len(more) != 0 {
		t.Fatalf("claimed %d jobs of a drained queue", len(more))
	}
	_ = x
	_ = w
}

// testOrderedRecovery: a recovery into an ordered webhook queues the
// events in the event log's order (ListEvents, ascending), not in the
// order of their created_at: here the second event emitted says it was
// created a second before the first (a process whose clock is behind).
func testOrderedRecovery(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "ordered-recovery@example.com")
	var want []string
	for i, at := range []time.Time{t0.Add(time.Second), t0, t0.Add(2 * time.Second)} {
		e := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventMessageCreated,
			CreatedAt: at, Data: map[string]any{"id": fmt.Sprintf("msg_%d", i)}}
		if err := s.Emit(ctx, e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e.ID)
	}
	page, err := listEvents(t, s, ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10, Order: ams.OrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range page.Data {
		listed = append(listed, e.ID)
	}
	if !slices.Equal(listed, want) {
		t.Fatalf("the log lists %v, want the order emitted %v", listed, want)
	}
	// Made after the events: none was queued for it.
	w := orderedHook(t, s, u)
	now := t0.Add(time.Minute)
	if n, err := s.EnqueueRecovery(ctx, u.ID, w.ID, t0.Add(-time.Minute), now, now); err != nil || n != 3 {
		t.Fatalf("recovery queued %d, %v; want 3", n, err)
	}
	var got []string
	for range want {
		jobs := ofHook(claimAll(t, s, now), w.ID)
		if len(jobs) != 1 {
			t.Fatalf("after %v the ordered webhook got %d jobs, want 1", got, len(jobs))
		}
		got = append(got, jobs[0].Event.ID)
		record(t, s, jobs[0], ams.JobSucceeded, now)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("recovered into the ordered webhook in the order %v, want the log's %v", got, want)
	}
}
