package webhook_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
)

// eventOf decodes the envelope a receiver got.
func eventOf(t *testing.T, r received) map[string]any {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// messageEvents lists the account's message.created events in order of
// creation, as GET /v1/events?order=asc does.
func messageEvents(t *testing.T, f *amstest.Fixture) []string {
	t.Helper()
	var ids []string
	after := ""
	for {
		q := "/v1/events?type=message.created&order=asc&limit=100"
		if after != "" {
			q += "&after=" + after
		}
		l := f.Do("GET", q, f.Key, "").JSON(t)
		for _, e := range l["data"].([]any) {
			ids = append(ids, e.(map[string]any)["id"].(string))
		}
		if l["has_more"] != true {
			return ids
		}
		after = l["last_id"].(string)
	}
}

// TestRecoveryAfterADayOfFailing: a receiver goes down; its webhook fails
// five times and is disabled (webhook.failing reaches the account's other
// webhook subscribed to it, and /v1/events); events keep coming for a
// simulated day (injected clock, worker driven with RunOnce); the receiver
// comes back, the webhook is enabled again (webhook.enabled) and recovered
// since before the failure: every event it missed arrives exactly once,
// in order of creation.
func TestRecoveryAfterADayOfFailing(t *testing.T) {
	f := amstest.New(t)
	// One delivery in flight per webhook, so that the order in which the
	// receiver gets the recovered events is the order they were claimed
	// in (with more, a slower request could be overtaken).
	f.Worker.PerWebhook = 1
	rc := newReceiver(t, f.Clock.Now)
	watcher := newReceiver(t, f.Clock.Now)
	rc.setStatus(503)
	wh := createWebhook(t, f, rc.URL, "message.created")
	watch := createWebhook(t, f, watcher.URL, "webhook.failing", "webhook.enabled")
	start := f.Clock.Now()

	// The first three hours, a message every 10 minutes; the deliveries
	// fail until the fifth attempt of the first event (at 2h36m) marks the
	// webhook failing.
	for m := 0; m < 180; m++ {
		if m%10 == 0 {
			sendMessage(t, f, fmt.Sprintf("message at minute %d", m))
		}
		runOnce(t, f)
		f.Clock.Add(time.Minute)
	}
	st := f.Do("GET", "/v1/webhooks/"+wh, f.Key, "").JSON(t)
	if st["status"] != "failing" || st["active"] != false {
		t.Fatalf("after three hours of 503: %v", st)
	}
	failedAfter := len(rc.requests())
	for _, r := range rc.requests() {
		if r.at.Sub(start) > 157*time.Minute {
			t.Fatalf("an attempt at +%v, after the webhook was marked failing", r.at.Sub(start))
		}
	}
	// The watcher got webhook.failing, which /v1/events lists too.
	got := watcher.requests()
	if len(got) != 1 {
		t.Fatalf("the watcher got %d requests", len(got))
	}
	failing := eventOf(t, got[0])
	data := failing["data"].(map[string]any)
	if failing["type"] != "webhook.failing" || data["webhook_id"] != wh || data["url"] != rc.URL ||
		data["reason"] != "Delivery of event "+messageEvents(t, f)[0]+" (message.created) failed 5 times in a row; the last attempt: the receiver answered 503." {
		t.Fatalf("webhook.failing: %v", failing)
	}
	l := f.Do("GET", "/v1/events?type=webhook.failing", f.Key, "").JSON(t)["data"].([]any)
	if len(l) != 1 || l[0].(map[string]any)["id"] != failing["id"] {
		t.Fatalf("/v1/events?type=webhook.failing: %v", l)
	}

	// A simulated day: a message every hour, nothing delivered.
	for h := 0; h < 24; h++ {
		f.Clock.Add(time.Hour)
		sendMessage(t, f, fmt.Sprintf("message at hour %d", h))
		runOnce(t, f)
	}
	if len(rc.requests()) != failedAfter {
		t.Fatal("the disabled webhook got deliveries")
	}

	// Back: enabled (webhook.enabled to the watcher), then recovered.
	rc.setStatus(200)
	if r := f.Do("POST", "/v1/webhooks/"+wh+"/recover", f.Key, `{"since": "`+start.Format(time.RFC3339)+`"}`); r.Status != 409 ||
		r.JSON(t)["error"].(map[string]any)["code"] != "webhook_inactive" {
		t.Fatalf("recover while disabled: %d %s", r.Status, r.Body)
	}
	if r := f.Do("PATCH", "/v1/webhooks/"+wh, f.Key, `{"active": true}`); r.Status != 200 {
		t.Fatalf("enable: %d %s", r.Status, r.Body)
	}
	runOnce(t, f)
	got = watcher.requests()
	if len(got) != 2 {
		t.Fatalf("the watcher got %d requests", len(got))
	}
	if en := eventOf(t, got[1]); en["type"] != "webhook.enabled" || en["data"].(map[string]any)["webhook_id"] != wh {
		t.Fatalf("webhook.enabled: %v", en)
	}
	missed := messageEvents(t, f)
	if len(missed) != 2*(18+24) {
		t.Fatalf("%d message.created events", len(missed))
	}
	since := start.Add(-time.Minute).Format(time.RFC3339)
	r := f.Do("POST", "/v1/webhooks/"+wh+"/recover", f.Key, `{"since": "`+since+`"}`)
	if r.Status != 200 {
		t.Fatalf("recover: %d %s", r.Status, r.Body)
	}
	rec := r.JSON(t)
	// since, a minute before the webhook existed, is clamped to its
	// creation (include_earlier not asked).
	if rec["object"] != "webhook_recovery" || rec["webhook_id"] != wh || rec["queued"] != float64(len(missed)) || rec["since"] != ams.FormatTime(start) ||
		rec["until"] != ams.FormatTime(f.Clock.Now()) {
		t.Fatalf("recovery: %v", rec)
	}
	for runOnce(t, f) > 0 {
	}
	var order []string
	for _, r := range rc.requests()[failedAfter:] {
		order = append(order, r.header.Get("Webhook-Id"))
	}
	if !slices.Equal(order, missed) {
		t.Fatalf("after recovery the receiver got %d events:\n%v\nwant, in order of creation, %d:\n%v", len(order), order, len(missed), missed)
	}
	// Nothing twice: recovering again queues nothing.
	r = f.Do("POST", "/v1/webhooks/"+wh+"/recover", f.Key, `{"since": "`+since+`"}`)
	if r.Status != 200 || r.JSON(t)["queued"] != 0.0 {
		t.Fatalf("second recovery: %d %s", r.Status, r.Body)
	}
	if n := runOnce(t, f); n != 0 {
		t.Fatalf("%d more deliveries", n)
	}
	_ = watch
}
