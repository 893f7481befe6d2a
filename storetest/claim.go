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
		p, err := s.ListDeliveries(ctx, u.ID, w.ID, ams.DeliveryFilter{EventID: x.Events[0].ID}, ams.ListParams{Limit: 10})
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

// testRecordAttempts records a batch of attempts in one call: successes
// and retries are stored as RecordAttempt stores them; an attempt whose
// lease is not the job's is refused with ErrLeaseLost and logs nothing;
// the attempts of a webhook deleted meanwhile store nothing and are no
// error.
func testRecordAttempts(t *testing.T, s ams.Store) { recordAttempts(t, s, "batch@example.com", 2) }

// testRecordSuccesses is testRecordAttempts with successes only: the
// common path, which PostgreSQL records without the claims' lock, its
// last statement carrying the COMMIT.
func testRecordSuccesses(t *testing.T, s ams.Store) { recordAttempts(t, s, "successes@example.com", 0) }

// recordAttempts is testRecordAttempts with retries attempts that are
// retries.
func recordAttempts(t *testing.T, s ams.Store, email string, retries int) {
	ctx := context.Background()
	u := mustUser(t, s, email)
	a := mustAssistant(t, s, u, "batch")
	w := mustWebhook(t, s, u, ams.EventMessageCreated)
	gone := mustWebhook(t, s, u, ams.EventMessageCreated)
	const turns = 12 // 24 jobs per webhook: more than one statement's worth
	for i := range turns {
		sendTurn(t, s, u, a, t0.Add(time.Duration(i)*time.Millisecond))
	}
	jobs := claim(t, s, t0.Add(time.Second), ams.Claim{Limit: 100, PerWebhook: 100})
	if per := perWebhook(jobs); per[w.ID] != 2*turns || per[gone.ID] != 2*turns {
		t.Fatalf("claimed %v", per)
	}
	if err := s.DeleteWebhook(ctx, u.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(2 * time.Second)
	var rs []*ams.AttemptResult
	var retried, stale, succeeded []*ams.Job
	for _, j := range jobs {
		code := 200
		d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: u.ID, WebhookID: j.WebhookID, EventID: j.Event.ID, EventType: j.Event.Type,
			Attempt: 1, URL: j.URL, Success: true, StatusCode: &code, DurationMS: 3, ResponseBody: "ok", CreatedAt: at}
		r := &ams.AttemptResult{Job: j, Delivery: d, Outcome: ams.JobSucceeded}
		switch {
		case j.WebhookID == gone.ID:
		case len(retried) < retries:
			code = 500
			d.Success, d.ResponseBody = false, "no"
			r.Outcome, r.NextAt = ams.JobRetry, t0.Add(5*time.Minute)
			retried = append(retried, j)
		case len(stale) < 1:
			old := *j
			old.LeaseUntil = j.LeaseUntil.Add(-time.Second) // not the lease the job holds
			r.Job = &old
			stale = append(stale, j)
		default:
			succeeded = append(succeeded, j)
		}
		rs = append(rs, r)
	}
	errs, err := s.RecordAttempts(ctx, rs, at)
	if err != nil || len(errs) != len(rs) {
		t.Fatalf("RecordAttempts: %v, %d answers", err, len(errs))
	}
	for i, r := range rs {
		want := error(nil)
		if r.Job.Seq == stale[0].Seq {
			want = ams.ErrLeaseLost
		}
		if !errors.Is(errs[i], want) || (want == nil && errs[i] != nil) {
			t.Errorf("attempt %d (job %d of %s): %v, want %v", i, r.Job.Seq, r.Job.WebhookID, errs[i], want)
		}
	}
	// One attempt logged per recorded job, with what the worker saw.
	for _, j := range append(append([]*ams.Job{}, retried...), succeeded...) {
		p, err := s.ListDeliveries(ctx, u.ID, w.ID, ams.DeliveryFilter{EventID: j.Event.ID}, ams.ListParams{Limit: 10})
		if err != nil || len(p.Data) != 1 {
			t.Fatalf("deliveries of job %d: %v %v", j.Seq, p, err)
		}
		d := p.Data[0]
		if d.Attempt != 1 || !d.CreatedAt.Equal(at) || d.DurationMS != 3 || (d.Success != (*d.StatusCode == 200)) {
			t.Errorf("logged %+v", d)
		}
	}
	if p, err := s.ListDeliveries(ctx, u.ID, w.ID, ams.DeliveryFilter{EventID: stale[0].Event.ID}, ams.ListParams{Limit: 10}); err != nil || len(p.Data) != 0 {
		t.Fatalf("the refused attempt was logged: %v %v", p, err)
	}
	// After the leases run out: the refused job is due again, untouched;
	// the retries come at their time, counted; the successes never.
	again := claim(t, s, t0.Add(2*time.Minute), ams.Claim{Limit: 100, PerWebhook: 100, Lease: time.Hour})
	if len(again) != 1 || again[0].Seq != stale[0].Seq || again[0].Attempts != 0 {
		t.Fatalf("claimed after the leases: %+v", again)
	}
	later := claim(t, s, t0.Add(5*time.Minute), ams.Claim{Limit: 100, PerWebhook: 100})
	if len(later) != len(retried) {
		t.Fatalf("claimed at the retry time: %d jobs, want %d", len(later), len(retried))
	}
	for _, j := range later {
		if j.Attempts != 1 || (j.Seq != retried[0].Seq && j.Seq != retried[1].Seq) {
			t.Errorf("retried job %+v", j)
		}
	}
}

// recordClaimer is a store that claims in the transaction that records
// attempts (webhook.RecordClaimer; SQLite).
type recordClaimer interface {
	RecordAttemptsAndClaim(ctx context.Context, rs []*ams.AttemptResult, now time.Time, c ams.Claim) (errs []error, jobs []*ams.Job, claimErr, err error)
}

// testRecordAttemptsAndClaim: records and a claim in one call store the
// records as RecordAttempts does, and the claim counts the recorded jobs
// as no longer in flight (the per-webhook cap frees their slots) while a
// job whose record was refused keeps its slot; the claim takes the next
// jobs in order, and finds none once the queue is empty.
func testRecordAttemptsAndClaim(t *testing.T, s ams.Store) {
	rc, ok := s.(recordClaimer)
	if !ok {
		t.Skip("this engine claims in a transaction of its own (no RecordAttemptsAndClaim)")
	}
	ctx := context.Background()
	u := mustUser(t, s, "recordclaim@example.com")
	a := mustAssistant(t, s, u, "recordclaim")
	w := mustWebhook(t, s, u, ams.EventMessageCreated)
	for i := range 3 { // 6 jobs, oldest first
		sendTurn(t, s, u, a, t0.Add(time.Duration(i)*time.Millisecond))
	}
	c := ams.Claim{Lease: time.Minute, Limit: 2, PerWebhook: 2}
	first := claim(t, s, t0.Add(time.Second), c)
	if len(first) != 2 {
		t.Fatalf("claimed %d jobs, want 2 (the cap)", len(first))
	}
	seen := map[int64]bool{first[0].Seq: true, first[1].Seq: true}
	at := t0.Add(2 * time.Second)
	result := func(j *ams.Job) *ams.AttemptResult {
		code := 200
		return &ams.AttemptResult{Job: j, Outcome: ams.JobSucceeded, Delivery: &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: u.ID,
			WebhookID: j.WebhookID, EventID: j.Event.ID, EventType: j.Event.Type, Attempt: 1, URL: j.URL, Success: true, StatusCode: &code, CreatedAt: at}}
	}
	// Both recorded: the cap's two slots are free for the claim.
	errs, next, claimErr, err := rc.RecordAttemptsAndClaim(ctx, []*ams.AttemptResult{result(first[0]), result(first[1])}, at, c)
	if err != nil || claimErr != nil || len(errs) != 2 || errs[0] != nil || errs[1] != nil {
		t.Fatalf("RecordAttemptsAndClaim: %v %v %v", errs, claimErr, err)
	}
	if len(next) != 2 {
		t.Fatalf("claimed %d jobs with the records, want 2: the recorded jobs' slots are free", len(next))
	}
	for _, j := range next {
		if seen[j.Seq] || j.Attempts != 0 || j.Event == nil || j.Secret == "" {
			t.Fatalf("claimed with the records: %+v", j)
		}
		seen[j.Seq] = true
	}
	for _, j := range first {
		p, err := s.ListDeliveries(ctx, u.ID, w.ID, ams.DeliveryFilter{EventID: j.Event.ID}, ams.ListParams{Limit: 10})
		if err != nil || len(p.Data) != 1 || !p.Data[0].Success {
			t.Fatalf("the attempt of job %d is not logged: %v %v", j.Seq, p, err)
		}
	}
	// One recorded, one refused (not the lease its job holds): one slot
	// is free, the refused job's is not.
	stale := *next[1]
	stale.LeaseUntil = stale.LeaseUntil.Add(-time.Second)
	at2 := at.Add(time.Second)
	errs, last, claimErr, err := rc.RecordAttemptsAndClaim(ctx, []*ams.AttemptResult{result(next[0]), result(&stale)}, at2, c)
	if err != nil || claimErr != nil || len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], ams.ErrLeaseLost) {
		t.Fatalf("RecordAttemptsAndClaim with a refused record: %v %v %v", errs, claimErr, err)
	}
	if len(last) != 1 || seen[last[0].Seq] {
		t.Fatalf("claimed %d jobs beside a job still in flight, want 1 new one: %+v", len(last), last)
	}
	// The last two jobs: recorded, and nothing left to claim.
	errs, none, claimErr, err := rc.RecordAttemptsAndClaim(ctx, []*ams.AttemptResult{result(next[1]), result(last[0])}, at2, c)
	if err != nil || claimErr != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("RecordAttemptsAndClaim: %v %v %v", errs, claimErr, err)
	}
	if len(none) != 1 || seen[none[0].Seq] {
		t.Fatalf("claimed %+v, want the sixth job", none)
	}
	errs, empty, claimErr, err := rc.RecordAttemptsAndClaim(ctx, []*ams.AttemptResult{result(none[0])}, at2, c)
	if err != nil || claimErr != nil || errs[0] != nil || len(empty) != 0 {
		t.Fatalf("the last record: %v %v %v, claimed %d", errs, claimErr, err, len(empty))
	}
	if more := claim(t, s, t0.Add(time.Hour), c); len(more) != 0 {
		t.Fatalf("jobs left after every attempt was recorded: %d", len(more))
	}
}

// testFailureFenced: a final failure goes through the same fence as any
// attempt (RecordAttempt is a batch of one): under a lease that is no
// longer the job's it stores nothing — the webhook stays active, its
// owner gets no e-mail, no webhook.failing is emitted — and answers
// ErrLeaseLost; the final failure of a webhook deleted meanwhile stores
// nothing and is no error.
func testFailureFenced(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "failfence@example.com")
	a := mustAssistant(t, s, u, "failfence")
	w := mustWebhook(t, s, u, ams.EventMessageCreated)
	gone := mustWebhook(t, s, u, ams.EventMessageCreated)
	sendTurn(t, s, u, a, t0)
	jobs := claim(t, s, t0, ams.Claim{Limit: 100, PerWebhook: 100})
	var mine, theirs *ams.Job
	for _, j := range jobs {
		switch {
		case j.WebhookID == w.ID && mine == nil:
			mine = j
		case j.WebhookID == gone.ID && theirs == nil:
			theirs = j
		}
	}
	if mine == nil || theirs == nil {
		t.Fatalf("claimed %+v", jobs)
	}
	fail := func(j *ams.Job, at time.Time) (bool, error) {
		return s.RecordAttempt(ctx, attempt(j, ams.JobFailed, at), at)
	}
	stale := *mine
	stale.LeaseUntil = mine.LeaseUntil.Add(-time.Second) // not the lease the job holds
	if failed, err := fail(&stale, t0.Add(time.Second)); !errors.Is(err, ams.ErrLeaseLost) || failed {
		t.Fatalf("final failure under a lost lease: %v, %v; want ErrLeaseLost", failed, err)
	}
	if got, err := s.FindWebhook(ctx, u.ID, w.ID); err != nil || !got.Active || got.Status != ams.WebhookActive {
		t.Fatalf("after a refused final failure: %+v %v", got, err)
	}
	if es, err := s.ClaimEmails(ctx, t0.Add(time.Second), time.Minute, 10); err != nil || len(es) != 0 {
		t.Fatalf("e-mails after a refused final failure: %v %v", es, err)
	}
	if err := s.DeleteWebhook(ctx, u.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	if failed, err := fail(theirs, t0.Add(time.Second)); err != nil || failed {
		t.Fatalf("final failure of a deleted webhook: %v, %v; want nothing", failed, err)
	}
	// The job's own lease still records it, with every consequence.
	if failed, err := fail(mine, t0.Add(2*time.Second)); err != nil || !failed {
		t.Fatalf("final failure under the lease: %v, %v", failed, err)
	}
	if got, err := s.FindWebhook(ctx, u.ID, w.ID); err != nil || got.Active || got.Status != ams.WebhookFailing {
		t.Fatalf("after the final failure: %+v %v", got, err)
	}
	if es, err := s.ClaimEmails(ctx, t0.Add(2*time.Second), time.Minute, 10); err != nil || len(es) != 1 || es[0].Kind != ams.EmailWebhookFailing {
		t.Fatalf("e-mails after the final failure: %v %v", es, err)
	}
}
