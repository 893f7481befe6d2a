package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/postgres"
)

// taskWebhooks makes an account with n active webhooks subscribed to
// task.created.
func taskWebhooks(t testing.TB, db *postgres.DB, n int) (*ams.User, []*ams.Webhook) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "hooks@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	hooks := make([]*ams.Webhook, n)
	for i := range hooks {
		hooks[i] = &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: fmt.Sprintf("https://example.com/hook%d", i),
			Events: []string{ams.EventTaskCreated}, Active: true, Status: ams.WebhookActive, Secret: "a-very-secret-signing-key",
			CreatedAt: now, UpdatedAt: now}
		if err := db.CreateWebhook(ctx, hooks[i]); err != nil {
			t.Fatal(err)
		}
	}
	return u, hooks
}

// emitTasks emits n task.created events of u: a job for each of its
// webhooks per event.
func emitTasks(t testing.TB, db *postgres.DB, u *ams.User, n int) {
	t.Helper()
	for range n {
		e := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskCreated,
			Data: map[string]any{"task_id": ams.NewID(ams.PrefixTask)}, CreatedAt: time.Now()}
		if err := db.Emit(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
}

// attempt is the result of an attempt of j made at: the receiver
// answered 200 (a success) or 500 (a retry a minute later).
func attempt(j *ams.Job, outcome ams.JobOutcome, at time.Time) *ams.AttemptResult {
	code := 200
	if outcome != ams.JobSucceeded {
		code = 500
	}
	r := &ams.AttemptResult{Job: j, Outcome: outcome, Delivery: &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), Object: "webhook_delivery",
		UserID: j.UserID, WebhookID: j.WebhookID, EventID: j.Event.ID, EventType: j.Event.Type, Attempt: j.Attempts + 1, URL: j.URL,
		Success: outcome == ams.JobSucceeded, StatusCode: &code, DurationMS: 2, ResponseBody: "ok", CreatedAt: at}}
	if outcome == ams.JobRetry {
		r.NextAt = at.Add(time.Minute)
	}
	return r
}
