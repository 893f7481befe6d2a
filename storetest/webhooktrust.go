package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// Events a receiver can trust (issue 31, points 2 and 6): a webhook's
// failure streak, webhook.degraded and webhook.recovered with their
// e-mails; filters applied at fan-out and thin payloads at claim.

// testNotices writes a health e-mail naming the event, so that a test
// can tell which change it tells of.
type testNotices struct{}

func (testNotices) HealthEmail(u *ams.User, e *ams.Event) *ams.Email {
	return &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailWebhookHealth, To: u.Email, Subject: e.Type, Text: e.ID}
}

// taskEvents emits n task.created events of u at t0+i ms, the i-th of
// assistant assistants[i%len], conversation-less, with metadata team
// "blue" for even i and "red" for odd i; it returns them.
func taskEvents(t *testing.T, s ams.Store, u *ams.User, assistants []string, n int) []*ams.Event {
	t.Helper()
	var evs []*ams.Event
	for i := range n {
		team := "blue"
		if i%2 == 1 {
			team = "red"
		}
		at := t0.Add(time.Duration(i) * time.Millisecond)
		task := &ams.Task{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: u.ID, AssistantID: assistants[i%len(assistants)],
			Title: fmt.Sprintf("task %d", i), Status: ams.TaskOpen, Metadata: ams.Metadata{"team": team, "n": fmt.Sprint(i)}, CreatedAt: at, UpdatedAt: at}
		evs = append(evs, ams.TaskEvent(ams.EventTaskCreated, task, at))
	}
	for c := 0; c < len(evs); c += 100 {
		if err := s.Emit(context.Background(), evs[c:min(c+100, len(evs))]...); err != nil {
			t.Fatal(err)
		}
	}
	return evs
}

// claimByWebhook claims every job due at at, and returns them by webhook.
func claimByWebhook(t *testing.T, s ams.Store, at time.Time) map[string][]*ams.Job {
	t.Helper()
	out := map[string][]*ams.Job{}
	for {
		jobs, err := s.ClaimJobs(context.Background(), at, ams.Claim{Lease: time.Hour, Limit: 500, PerWebhook: 5000})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			return out
		}
		for _, j := range jobs {
			out[j.WebhookID] = append(out[j.WebhookID], j)
		}
	}
}

func testWebhookHealth(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "health@example.com")
	w := mustWebhook(t, s, u, ams.EventTaskCreated)
	watcher := mustWebhook(t, s, u, ams.EventWebhookDegraded, ams.EventWebhookRecovered)
	taskEvents(t, s, u, []string{ams.NewID(ams.PrefixAssistant)}, 20)
	jobs := claimByWebhook(t, s, t0.Add(time.Second))[w.ID]
	if len(jobs) != 20 {
		t.Fatalf("%d jobs, want 20", len(jobs))
	}
	at := t0.Add(time.Minute)
	next := 0
	result := func(ok bool) *ams.AttemptResult {
		j := jobs[next]
		next++
		code, msg := 503, "the receiver answered 503"
		d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: u.ID, WebhookID: w.ID, EventID: j.Event.ID, EventType: j.Event.Type,
			Attempt: 1, URL: j.URL, StatusCode: &code, Error: &msg, DurationMS: 10, CreatedAt: at}
		r := &ams.AttemptResult{Job: j, Delivery: d, Outcome: ams.JobRetry, NextAt: at.Add(time.Hour), Notices: testNotices{}}
		if ok {
			code = 200
			d.Success, d.Error, r.Outcome = true, nil, ams.JobSucceeded
		}
		return r
	}
	record := func(oks ...bool) {
		t.Helper()
		var rs []*ams.AttemptResult
		for _, ok := range oks {
			rs = append(rs, result(ok))
		}
		var err error
		if len(rs) == 1 {
			_, err = s.RecordAttempt(ctx, rs[0], at)
		} else {
			var errs []error
			errs, err = s.RecordAttempts(ctx, rs, at)
			for _, e := range errs {
				if e != nil {
					t.Fatal(e)
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	streak := func(want int) {
		t.Helper()
		got, err := s.FindWebhook(ctx, u.ID, w.ID)
		if err != nil || got.FailureStreak != want {
			t.Fatalf("failure streak %d (%v), want %d", got.FailureStreak, err, want)
		}
	}
	health := func() []*ams.Event {
		t.Helper()
		var out []*ams.Event
		for _, typ := range []string{ams.EventWebhookDegraded, ams.EventWebhookRecovered} {
			p, err := listEvents(t, s, ctx, u.ID, ams.EventFilter{Type: typ}, ams.ListParams{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.Data...)
		}
		return out
	}

	// Two failures, then a success: no warning, the streak back to 0.
	record(false)
	record(false)
	streak(2)
	record(true)
	streak(0)
	if h := health(); len(h) != 0 {
		t.Fatalf("health events after 2 failures: %v", h)
	}
	// A success at 0 changes nothing.
	before, _ := s.FindWebhook(ctx, u.ID, w.ID)
	record(true)
	if after, _ := s.FindWebhook(ctx, u.ID, w.ID); after.FailureStreak != 0 || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("a success changed a healthy webhook: %+v", after)
	}
	// Three failures in one batch, then a fourth: one webhook.degraded.
	record(false, false, false)
	streak(3)
	record(false)
	streak(4)
	h := health()
	if len(h) != 1 || h[0].Type != ams.EventWebhookDegraded {
		t.Fatalf("after 4 failures: %v", h)
	}
	d := h[0].Data
	if d["webhook_id"] != w.ID || d["url"] != w.URL || fmt.Sprint(d["status_code"]) != "503" || d["error"] != "the receiver answered 503" ||
		fmt.Sprint(d["failed_attempts"]) != "3" {
		t.Fatalf("webhook.degraded data %v", d)
	}
	// The success: webhook.recovered, carrying how many had failed.
	record(true)
	streak(0)
	h = health()
	if len(h) != 2 || h[1].Type != ams.EventWebhookRecovered || fmt.Sprint(h[1].Data["failed_attempts"]) != "4" ||
		fmt.Sprint(h[1].Data["status_code"]) != "200" || h[1].Data["error"] != nil {
		for _, e := range h {
			t.Logf("%s %v", e.Type, e.Data)
		}
		t.Fatalf("after the success: %v", h)
	}
	// Both were queued for the watcher, and e-mailed once each.
	queued := claimByWebhook(t, s, at.Add(time.Second))[watcher.ID]
	if len(queued) != 2 || queued[0].Event.Type != ams.EventWebhookDegraded || queued[1].Event.Type != ams.EventWebhookRecovered {
		t.Fatalf("watcher's jobs: %v", queued)
	}
	emails, err := s.ClaimEmails(ctx, at.Add(time.Second), time.Minute, 10)
	if err != nil || len(emails) != 2 || emails[0].Kind != ams.EmailWebhookHealth || emails[0].To != u.Email {
		t.Fatalf("e-mails: %+v %v", emails, err)
	}
	subjects := map[string]bool{emails[0].Subject: true, emails[1].Subject: true}
	if !subjects[ams.EventWebhookDegraded] || !subjects[ams.EventWebhookRecovered] {
		t.Fatalf("e-mail subjects %v", subjects)
	}
	for _, e := range emails {
		if err := s.FinishEmail(ctx, e.ID, true, "", time.Time{}, at.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// A batch that fails three times, succeeds, then fails: degraded,
	// recovered, and a streak of 1 left. With the owner's webhook
	// e-mails off, no e-mail.
	off := true
	if _, err := s.UpdateUser(ctx, u.ID, ams.UserUpdate{WebhookFailingEmailsOff: &off}, at); err != nil {
		t.Fatal(err)
	}
	record(false, false, false, true, false)
	streak(1)
	if h := health(); len(h) != 4 || h[1].Type != ams.EventWebhookDegraded || h[3].Type != ams.EventWebhookRecovered {
		t.Fatalf("after the mixed batch: %v", h)
	}
	if more, _ := s.ClaimEmails(ctx, at.Add(time.Hour), time.Minute, 10); len(more) != 0 {
		t.Fatalf("e-mails sent although turned off: %v", more)
	}
	// The summary of the attempts recorded.
	sum, err := s.SummarizeWebhook(ctx, u.ID, w.ID, at.Add(-ams.SummaryWindow))
	if err != nil || sum.Attempts != 14 || sum.Succeeded != 4 || sum.SuccessRate == nil || *sum.SuccessRate != 0.2857 ||
		sum.P95DurationMS == nil || *sum.P95DurationMS != 10 {
		t.Fatalf("summary %+v %v", sum, err)
	}
	if sum, err := s.SummarizeWebhook(ctx, u.ID, w.ID, at.Add(time.Second)); err != nil || sum.Attempts != 0 || sum.SuccessRate != nil {
		t.Fatalf("summary of no attempts %+v %v", sum, err)
	}
	other := mustUser(t, s, "health2@example.com")
	if sum, err := s.SummarizeWebhook(ctx, other.ID, w.ID, at.Add(-ams.SummaryWindow)); err != nil || sum.Attempts != 0 {
		t.Fatalf("another account's summary %+v %v", sum, err)
	}
}

func testWebhookFilters(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "filters@example.com")
	var assistants []string
	for range 10 {
		assistants = append(assistants, ams.NewID(ams.PrefixAssistant))
	}
	filtered := func(f ams.WebhookFilter, payload string) *ams.Webhook {
		t.Helper()
		w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: u.ID, URL: "https://example.com/f", Events: []string{ams.EventAll},
			Active: true, Status: ams.WebhookActive, Secret: "secret-of-a-filter", Filter: f, Payload: payload, CreatedAt: t0, UpdatedAt: t0}
		if err := s.CreateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
		got, err := s.FindWebhook(ctx, u.ID, w.ID)
		if err != nil || got.Payload != payload || got.Filter.AssistantID != f.AssistantID || len(got.Filter.Metadata) != len(f.Metadata) {
			t.Fatalf("stored webhook %+v %v", got, err)
		}
		return w
	}
	all := mustWebhook(t, s, u, ams.EventTaskCreated)
	third := filtered(ams.WebhookFilter{AssistantID: assistants[3]}, ams.PayloadFull)
	blue := filtered(ams.WebhookFilter{Metadata: map[string]string{"team": "blue"}}, ams.PayloadFull)
	thirdBlue := filtered(ams.WebhookFilter{AssistantID: assistants[3], Metadata: map[string]string{"team": "blue", "n": "3"}}, ams.PayloadFull)
	thirdRed := filtered(ams.WebhookFilter{AssistantID: assistants[3], Metadata: map[string]string{"team": "red", "n": "3"}}, ams.PayloadThin)
	conv := filtered(ams.WebhookFilter{ConversationID: ams.NewID(ams.PrefixConversation)}, ams.PayloadFull)
	other := mustUser(t, s, "filters2@example.com")
	taskEvents(t, s, other, assistants, 10) // another account's: none of these

	evs := taskEvents(t, s, u, assistants, 1000)
	jobs := claimByWebhook(t, s, t0.Add(time.Hour))
	for _, c := range []struct {
		name string
		w    *ams.Webhook
		want func(i int) bool
	}{
		{"unfiltered", all, func(int) bool { return true }},
		{"assistant", third, func(i int) bool { return i%10 == 3 }},
		{"metadata", blue, func(i int) bool { return i%2 == 0 }},
		{"assistant and two metadata keys", thirdBlue, func(i int) bool { return false }}, // i%10 == 3 is odd: red
		{"assistant and metadata, thin", thirdRed, func(i int) bool { return i == 3 }},
		{"conversation", conv, func(int) bool { return false }}, // tasks have no conversation
	} {
		want := map[string]bool{}
		for i, e := range evs {
			if c.want(i) {
				want[e.ID] = true
			}
		}
		got := jobs[c.w.ID]
		if len(got) != len(want) {
			t.Errorf("%s: %d jobs, want %d", c.name, len(got), len(want))
		}
		for _, j := range got {
			if !want[j.Event.ID] {
				t.Errorf("%s: a job for event %s %v", c.name, j.Event.ID, j.Event.Data)
			}
		}
	}
	// The thin webhook's job: the event's ids only.
	if j := jobs[thirdRed.ID]; len(j) == 1 {
		d := j[0].Event.Data
		if len(d) != 3 || d["id"] == nil || d["object"] != "task" || d["assistant_id"] != assistants[3] || j[0].Payload != ams.PayloadThin {
			t.Errorf("thin data %v", d)
		}
		if j0 := jobs[all.ID][0]; j0.Event.Data["title"] == nil || j0.Payload != ams.PayloadFull {
			t.Errorf("full data %v", j0.Event.Data)
		}
	}
	// Recovery into a filtered webhook queues only what it selects.
	fifth := filtered(ams.WebhookFilter{AssistantID: assistants[5]}, ams.PayloadFull)
	n, err := s.EnqueueRecovery(ctx, u.ID, fifth.ID, t0, t0.Add(time.Hour), t0.Add(2*time.Hour))
	if err != nil || n != 100 {
		t.Fatalf("recovery into a filtered webhook: %d %v", n, err)
	}
	rec := claimByWebhook(t, s, t0.Add(2*time.Hour))[fifth.ID]
	if len(rec) != 100 || rec[0].Event.ID != evs[5].ID || rec[99].Event.ID != evs[995].ID {
		t.Fatalf("recovered %d jobs", len(rec))
	}
	// Update: a new filter replaces the old one; a zero filter removes it.
	f := ams.WebhookFilter{AssistantID: assistants[1]}
	thin := ams.PayloadThin
	got, err := s.UpdateWebhook(ctx, u.ID, third.ID, ams.WebhookUpdate{Filter: &f, Payload: &thin}, t0.Add(3*time.Hour))
	if err != nil || got.Filter.AssistantID != assistants[1] || got.Payload != thin {
		t.Fatalf("update %+v %v", got, err)
	}
	none := ams.WebhookFilter{}
	if got, err = s.UpdateWebhook(ctx, u.ID, blue.ID, ams.WebhookUpdate{Filter: &none}, t0.Add(3*time.Hour)); err != nil || !got.Filter.IsZero() {
		t.Fatalf("filter removed %+v %v", got, err)
	}
	if got, _ = s.FindWebhook(ctx, u.ID, blue.ID); !got.Filter.IsZero() {
		t.Fatalf("filter removed, read back %+v", got.Filter)
	}
}
