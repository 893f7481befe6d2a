package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// queued returns the recipients of the e-mails queued and due at now, in
// order, and marks them sent.
func queued(t *testing.T, s ams.Store, now time.Time) []string {
	t.Helper()
	emails, err := s.ClaimEmails(context.Background(), now, time.Minute, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range emails {
		out = append(out, e.To)
		if err := s.FinishEmail(context.Background(), e.ID, true, "", time.Time{}, now); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func kindEmail(kind ams.EmailKind, to string) *ams.Email {
	return &ams.Email{ID: ams.NewID("eml_"), Kind: kind, To: to, Subject: string(kind), Text: "text of " + string(kind)}
}

// testEmailCaps (issue 26, M4): a recipient gets at most the cap of a kind
// of e-mail (ams.EmailCaps) within its window, whoever queues them; the
// rest are not queued, without an error. Another recipient, or another
// kind, is not affected; once the window has passed, e-mails are queued
// again. An e-mail of a kind without a cap is refused and nothing stored.
func testEmailCaps(t *testing.T, s ams.Store) {
	ctx := context.Background()
	c := ams.EmailCaps[ams.EmailSignupTaken]
	now := t0
	for i := range c.Max + 5 {
		if err := s.QueueEmail(ctx, kindEmail(ams.EmailSignupTaken, "owner@example.com"), now.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Minute)
	if got := queued(t, s, now); len(got) != c.Max {
		t.Fatalf("%d notices queued of %d, want the cap %d", len(got), c.Max+5, c.Max)
	}
	// Another recipient and another kind have their own counts.
	for _, e := range []*ams.Email{kindEmail(ams.EmailSignupTaken, "someone@example.com"), kindEmail(ams.EmailWebhookFailing, "owner@example.com")} {
		if err := s.QueueEmail(ctx, e, now); err != nil {
			t.Fatal(err)
		}
	}
	if got := queued(t, s, now); len(got) != 2 {
		t.Fatalf("another recipient and another kind: %v queued, want 2", got)
	}
	// The window slides: the first notice leaves it one window after it
	// was queued, and one more may go.
	now = t0.Add(c.Window + time.Millisecond)
	for range 2 {
		if err := s.QueueEmail(ctx, kindEmail(ams.EmailSignupTaken, "owner@example.com"), now); err != nil {
			t.Fatal(err)
		}
	}
	if got := queued(t, s, now); len(got) != 1 {
		t.Fatalf("after the first notice left the window: %v queued, want 1", got)
	}

	if err := s.QueueEmail(ctx, kindEmail("newsletter", "owner@example.com"), now); err == nil {
		t.Fatal("an e-mail of a kind without a cap was queued")
	}
	if got := queued(t, s, now); len(got) != 0 {
		t.Fatalf("queued after the refused e-mail: %v", got)
	}

	// The other ways of queueing count the same way: a reset link over
	// the recipient's cap (though under the account's) stores no token.
	u := mustUser(t, s, "links@example.com")
	rc := ams.EmailCaps[ams.EmailPasswordResetLink]
	issued := 0
	for i := range rc.Max + 2 {
		at := now.Add(time.Duration(i) * time.Minute)
		tok := &ams.AccountToken{Hash: ams.HashSecret("cap-" + string(rune('a'+i))), UserID: u.ID, Purpose: ams.TokenPasswordReset,
			Email: u.Email, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
		ok, err := s.IssueAccountToken(ctx, tok, kindEmail(ams.EmailPasswordResetLink, u.Email), at.Add(-time.Hour), 1000)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			issued++
		} else if _, err := s.FindAccountToken(ctx, tok.Hash, ams.TokenPasswordReset); !ams.IsNotFound(err) {
			t.Fatalf("a link over the recipient's cap was stored: %v", err)
		}
	}
	if issued != rc.Max {
		t.Fatalf("%d reset links issued, want the recipient's cap %d", issued, rc.Max)
	}
	if got := queued(t, s, now.Add(time.Hour)); len(got) != rc.Max {
		t.Fatalf("%d reset e-mails queued, want %d", len(got), rc.Max)
	}

	// A key reminder over the cap marks the key reminded (it is not due
	// again) and queues nothing.
	kc := ams.EmailCaps[ams.EmailKeyReminder]
	ku := mustUser(t, s, "keys@example.com")
	expires := now.Add(3 * day)
	var keys []*ams.APIKey
	for range kc.Max + 2 {
		keys = append(keys, mustKey(t, s, ku, "k", now, expires, time.Time{}))
	}
	reminded := 0
	for _, k := range keys {
		ok, err := s.RemindKey(ctx, k.ID, ams.KeyReminderExpiry, kindEmail(ams.EmailKeyReminder, ku.Email), now)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			reminded++
		}
	}
	if reminded != kc.Max {
		t.Fatalf("%d key reminders queued, want the cap %d", reminded, kc.Max)
	}
	if due := dueList(t, s, now, 100); len(due) != 0 {
		t.Fatalf("reminders still due after the cap: %v", due)
	}
	if got := queued(t, s, now.Add(time.Hour)); len(got) != kc.Max {
		t.Fatalf("%d key reminders queued, want %d", len(got), kc.Max)
	}

	// A webhook marked failing when its owner has had the cap of such
	// notices is marked all the same, and queues no e-mail.
	wu := mustUser(t, s, "hooks@example.com")
	wc := ams.EmailCaps[ams.EmailWebhookFailing]
	at := t0.Add(10 * day)
	for range wc.Max {
		if err := s.QueueEmail(ctx, kindEmail(ams.EmailWebhookFailing, wu.Email), at); err != nil {
			t.Fatal(err)
		}
	}
	queued(t, s, at)
	w := mustWebhook(t, s, wu, ams.EventMessageCreated)
	sendTurn(t, s, wu, mustAssistant(t, s, wu, "hooks"), at)
	jobs, err := s.ClaimJobs(ctx, at.Add(time.Second), ams.Claim{Lease: time.Minute, Limit: 1, PerWebhook: 8})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: wu.ID, WebhookID: w.ID, EventID: jobs[0].Event.ID,
		EventType: jobs[0].Event.Type, Attempt: 1, URL: w.URL, CreatedAt: at.Add(time.Second)}
	failed, err := s.RecordAttempt(ctx, &ams.AttemptResult{Job: jobs[0], Delivery: d, Outcome: ams.JobFailed,
		Email: kindEmail(ams.EmailWebhookFailing, wu.Email)}, at.Add(time.Second))
	if err != nil || !failed {
		t.Fatalf("final failure: marked %v, %v", failed, err)
	}
	if got := queued(t, s, at.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("a failing notice over the cap was queued: %v", got)
	}
}

// testEmailCapRace: e-mails to one recipient queued at once (as by
// several processes on one database) cannot all pass the cap: exactly
// the cap's number is queued.
func testEmailCapRace(t *testing.T, s ams.Store) {
	ctx := context.Background()
	c := ams.EmailCaps[ams.EmailSignupTaken]
	const n = 12
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			if err := s.QueueEmail(ctx, kindEmail(ams.EmailSignupTaken, "raced@example.com"), t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := queued(t, s, t0.Add(time.Minute)); len(got) != c.Max {
		t.Fatalf("%d of %d notices sent at once were queued, want the cap %d", len(got), n, c.Max)
	}
}
