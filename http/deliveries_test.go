package http_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// TestDeliveriesBySuccess (issue 31, point 2): GET
// /v1/webhooks/{id}/deliveries?success=true|false lists only the
// successful or the failed attempts; another value is 400 naming
// success.
func TestDeliveriesBySuccess(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	hook := f.create("/v1/webhooks", `{"url":"`+hookURL+`","events":["task.created"],"secret":"0123456789abcdef"}`)["id"].(string)
	for i := 0; i < 3; i++ {
		f.create("/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"t"}`)
	}
	jobs, err := f.Store.ClaimJobs(ctx, f.Clock.Now().Add(time.Hour), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 10})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	want := map[bool][]string{}
	for i, j := range jobs {
		ok := i != 1
		code := 200
		if !ok {
			code = 500
		}
		d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: j.UserID, WebhookID: j.WebhookID, EventID: j.Event.ID, EventType: j.Event.Type,
			Attempt: 1, URL: j.URL, Success: ok, StatusCode: &code, DurationMS: 2, CreatedAt: f.Clock.Now()}
		r := &ams.AttemptResult{Job: j, Delivery: d, Outcome: ams.JobSucceeded}
		if !ok {
			r.Outcome, r.NextAt = ams.JobRetry, f.Clock.Now().Add(time.Minute)
		}
		if _, err := f.Store.RecordAttempt(ctx, r, f.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		want[ok] = append(want[ok], d.ID)
	}
	path := "/v1/webhooks/" + hook + "/deliveries"
	if got := ids(f.ok(200, "GET", path+"?success=false", "")); len(got) != 1 || got[0] != want[false][0] {
		t.Fatalf("failed attempts: %v, want %v", got, want[false])
	}
	if got := ids(f.ok(200, "GET", path+"?success=true&order=asc", "")); len(got) != 2 || got[0] != want[true][0] || got[1] != want[true][1] {
		t.Fatalf("successful attempts: %v, want %v", got, want[true])
	}
	if got := ids(f.ok(200, "GET", path, "")); len(got) != 3 {
		t.Fatalf("all attempts: %v", got)
	}
	wantError(t, f.do("GET", path+"?success=yes", ""), 400, "invalid_request_error", "parameter_invalid", "success")
}
