package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// claim leases due jobs at now, failing the test on an error.
func claim(t *testing.T, s ams.Store, now time.Time, c ams.Claim) []*ams.Job {
	t.Helper()
	if c.Lease == 0 {
		c.Lease = time.Minute
	}
	jobs, err := s.ClaimJobs(context.Background(), now, c)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func perWebhook(jobs []*ams.Job) map[string]int {
	per := map[string]int{}
	for _, j := range jobs {
		per[j.WebhookID]++
	}
	return per
}

// The per-webhook cap counts every leased job of the webhook, whichever
// claim (process) leased it.
func testClaimWebhookCap(t *testing.T, s ams.Store) {
	u := mustUser(t, s, "fair@example.com")
	a := mustAssistant(t, s, u, "fair")
	slow := mustWebhook(t, s, u, ams.EventMessageCreated)
	for i := 0; i < 20; i++ { // a backlog of 40 jobs for the slow webhook
		sendTurn(t, s, u, a, t0)
	}
	fast := mustWebhook(t, s, u, ams.EventMessageCreated)
	sendTurn(t, s, u, a, t0.Add(time.Second)) // 2 more for each
	now := t0.Add(2 * time.Second)
	// One claim leases 3 of the slow webhook's oldest jobs.
	if per := perWebhook(claim(t, s, now, ams.Claim{Limit: 3, PerWebhook: 4})); per[slow.ID] != 3 {
		t.Fatalf("first claim: %v", per)
	}
	// Another gets one more of the slow webhook's (its cap is 4) and the
	// fast one's jobs, although they are newer.
	if per := perWebhook(claim(t, s, now, ams.Claim{Limit: 10, PerWebhook: 4})); per[slow.ID] != 1 || per[fast.ID] != 2 {
		t.Fatalf("second claim: slow %d, fast %d", per[slow.ID], per[fast.ID])
	}
	// The slow webhook is saturated until a lease runs out.
	if jobs := claim(t, s, now.Add(30*time.Second), ams.Claim{Limit: 10, PerWebhook: 4}); len(jobs) != 0 {
		t.Fatalf("saturated webhook got %d", len(jobs))
	}
	if per := perWebhook(claim(t, s, now.Add(time.Minute), ams.Claim{Limit: 10, PerWebhook: 4})); per[slow.ID] != 4 {
		t.Fatalf("after the leases ran out: %v", per)
	}
}

// Accounts take turns: an account's backlog does not keep another's newer
// jobs waiting, and the per-account cap counts its leased jobs.
func testClaimAccounts(t *testing.T, s ams.Store) {
	busy, quiet := mustUser(t, s, "busy@example.com"), mustUser(t, s, "quiet@example.com")
	ab, aq := mustAssistant(t, s, busy, "busy"), mustAssistant(t, s, quiet, "quiet")
	var hooks []*ams.Webhook
	for i := 0; i < 3; i++ {
		hooks = append(hooks, mustWebhook(t, s, busy, ams.EventMessageCreated))
	}
	for i := 0; i < 10; i++ { // 20 jobs per webhook of the busy account
		sendTurn(t, s, busy, ab, t0)
	}
	q := mustWebhook(t, s, quiet, ams.EventMessageCreated)
	sendTurn(t, s, quiet, aq, t0.Add(time.Second)) // 2 newer jobs
	now := t0.Add(2 * time.Second)
	first := claim(t, s, now, ams.Claim{Limit: 2, PerWebhook: 8})
	if len(first) != 2 || first[0].UserID == first[1].UserID {
		t.Fatalf("a claim of 2 did not take one job of each account: %v", perWebhook(first))
	}
	// The busy account has 1 in flight; with a cap of 4 it gets 3 more,
	// the quiet one its last job.
	jobs := claim(t, s, now, ams.Claim{Limit: 20, PerWebhook: 8, PerAccount: 4})
	per := map[string]int{}
	for _, j := range jobs {
		per[j.UserID]++
	}
	if per[busy.ID] != 3 || per[quiet.ID] != 1 || perWebhook(jobs)[q.ID] != 1 {
		t.Fatalf("with a cap of 4 per account: %v", per)
	}
	if jobs := claim(t, s, now, ams.Claim{Limit: 20, PerWebhook: 8, PerAccount: 4}); len(jobs) != 0 {
		t.Fatalf("an account at its cap got %d more", len(jobs))
	}
	// Without a per-account cap, only the per-webhook one applies.
	if jobs := claim(t, s, now, ams.Claim{Limit: 100, PerWebhook: 8}); len(jobs) != 3*8-4 {
		t.Fatalf("without an account cap: %d jobs, want %d", len(jobs), 3*8-4)
	}
	_ = hooks
}

// An attempt is recorded only under the lease its job was claimed with,
// before it runs out.
func testAttemptFenced(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "fence@example.com")
	a := mustAssistant(t, s, u, "fence")
	w := mustWebhook(t, s, u, ams.EventMessageCreated)
	x := sendTurn(t, s, u, a, t0)
	record := func(j *ams.Job, outcome ams.JobOutcome, at time.Time) error {
		code := 200
		d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: u.ID, WebhookID: w.ID, EventID: j.Event.ID, EventType: j.Event.Type,
			Attempt: j.Attempts + 1, URL: j.URL, Success: outcome == ams.JobSucceeded, StatusCode: &code, CreatedAt: at}
		_, err := s.RecordAttempt(ctx, &ams.AttemptResult{Job: j, Delivery: d, Outcome: outcome, NextAt: at.Add(time.Minute)}, at)
		return err
	}
	logged := func() int {
		t.Helper()
		p, err := s.ListDeliveries(ctx, u.ID, w.ID, x.Events[0].ID, ams.ListParams{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Data)
	}
	jobs := claim(t, s, t0, ams.Claim{Limit: 1, PerWebhook: 8})
	if len(jobs) != 1 || !jobs[0].LeaseUntil.Equal(t0.Add(time.Minute)) {
		t.Fatalf("claimed %+v", jobs)
	}
	late := jobs[0]
	// The lease ran out: the record is refused, and nothing is logged.
	if err := record(late, ams.JobSucceeded, t0.Add(time.Minute)); !errors.Is(err, ams.ErrLeaseLost) {
		t.Fatalf("record after the lease ran out: %v, want ErrLeaseLost", err)
	}
	if n := logged(); n != 0 {
		t.Fatalf("%d attempts logged by a worker whose lease ran out", n)
	}
	// Another worker claims the job again; the first one's record, though
	// before the new lease runs out, is still refused.
	again := claim(t, s, t0.Add(time.Minute), ams.Claim{Limit: 1, PerWebhook: 8})
	if len(again) != 1 || again[0].Seq != late.Seq || again[0].Attempts != 0 {
		t.Fatalf("reclaimed %+v", again)
	}
	if err := record(late, ams.JobSucceeded, t0.Add(time.Minute+time.Second)); !errors.Is(err, ams.ErrLeaseLost) {
		t.Fatalf("record under a lease that passed to another worker: %v", err)
	}
	// The holder's retry is recorded once; recording it twice is refused.
	if err := record(again[0], ams.JobRetry, t0.Add(time.Minute+2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := record(again[0], ams.JobRetry, t0.Add(time.Minute+3*time.Second)); !errors.Is(err, ams.ErrLeaseLost) {
		t.Fatalf("second record of one lease: %v", err)
	}
	if n := logged(); n != 1 {
		t.Fatalf("%d attempts logged, want 1", n)
	}
	// The retry is due after its delay (the reply's job, never claimed,
	// comes with it).
	retried := false
	for _, j := range claim(t, s, t0.Add(3*time.Minute), ams.Claim{Limit: 10, PerWebhook: 8}) {
		if j.Seq == late.Seq {
			retried = j.Attempts == 1
		}
	}
	if !retried {
		t.Fatal("the retry is not due with 1 attempt made")
	}
}
