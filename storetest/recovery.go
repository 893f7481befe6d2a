package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// claimAll leases every job due at now (for tests that record attempts).
func claimAll(t *testing.T, s ams.Store, now time.Time) []*ams.Job {
	t.Helper()
	jobs, err := s.ClaimJobs(context.Background(), now, ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// record stores an attempt of job j with outcome o at now (attempt).
func record(t *testing.T, s ams.Store, j *ams.Job, o ams.JobOutcome, now time.Time) bool {
	t.Helper()
	failed, err := s.RecordAttempt(context.Background(), attempt(j, o, now), now)
	if err != nil {
		t.Fatal(err)
	}
	return failed
}

// attempt is an attempt of job j with outcome o at now; a final failure
// carries the owner's e-mail and the webhook.failing event.
func attempt(j *ams.Job, o ams.JobOutcome, now time.Time) *ams.AttemptResult {
	code := 500
	d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: j.UserID, WebhookID: j.WebhookID, EventID: j.Event.ID,
		EventType: j.Event.Type, Attempt: j.Attempts + 1, URL: j.URL, StatusCode: &code, CreatedAt: now}
	r := &ams.AttemptResult{Job: j, Delivery: d, Outcome: o}
	switch o {
	case ams.JobSucceeded:
		code, d.Success = 200, true
	case ams.JobRetry:
		r.NextAt = now.Add(time.Minute)
	case ams.JobFailed:
		r.Email = &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailWebhookFailing, To: "owner@example.com", Subject: "failing", Text: "body"}
		r.Event = ams.WebhookFailingEvent(j.UserID, j.WebhookID, j.URL, "the receiver answered 500", now)
	}
	return r
}

// jobFor returns the job of event id among jobs (nil: none).
func jobFor(jobs []*ams.Job, webhookID, eventID string) *ams.Job {
	for _, j := range jobs {
		if j.WebhookID == webhookID && j.Event.ID == eventID {
			return j
		}
	}
	return nil
}

// testRecovery: EnqueueRecovery queues, in order of creation, exactly the
// events in range of subscribed types that the webhook has not received
// and that are not pending for it, events emitted while it was disabled
// included; nothing of another account, of other types or out of range.
func testRecovery(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "rec@example.com"), mustUser(t, s, "rec2@example.com")
	a, oa := mustAssistant(t, s, u, "rec"), mustAssistant(t, s, other, "rec2")
	w := mustWebhook(t, s, u, ams.EventMessageCreated)
	theirs := mustWebhook(t, s, other, ams.EventMessageCreated)

	before := sendTurn(t, s, u, a, t0.Add(-time.Hour)) // before the range
	x1 := sendTurn(t, s, u, a, t0)
	jobs := claimAll(t, s, t0.Add(time.Millisecond))
	// x1's inbound message is received; its reply fails once.
	record(t, s, jobFor(jobs, w.ID, x1.Events[0].ID), ams.JobSucceeded, t0.Add(time.Second))
	record(t, s, jobFor(jobs, w.ID, x1.Events[1].ID), ams.JobRetry, t0.Add(time.Second))
	record(t, s, jobFor(jobs, w.ID, before.Events[0].ID), ams.JobSucceeded, t0.Add(time.Second))
	record(t, s, jobFor(jobs, w.ID, before.Events[1].ID), ams.JobSucceeded, t0.Add(time.Second))
	off, on := false, true
	if _, err := s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Active: &off}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	x2 := sendTurn(t, s, u, a, t0.Add(2*time.Minute)) // while it is disabled: never queued for it
	task := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskCreated,
		CreatedAt: t0.Add(3 * time.Minute), Data: map[string]any{"id": "task_x"}}
	if err := s.Emit(ctx, task); err != nil { // a type it does not subscribe to
		t.Fatal(err)
	}
	sendTurn(t, s, other, oa, t0.Add(3*time.Minute)) // another account's
	if _, err := s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Active: &on}, t0.Add(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	x3 := sendTurn(t, s, u, a, t0.Add(5*time.Minute)) // pending for it already
	sendTurn(t, s, u, a, t0.Add(2*time.Hour))         // after the range

	// Refused: another account's webhook, a disabled one.
	now := t0.Add(3 * time.Hour)
	_, err := s.EnqueueRecovery(ctx, other.ID, w.ID, t0, t0.Add(time.Hour), now)
	wantKind(t, err, ams.ENOTFOUND)
	n, err := s.EnqueueRecovery(ctx, u.ID, w.ID, t0, t0.Add(time.Hour), now)
	if err != nil || n != 3 {
		t.Fatalf("recovery queued %d, %v; want 3 (x1's reply, x2's two events)", n, err)
	}
	// Again: all of them are pending now.
	if n, err := s.EnqueueRecovery(ctx, u.ID, w.ID, t0, t0.Add(time.Hour), now); err != nil || n != 0 {
		t.Fatalf("second recovery queued %d, %v", n, err)
	}
	jobs = slices.DeleteFunc(claimAll(t, s, now), func(j *ams.Job) bool { return j.WebhookID == theirs.ID })
	want := []string{x1.Events[1].ID, x2.Events[0].ID, x2.Events[1].ID}
	var got []string
	var seqs []int64
	for _, j := range jobs {
		if j.WebhookID != w.ID {
			t.Fatalf("a job of another webhook: %+v", j)
		}
		if slices.Contains(want, j.Event.ID) && j.Attempts == 0 {
			got = append(got, j.Event.ID)
			seqs = append(seqs, j.Seq)
		}
	}
	slices.Sort(seqs)
	var inOrder []string
	for _, sq := range seqs {
		for _, j := range jobs {
			if j.Seq == sq {
				inOrder = append(inOrder, j.Event.ID)
			}
		}
	}
	if !slices.Equal(inOrder, want) {
		t.Fatalf("recovered jobs in seq order %v, want %v (claimed %v)", inOrder, want, got)
	}
	// x3 was pending (and x1's reply too, until its retry was canceled):
	// one job each.
	count := map[string]int{}
	for _, j := range jobs {
		count[j.Event.ID]++
	}
	if count[x3.Events[0].ID] != 1 || count[x1.Events[1].ID] != 1 || count[task.ID] != 0 || count[before.Events[0].ID] != 0 {
		t.Fatalf("jobs per event: %v", count)
	}
	// All delivered: a recovery of the whole day queues nothing but x1's
	// reply, whose attempt fails now.
	for _, j := range jobs {
		o := ams.JobSucceeded
		if j.Event.ID == x1.Events[1].ID {
			o = ams.JobRetry
		}
		record(t, s, j, o, now.Add(time.Second))
	}
	if _, err := s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Active: &off}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	_, err = s.EnqueueRecovery(ctx, u.ID, w.ID, t0.Add(-24*time.Hour), now, now.Add(2*time.Minute))
	wantKind(t, err, ams.ECONFLICT)
	if _, err := s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Active: &on}, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.EnqueueRecovery(ctx, u.ID, w.ID, t0.Add(-24*time.Hour), now, now.Add(3*time.Minute)); err != nil || n != 1 {
		t.Fatalf("recovery after everything but one was delivered: %d, %v", n, err)
	}
	// Events past their retention are not recovered, even before the purge.
	if n, err := s.EnqueueRecovery(ctx, u.ID, w.ID, t0.Add(-2*time.Hour), t0.Add(-30*time.Minute), t0.Add(ams.EventRetention)); err != nil || n != 0 {
		t.Fatalf("recovery of events past retention: %d, %v", n, err)
	}
}

// testWebhookCap: CreateWebhookCapped refuses the webhook beyond the cap
// with webhook_limit_reached and stores nothing; concurrent creations
// never pass it; an enterprise account's own cap applies, another plan's
// does not.
func testWebhookCap(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "cap@example.com")
	mk := func() *ams.Webhook {
		return &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: u.ID, URL: "https://example.com/hook",
			Events: []string{ams.EventMessageCreated}, Active: true, Status: ams.WebhookActive, Secret: "secret-of-the-cap-test", CreatedAt: t0, UpdatedAt: t0}
	}
	count := func() int {
		t.Helper()
		p, err := s.ListWebhooks(ctx, u.ID, ams.ListParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Data)
	}
	// 12 creations at once against a cap of 5.
	var wg sync.WaitGroup
	errs := make([]error, 12)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.CreateWebhookCapped(ctx, mk(), 5)
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, err := range errs {
		var e *ams.Error
		switch {
		case err == nil:
			ok++
		case errors.As(err, &e) && e.Kind == ams.ECONFLICT && e.Code == "webhook_limit_reached":
			refused++
		default:
			t.Fatalf("create: %v", err)
		}
	}
	if ok != 5 || refused != 7 || count() != 5 {
		t.Fatalf("%d created, %d refused, %d stored; want 5, 7, 5", ok, refused, count())
	}
	var e *ams.Error
	if err := s.CreateWebhookCapped(ctx, mk(), 5); !errors.As(err, &e) || e.Code != "webhook_limit_reached" || !strings.Contains(e.Message, "5 webhooks") {
		t.Fatalf("the sixth: %v", err)
	}
	// A standard account's own cap does not apply; an enterprise one's does.
	seven := 7
	if _, err := s.UpdateUser(ctx, u.ID, ams.UserUpdate{MaxWebhooks: &seven}, t0); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.FindUser(ctx, u.ID); got.MaxWebhooks != 7 || got.WebhookLimit(5) != 5 {
		t.Fatalf("standard account's cap: %+v", got)
	}
	wantKind(t, s.CreateWebhookCapped(ctx, mk(), 5), ams.ECONFLICT)
	plan := ams.PlanEnterprise
	if _, err := s.UpdateUser(ctx, u.ID, ams.UserUpdate{Plan: &plan}, t0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := s.CreateWebhookCapped(ctx, mk(), 5); err != nil {
			t.Fatalf("enterprise webhook %d: %v", 6+i, err)
		}
	}
	wantKind(t, s.CreateWebhookCapped(ctx, mk(), 5), ams.ECONFLICT)
	// 0 clears the account's cap: the default applies again.
	zero := 0
	if got, err := s.UpdateUser(ctx, u.ID, ams.UserUpdate{MaxWebhooks: &zero}, t0); err != nil || got.MaxWebhooks != 0 || got.WebhookLimit(50) != 50 {
		t.Fatalf("cleared cap: %+v %v", got, err)
	}
	if count() != 7 {
		t.Fatalf("%d webhooks stored", count())
	}
}

// testOpsEvents: the final failure that marks a webhook failing emits
// webhook.failing, once, to the outbox and to the account's active webhooks
// subscribed to it (not to others, nor another account's); turning a
// webhook back on emits webhook.enabled, once per change.
func testOpsEvents(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "ops@example.com"), mustUser(t, s, "ops2@example.com")
	a := mustAssistant(t, s, u, "ops")
	w := mustWebhook(t, s, u, ams.EventMessageCreated)
	watcher := mustWebhook(t, s, u, ams.EventWebhookFailing, ams.EventWebhookEnabled)
	plain := mustWebhook(t, s, u, ams.EventMessageCreated)
	theirs := mustWebhook(t, s, other, ams.EventWebhookFailing, ams.EventWebhookEnabled)
	off, on := false, true
	if _, err := s.UpdateWebhook(ctx, u.ID, plain.ID, ams.WebhookUpdate{Active: &off}, t0); err != nil {
		t.Fatal(err)
	}
	x := sendTurn(t, s, u, a, t0)
	jobs := claimAll(t, s, t0.Add(time.Millisecond))
	if len(jobs) != 2 {
		t.Fatalf("%d jobs", len(jobs))
	}
	if !record(t, s, jobs[0], ams.JobFailed, t0.Add(time.Minute)) {
		t.Fatal("the final failure did not mark the webhook failing")
	}
	if record(t, s, jobs[1], ams.JobFailed, t0.Add(time.Minute)) {
		t.Fatal("the second final failure marked it again")
	}
	SettleEvents(t, s) // listed on PostgreSQL once older transactions end
	evs, err := s.ListEvents(ctx, u.ID, ams.EventFilter{Type: ams.EventWebhookFailing}, ams.ListParams{Limit: 10})
	if err != nil || len(evs.Data) != 1 {
		t.Fatalf("webhook.failing events: %+v %v", evs, err)
	}
	e := evs.Data[0]
	if e.Data["webhook_id"] != w.ID || e.Data["url"] != w.URL || e.Data["reason"] != "the receiver answered 500" {
		t.Fatalf("webhook.failing data: %v", e.Data)
	}
	if n, _ := s.ListEvents(ctx, other.ID, ams.EventFilter{Type: ams.EventWebhookFailing}, ams.ListParams{Limit: 10}); len(n.Data) != 0 {
		t.Fatal("another account got the event")
	}
	jobs = claimAll(t, s, t0.Add(2*time.Minute))
	if len(jobs) != 1 || jobs[0].WebhookID != watcher.ID || jobs[0].Event.ID != e.ID {
		t.Fatalf("jobs after the failure: %d %+v", len(jobs), jobs)
	}
	record(t, s, jobs[0], ams.JobSucceeded, t0.Add(2*time.Minute))

	// Turned back on: webhook.enabled, once; again (already on): nothing.
	for i := 0; i < 2; i++ {
		if _, err := s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Active: &on}, t0.Add(3*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.UpdateWebhook(ctx, u.ID, plain.ID, ams.WebhookUpdate{Active: &on}, t0.Add(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	SettleEvents(t, s) // listed on PostgreSQL once older transactions end
	evs, err = s.ListEvents(ctx, u.ID, ams.EventFilter{Type: ams.EventWebhookEnabled}, ams.ListParams{Limit: 10, Order: ams.OrderAsc})
	if err != nil || len(evs.Data) != 2 || evs.Data[0].Data["webhook_id"] != w.ID || evs.Data[0].Data["url"] != w.URL ||
		evs.Data[1].Data["webhook_id"] != plain.ID {
		t.Fatalf("webhook.enabled events: %+v %v", evs, err)
	}
	jobs = claimAll(t, s, t0.Add(5*time.Minute))
	if len(jobs) != 2 || jobs[0].WebhookID != watcher.ID || jobs[1].WebhookID != watcher.ID {
		t.Fatalf("jobs after enabling: %+v", jobs)
	}
	if p, _ := s.ListDeliveries(ctx, other.ID, theirs.ID, "", ams.ListParams{Limit: 10}); len(p.Data) != 0 {
		t.Fatal("another account's webhook got something")
	}
	_ = x
}

// testOpsEventsConcurrent: webhooks of one account that fail at the same
// time, each subscribed to webhook.failing, all get marked (the fan-out of
// each one's event does not deadlock with the others').
func testOpsEventsConcurrent(t *testing.T, s ams.Store) {
	u := mustUser(t, s, "opsc@example.com")
	a := mustAssistant(t, s, u, "opsc")
	const n = 6
	for i := 0; i < n; i++ {
		mustWebhook(t, s, u, ams.EventMessageCreated, ams.EventWebhookFailing, ams.EventWebhookEnabled)
	}
	sendTurn(t, s, u, a, t0)
	jobs := claimAll(t, s, t0)
	if len(jobs) != n {
		t.Fatalf("%d jobs", len(jobs))
	}
	var wg sync.WaitGroup
	marked := make([]bool, n)
	errs := make([]error, n)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := 500
			d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: u.ID, WebhookID: j.WebhookID, EventID: j.Event.ID,
				EventType: j.Event.Type, Attempt: 1, URL: j.URL, StatusCode: &code, CreatedAt: t0}
			marked[i], errs[i] = s.RecordAttempt(context.Background(), &ams.AttemptResult{Job: j, Delivery: d, Outcome: ams.JobFailed,
				Event: ams.WebhookFailingEvent(u.ID, j.WebhookID, j.URL, fmt.Sprint("failure ", i), t0)}, t0)
		}()
	}
	wg.Wait()
	for i := range jobs {
		if errs[i] != nil || !marked[i] {
			t.Fatalf("attempt %d: marked %v, %v", i, marked[i], errs[i])
		}
	}
	SettleEvents(t, s) // listed on PostgreSQL once older transactions end
	evs, err := s.ListEvents(context.Background(), u.ID, ams.EventFilter{Type: ams.EventWebhookFailing}, ams.ListParams{Limit: 100})
	if err != nil || len(evs.Data) != n {
		t.Fatalf("%d webhook.failing events, %v", len(evs.Data), err)
	}
}
