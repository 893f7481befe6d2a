package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

func mustWebhook(t *testing.T, s ams.Store, u *ams.User, events ...string) *ams.Webhook {
	t.Helper()
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: u.ID, URL: "https://example.com/" + u.ID,
		Events: events, Active: true, Status: ams.WebhookActive, Secret: "secret-" + u.ID, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateWebhook(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// sendTurn stores one exchange (two message.created events) at time at.
func sendTurn(t *testing.T, s ams.Store, u *ams.User, a *ams.Assistant, at time.Time) *ams.Exchange {
	t.Helper()
	x := exchange(u, a, ams.NewID(ams.PrefixConversation), true, "hi", at)
	if err := s.SaveExchange(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	return x
}

func testWebhooks(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "wh@example.com"), mustUser(t, s, "wh2@example.com")
	w := mustWebhook(t, s, u, ams.EventTaskCreated, ams.EventMessageCreated)
	got, err := s.FindWebhook(ctx, u.ID, w.ID)
	if err != nil || got.Secret != w.Secret || len(got.Events) != 2 || got.Events[0] != ams.EventMessageCreated || !got.Active {
		t.Fatalf("find webhook: %+v %v", got, err)
	}
	if _, err := s.FindWebhook(ctx, other.ID, w.ID); !ams.IsNotFound(err) {
		t.Fatalf("another account finds the webhook: %v", err)
	}
	wantKind(t, s.DeleteWebhook(ctx, other.ID, w.ID), ams.ENOTFOUND)
	_, err = s.UpdateWebhook(ctx, other.ID, w.ID, ams.WebhookUpdate{}, t0)
	wantKind(t, err, ams.ENOTFOUND)
	secret, off := "new-secret-value", false
	up, err := s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Secret: &secret, Events: []string{ams.EventTaskUpdated}, Active: &off}, t0.Add(time.Hour))
	if err != nil || up.Secret != secret || len(up.Events) != 1 || up.Active || !up.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("update: %+v %v", up, err)
	}
	page, err := s.ListWebhooks(ctx, u.ID, ams.ListParams{Limit: 10})
	if err != nil || len(page.Data) != 1 || page.Data[0].Secret != secret {
		t.Fatalf("list: %v %v", page, err)
	}
	if err := s.DeleteWebhook(ctx, u.ID, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindWebhook(ctx, u.ID, w.ID); !ams.IsNotFound(err) {
		t.Fatal("deleted webhook found")
	}
	// An attempt that finishes after its webhook was deleted records nothing
	// and is no error.
	gone := &ams.Job{Seq: 1 << 40, UserID: u.ID, WebhookID: w.ID, Event: &ams.Event{ID: "evt_gone", Type: ams.EventMessageCreated}}
	d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: u.ID, WebhookID: w.ID, EventID: "evt_gone", EventType: ams.EventMessageCreated,
		Attempt: 1, URL: w.URL, CreatedAt: t0}
	if _, err := s.RecordAttempt(ctx, &ams.AttemptResult{Job: gone, Delivery: d, Outcome: ams.JobFailed}, t0); err != nil {
		t.Fatalf("attempt of a deleted webhook: %v", err)
	}
}

func testDeliveryQueue(t *testing.T, s ams.Store) {
	ctx := context.Background()
	var jobs []*ams.Job
	u, other := mustUser(t, s, "q@example.com"), mustUser(t, s, "q2@example.com")
	a, oa := mustAssistant(t, s, u, "q"), mustAssistant(t, s, other, "q2")
	w := mustWebhook(t, s, u, ams.EventMessageCreated)
	mustWebhook(t, s, u, ams.EventTaskCreated) // not subscribed to messages
	x := sendTurn(t, s, u, a, t0)
	sendTurn(t, s, other, oa, t0) // another account's events reach no webhook of u

	select {
	case <-s.JobsReady():
	default:
		t.Fatal("JobsReady not signalled after events were queued")
	}
	// The reply's event is 1 ms after the inbound one: at t0 only one is due.
	if first, _ := s.ClaimJobs(ctx, t0, ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8}); len(first) != 1 {
		t.Fatalf("at t0: %d jobs due, want 1", len(first))
	} else {
		jobs = append(jobs, first...)
	}
	more, err := s.ClaimJobs(ctx, t0.Add(time.Millisecond), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8})
	jobs = append(jobs, more...)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	j := jobs[0]
	if jobs[0].LeaseExpired || jobs[1].LeaseExpired {
		t.Fatal("a job claimed for the first time has LeaseExpired set")
	}
	if j.WebhookID != w.ID || j.URL != w.URL || j.Secret != w.Secret || j.Attempts != 0 || j.Event.ID != x.Events[0].ID ||
		j.Event.Type != ams.EventMessageCreated || j.Event.Data["message_id"] != x.Inbound.ID || !j.Event.CreatedAt.Equal(t0) {
		t.Fatalf("claimed job: %+v event %+v", j, j.Event)
	}
	// Leased: not claimable again until the lease runs out.
	if again, _ := s.ClaimJobs(ctx, t0.Add(59*time.Second), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8}); len(again) != 0 {
		t.Fatalf("leased jobs claimed again: %d", len(again))
	}
	// Job 1 fails and is retried in a minute; job 2's worker "dies".
	attempt := func(job *ams.Job, outcome ams.JobOutcome, next time.Time, at time.Time) bool {
		t.Helper()
		code := 500
		d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: u.ID, WebhookID: job.WebhookID, EventID: job.Event.ID,
			EventType: job.Event.Type, Attempt: job.Attempts + 1, URL: job.URL, StatusCode: &code, CreatedAt: at}
		email := &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailWebhookFailing, To: u.Email, Subject: "failing", Text: "body"}
		failed, err := s.RecordAttempt(ctx, &ams.AttemptResult{Job: job, Delivery: d, Outcome: outcome, NextAt: next, Email: email}, at)
		if err != nil {
			t.Fatal(err)
		}
		return failed
	}
	attempt(jobs[0], ams.JobRetry, t0.Add(time.Minute), t0)
	if due, _ := s.ClaimJobs(ctx, t0.Add(30*time.Second), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8}); len(due) != 0 {
		t.Fatalf("retry claimed before it was due: %d", len(due))
	}
	// After a minute: the retry is due, and job 2's lease has run out.
	due, err := s.ClaimJobs(ctx, t0.Add(time.Minute+time.Millisecond), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8})
	if err != nil || len(due) != 2 {
		t.Fatalf("after a minute: %d jobs, %v", len(due), err)
	}
	for _, d := range due {
		if d.Seq == jobs[0].Seq && d.Attempts != 1 {
			t.Fatalf("retried job has %d attempts", d.Attempts)
		}
		// Only the job whose worker died comes back with its lease expired:
		// the retry's lease was released by its record.
		if d.LeaseExpired != (d.Seq == jobs[1].Seq) {
			t.Fatalf("job %d (of the dead worker: %v): LeaseExpired %v", d.Seq, d.Seq == jobs[1].Seq, d.LeaseExpired)
		}
	}
	// The last attempt fails: the webhook is failing, its queue canceled,
	// one e-mail queued — the second failure changes nothing more.
	if !attempt(due[0], ams.JobFailed, time.Time{}, t0.Add(time.Minute)) {
		t.Fatal("first final failure did not mark the webhook failing")
	}
	if attempt(due[1], ams.JobFailed, time.Time{}, t0.Add(time.Minute)) {
		t.Fatal("second final failure marked it failing again")
	}
	got, _ := s.FindWebhook(ctx, u.ID, w.ID)
	if got.Active || got.Status != ams.WebhookFailing {
		t.Fatalf("webhook after failing: %+v", got)
	}
	sendTurn(t, s, u, a, t0.Add(2*time.Minute))
	if more, _ := s.ClaimJobs(ctx, t0.Add(time.Hour), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8}); len(more) != 0 {
		t.Fatalf("a failing webhook got %d jobs", len(more))
	}
	emails, err := s.ClaimEmails(ctx, t0.Add(time.Hour), time.Minute, 10)
	if err != nil || len(emails) != 1 || emails[0].To != u.Email {
		t.Fatalf("e-mails: %+v %v", emails, err)
	}
	if e2, _ := s.ClaimEmails(ctx, t0.Add(time.Hour), time.Minute, 10); len(e2) != 0 {
		t.Fatal("leased e-mail claimed twice")
	}
	if err := s.FinishEmail(ctx, emails[0].ID, false, "smtp down", t0.Add(2*time.Hour), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if e3, _ := s.ClaimEmails(ctx, t0.Add(2*time.Hour), time.Minute, 10); len(e3) != 1 || e3[0].Attempts != 1 {
		t.Fatalf("e-mail retry: %+v", e3)
	} else if err := s.FinishEmail(ctx, e3[0].ID, true, "", time.Time{}, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if e4, _ := s.ClaimEmails(ctx, t0.Add(48*time.Hour), time.Minute, 10); len(e4) != 0 {
		t.Fatal("sent e-mail claimed again")
	}
	// The delivery log, scoped to the account.
	dl, err := s.ListDeliveries(ctx, u.ID, w.ID, ams.DeliveryFilter{}, ams.ListParams{Limit: 10})
	if err != nil || len(dl.Data) != 3 || *dl.Data[0].StatusCode != 500 {
		t.Fatalf("deliveries: %v %v", dl, err)
	}
	if _, err := s.FindDelivery(ctx, other.ID, w.ID, dl.Data[0].ID); !ams.IsNotFound(err) {
		t.Fatal("another account finds the delivery")
	}
	// Re-enabled: redelivery and ping queue one job each, for it only.
	on := true
	if _, err := s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Active: &on}, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueDelivery(ctx, u.ID, w.ID, x.Events[0].ID, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.EnqueueDelivery(ctx, other.ID, w.ID, x.Events[0].ID, t0), ams.ENOTFOUND)
	ping := &ams.Event{ID: ams.NewID(ams.PrefixEvent), UserID: u.ID, Type: ams.EventWebhookPing, CreatedAt: t0.Add(3 * time.Hour), Data: map[string]any{"webhook_id": w.ID}}
	if err := s.PingWebhook(ctx, u.ID, w.ID, ping); err != nil {
		t.Fatal(err)
	}
	jobs, _ = s.ClaimJobs(ctx, t0.Add(3*time.Hour), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8})
	if len(jobs) != 2 || jobs[0].Attempts != 0 {
		t.Fatalf("redelivery and ping: %d jobs", len(jobs))
	}
}

func testPurge(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "purge@example.com")
	a := mustAssistant(t, s, u, "p")
	mustWebhook(t, s, u, ams.EventMessageCreated)
	old := sendTurn(t, s, u, a, t0)
	recent := sendTurn(t, s, u, a, t0.Add(ams.EventRetention))
	if _, err := s.Purge(ctx, t0.Add(ams.EventRetention+time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindEvent(ctx, u.ID, old.Events[0].ID); !ams.IsNotFound(err) {
		t.Fatal("an event older than 30 days is kept")
	}
	if _, err := s.FindEvent(ctx, u.ID, recent.Events[0].ID); err != nil {
		t.Fatalf("a recent event was purged: %v", err)
	}
	if m, err := s.FindMessage(ctx, u.ID, old.Inbound.ID); err != nil || m == nil {
		t.Fatal("purging events deleted a message")
	}
	jobs, _ := s.ClaimJobs(ctx, t0.Add(ams.EventRetention+time.Hour), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8})
	if len(jobs) != 2 {
		t.Fatalf("%d jobs left, want the recent event's 2", len(jobs))
	}
}

// testPurgeInBatches: history older than the retention is purged whole
// even when it is several times a purge batch (the purge deletes a batch
// per transaction, at most sqlstore.PurgeBatch = 1000), and the recent rows of
// the same tables stay.
func testPurgeInBatches(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "purge-batches@example.com")
	a := mustAssistant(t, s, u, "pb")
	_, tr := startTurn(t, s, u, a, "", t0)
	const old, recent = 2507, 3
	var evs []*ams.TurnEvent
	for i := 1; i <= old+recent; i++ {
		at := t0
		if i > old {
			at = t0.Add(ams.EventRetention)
		}
		evs = append(evs, &ams.TurnEvent{TurnID: tr.ID, Seq: int64(i), Type: "message.delta", Data: json.RawMessage(`{"delta":"x"}`), CreatedAt: at})
	}
	for len(evs) > 0 {
		n := min(len(evs), 500)
		if err := s.AppendTurnEvents(ctx, evs[:n]); err != nil {
			t.Fatal(err)
		}
		evs = evs[n:]
	}
	n, err := s.Purge(ctx, t0.Add(ams.EventRetention+time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n < old {
		t.Fatalf("purge reports %d rows, want at least the %d old turn events", n, old)
	}
	left, err := s.TurnEvents(ctx, tr.ID, 0, old+recent)
	if err != nil || len(left) != recent || left[0].Seq != old+1 {
		t.Fatalf("after the purge %d turn events left (%v), want the %d recent ones", len(left), err, recent)
	}
}

// testWebhookSecretRotation: replacing a secret keeps the one it replaced,
// sealed, with its expiry; the claim returns both to the worker; rotating
// again keeps only the secret just replaced; an overlap of 0 keeps none;
// Purge forgets an expired one.
func testWebhookSecretRotation(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "rot@example.com")
	a := mustAssistant(t, s, u, "rot")
	w := mustWebhook(t, s, u, ams.EventMessageCreated)
	if got, _ := s.FindWebhook(ctx, u.ID, w.ID); got.PreviousSecret != "" || got.PreviousSecretExpiresAt != nil {
		t.Fatalf("a new webhook has a previous secret: %+v", got)
	}
	update := func(at time.Time, upd ams.WebhookUpdate) *ams.Webhook {
		t.Helper()
		got, err := s.UpdateWebhook(ctx, u.ID, w.ID, upd, at)
		if err != nil {
			t.Fatal(err)
		}
		found, err := s.FindWebhook(ctx, u.ID, w.ID)
		if err != nil || found.Secret != got.Secret || found.PreviousSecret != got.PreviousSecret ||
			(found.PreviousSecretExpiresAt == nil) != (got.PreviousSecretExpiresAt == nil) ||
			(got.PreviousSecretExpiresAt != nil && !found.PreviousSecretExpiresAt.Equal(*got.PreviousSecretExpiresAt)) {
			t.Fatalf("stored %+v, returned %+v (%v)", found, got, err)
		}
		return found
	}
	wantPrevious := func(w *ams.Webhook, secret, previous string, expires time.Time) {
		t.Helper()
		if w.Secret != secret || w.PreviousSecret != previous || (expires.IsZero() != (w.PreviousSecretExpiresAt == nil)) ||
			(!expires.IsZero() && !w.PreviousSecretExpiresAt.Equal(expires)) {
			t.Fatalf("webhook secret %q previous %q until %v; want %q, %q until %v", w.Secret, w.PreviousSecret, w.PreviousSecretExpiresAt,
				secret, previous, expires)
		}
	}
	first, second, third := w.Secret, "second-secret-value", "third-secret-value"
	// Replaced with the default overlap: the first secret stays 24 h.
	got := update(t0.Add(time.Hour), ams.WebhookUpdate{Secret: &second})
	wantPrevious(got, second, first, t0.Add(25*time.Hour))
	// The claim returns both secrets and the expiry.
	sendTurn(t, s, u, a, t0.Add(2*time.Hour))
	jobs, err := s.ClaimJobs(ctx, t0.Add(3*time.Hour), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		if j.Secret != second || j.PreviousSecret != first || !j.PreviousSecretExpiresAt.Equal(t0.Add(25*time.Hour)) {
			t.Fatalf("claimed job secrets: %q %q %v", j.Secret, j.PreviousSecret, j.PreviousSecretExpiresAt)
		}
		if s := j.Secrets(t0.Add(25*time.Hour - time.Millisecond)); len(s) != 2 || s[0] != second || s[1] != first {
			t.Fatalf("secrets during the overlap: %q", s)
		}
		if s := j.Secrets(t0.Add(25 * time.Hour)); len(s) != 1 || s[0] != second {
			t.Fatalf("secrets after the overlap: %q", s)
		}
	}
	// The same secret again changes nothing.
	got = update(t0.Add(4*time.Hour), ams.WebhookUpdate{Secret: &second})
	wantPrevious(got, second, first, t0.Add(25*time.Hour))
	// Rotating again within the overlap keeps only the secret just
	// replaced, for the overlap asked (here 1 h).
	hour := time.Hour
	got = update(t0.Add(5*time.Hour), ams.WebhookUpdate{Secret: &third, PreviousSecretOverlap: &hour})
	wantPrevious(got, third, second, t0.Add(6*time.Hour))
	// Without a secret the overlap of the current previous secret changes.
	week := ams.MaxSecretOverlap
	got = update(t0.Add(5*time.Hour), ams.WebhookUpdate{PreviousSecretOverlap: &week})
	wantPrevious(got, third, second, t0.Add(5*time.Hour+week))
	// Other updates keep it.
	url := "https://example.com/elsewhere"
	got = update(t0.Add(6*time.Hour), ams.WebhookUpdate{URL: &url})
	wantPrevious(got, third, second, t0.Add(5*time.Hour+week))
	// Overlap 0: cut over at once, no previous secret.
	zero := time.Duration(0)
	got = update(t0.Add(7*time.Hour), ams.WebhookUpdate{Secret: &second, PreviousSecretOverlap: &zero})
	wantPrevious(got, second, "", time.Time{})
	jobs, err = s.ClaimJobs(ctx, t0.Add(8*time.Hour), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8}) // the earlier leases ran out
	if err != nil || len(jobs) != 2 || jobs[0].PreviousSecret != "" || !jobs[0].PreviousSecretExpiresAt.IsZero() || jobs[0].Secret != second {
		t.Fatalf("claim after a cut-over: %d jobs, %v", len(jobs), err)
	}
	// An update after the overlap ended drops the expired secret.
	got = update(t0.Add(9*time.Hour), ams.WebhookUpdate{Secret: &third, PreviousSecretOverlap: &hour})
	wantPrevious(got, third, second, t0.Add(10*time.Hour))
	got = update(t0.Add(11*time.Hour), ams.WebhookUpdate{URL: &url})
	wantPrevious(got, third, "", time.Time{})
	// Purge forgets a previous secret whose overlap has ended.
	got = update(t0.Add(12*time.Hour), ams.WebhookUpdate{Secret: &first, PreviousSecretOverlap: &hour})
	wantPrevious(got, first, third, t0.Add(13*time.Hour))
	if _, err := s.Purge(ctx, t0.Add(12*time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.FindWebhook(ctx, u.ID, w.ID)
	wantPrevious(got, first, third, t0.Add(13*time.Hour))
	if _, err := s.Purge(ctx, t0.Add(13*time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.FindWebhook(ctx, u.ID, w.ID)
	wantPrevious(got, first, "", time.Time{})
}

// testSubscribeToAll: a webhook subscribed to "*" gets a job for every
// event of its account, whatever the type (additions included), but no
// other webhook's ping; recovery queues every retained event but pings.
func testSubscribeToAll(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "all@example.com"), mustUser(t, s, "all2@example.com")
	a, oa := mustAssistant(t, s, u, "all"), mustAssistant(t, s, other, "all2")
	all := mustWebhook(t, s, u, ams.EventAll, ams.EventTaskCreated) // stored as ["*"]
	msgs := mustWebhook(t, s, u, ams.EventMessageCreated)
	if got, _ := s.FindWebhook(ctx, u.ID, all.ID); !slices.Equal(got.Events, []string{ams.EventAll}) {
		t.Fatalf("events of the webhook subscribed to all: %v, want [*]", got.Events)
	}
	off := mustWebhook(t, s, u, ams.EventMessageCreated)
	no := false
	if _, err := s.UpdateWebhook(ctx, u.ID, off.ID, ams.WebhookUpdate{Active: &no}, t0); err != nil {
		t.Fatal(err)
	}
	x := sendTurn(t, s, u, a, t0) // two events, fanned out in one statement
	sendTurn(t, s, other, oa, t0) // another account's: to no webhook of u
	deleted := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskDeleted, CreatedAt: t0.Add(time.Second),
		Data: map[string]any{"id": "task_x"}}
	if err := s.Emit(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	ping := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventWebhookPing, CreatedAt: t0.Add(2 * time.Second),
		Data: map[string]any{"webhook_id": msgs.ID}}
	if err := s.PingWebhook(ctx, u.ID, msgs.ID, ping); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.ClaimJobs(ctx, t0.Add(time.Minute), ams.Claim{Lease: time.Minute, Limit: 20, PerWebhook: 20})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	seqs := map[string]int64{} // webhook and event: the job's place in the queue
	for _, j := range jobs {
		got[j.WebhookID] = append(got[j.WebhookID], j.Event.ID)
		seqs[j.WebhookID+j.Event.ID] = j.Seq
	}
	for _, w := range []string{all.ID, msgs.ID} {
		// The jobs of one exchange are queued in the order of its events.
		if in, re := seqs[w+x.Events[0].ID], seqs[w+x.Events[1].ID]; in == 0 || re == 0 || in > re {
			t.Fatalf("webhook %s: job of the inbound message %d, of the reply %d; want both, the inbound's first", w, in, re)
		}
	}
	for _, l := range got {
		slices.Sort(l)
	}
	wantAll := []string{x.Events[0].ID, x.Events[1].ID, deleted.ID}
	wantMsgs := []string{x.Events[0].ID, x.Events[1].ID, ping.ID}
	slices.Sort(wantAll)
	slices.Sort(wantMsgs)
	if !slices.Equal(got[all.ID], wantAll) || !slices.Equal(got[msgs.ID], wantMsgs) || len(got) != 2 {
		t.Fatalf("jobs by webhook %v; want %s: %v (no ping), %s: %v", got, all.ID, wantAll, msgs.ID, wantMsgs)
	}
	// A webhook subscribed to all later recovers every retained event of
	// the range but the ping.
	late := mustWebhook(t, s, u, ams.EventAll)
	n, err := s.EnqueueRecovery(ctx, u.ID, late.ID, t0, t0.Add(time.Hour), t0.Add(time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("recovery for a webhook subscribed to all: %d queued, %v; want 3", n, err)
	}
}
