package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/smtptest"
	"github.com/amsdev/ams/mail"
)

// TestThinFilteredDelivery: a webhook filtered on the fixture's assistant
// with thin payloads receives its events, signed, with the ids only; one
// filtered on another assistant receives nothing.
func TestThinFilteredDelivery(t *testing.T) {
	f := amstest.New(t)
	rc, other := newReceiver(t, f.Clock.Now), newReceiver(t, f.Clock.Now)
	create := func(url, filter, payload string) {
		t.Helper()
		r := f.Do("POST", "/v1/webhooks", f.Key, fmt.Sprintf(`{"url":%q,"events":["message.created"],"secret":%q,"filter":%s,"payload":%q}`,
			url, secret, filter, payload))
		if r.Status != 201 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
	}
	create(rc.URL, fmt.Sprintf(`{"assistant_id":%q}`, f.Assistant.ID), "thin")
	create(other.URL, fmt.Sprintf(`{"assistant_id":%q}`, ams.NewID(ams.PrefixAssistant)), "full")
	reply := sendMessage(t, f, "Hello, a secret recipe")
	if n := runOnce(t, f); n != 2 {
		t.Fatalf("delivered %d, want 2", n)
	}
	got := rc.requests()
	if len(got) != 2 || len(other.requests()) != 0 {
		t.Fatalf("thin receiver got %d, filtered-out one %d", len(got), len(other.requests()))
	}
	for _, g := range got {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(g.body)
		if g.header.Get("X-Service-Signature") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			t.Fatal("thin body not signed")
		}
		if strings.Contains(string(g.body), "secret recipe") || strings.Contains(string(g.body), "content") {
			t.Fatalf("thin body carries content: %s", g.body)
		}
		var env struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(g.body, &env); err != nil {
			t.Fatal(err)
		}
		if env.Type != ams.EventMessageCreated || len(env.Data) != 3 || env.Data["assistant_id"] != f.Assistant.ID ||
			env.Data["conversation_id"] != reply["conversation_id"] || env.Data["message_id"] == nil {
			t.Fatalf("thin data %v", env.Data)
		}
	}
}

// TestDegradedAndRecovered follows a receiver that fails three times in a
// row (one webhook.degraded, one e-mail through a real SMTP server, the
// webhook still active), then answers again (webhook.recovered, another
// e-mail), on an injected clock; a second webhook subscribed to both
// types receives them.
func TestDegradedAndRecovered(t *testing.T) {
	f := amstest.New(t)
	rc, watch := newReceiver(t, f.Clock.Now), newReceiver(t, f.Clock.Now)
	rc.setStatus(503)
	smtpd := smtptest.Start(t)
	sender, err := mail.NewSMTP(smtpd.URL(), mail.DefaultFrom)
	if err != nil {
		t.Fatal(err)
	}
	mails := &mail.Worker{Queue: f.Store, Sender: sender, Clock: f.Clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	wh := createWebhook(t, f, rc.URL, "message.created")
	createWebhook(t, f, watch.URL, ams.EventWebhookDegraded, ams.EventWebhookRecovered)
	sendMessage(t, f, "one")
	if n := runOnce(t, f); n != 2 {
		t.Fatalf("first round: %d", n)
	}
	if len(watch.requests()) != 0 {
		t.Fatal("a warning after two failures")
	}
	sendMessage(t, f, "two")
	runOnce(t, f) // the third and fourth failures, and the warning to the watcher
	if w := f.Do("GET", "/v1/webhooks/"+wh, f.Key, "").JSON(t); w["active"] != true || w["status"] != "active" {
		t.Fatalf("degraded webhook: %v", w)
	}
	seen := watch.requests()
	if len(seen) != 1 || seen[0].header.Get("X-Service-Event") != ams.EventWebhookDegraded {
		t.Fatalf("watcher got %d", len(seen))
	}
	var env map[string]any
	json.Unmarshal(seen[0].body, &env)
	if d := env["data"].(map[string]any); d["webhook_id"] != wh || d["url"] != rc.URL || d["status_code"] != 503.0 ||
		d["error"] != "the receiver answered 503" || d["failed_attempts"] != 3.0 {
		t.Fatalf("webhook.degraded data %v", d)
	}
	for range 2 {
		if _, err := mails.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	msgs := smtpd.Messages()
	if len(msgs) != 1 || msgs[0].To[0] != f.User.Email || !strings.Contains(msgs[0].Parsed(t).Header.Get("Subject"), "degraded") ||
		!strings.Contains(msgs[0].Text(t), wh) || !strings.Contains(msgs[0].Text(t), "deliveries?success=false") {
		t.Fatalf("e-mails: %+v", msgs)
	}
	// The receiver answers again: the retries a minute later succeed.
	rc.setStatus(200)
	f.Clock.Add(time.Minute)
	runOnce(t, f)
	seen = watch.requests()
	if len(seen) != 2 || seen[1].header.Get("X-Service-Event") != ams.EventWebhookRecovered {
		t.Fatalf("watcher got %d", len(seen))
	}
	json.Unmarshal(seen[1].body, &env)
	if d := env["data"].(map[string]any); d["status_code"] != 200.0 || d["error"] != nil || d["failed_attempts"] != 4.0 {
		t.Fatalf("webhook.recovered data %v", d)
	}
	for range 2 {
		mails.RunOnce(context.Background())
	}
	if msgs = smtpd.Messages(); len(msgs) != 2 || !strings.Contains(msgs[1].Parsed(t).Header.Get("Subject"), "again") {
		t.Fatalf("e-mails: %d", len(msgs))
	}
	// Both are in the event log, and the webhook's summary counts the
	// attempts: 4 failed, then their retries succeeded.
	w := f.Do("GET", "/v1/webhooks/"+wh, f.Key, "").JSON(t)
	sum := w["summary"].(map[string]any)
	if sum["attempts"] != 8.0 || sum["succeeded"] != 4.0 || sum["success_rate"] != 0.5 || sum["window_hours"] != 24.0 {
		t.Fatalf("summary %v", sum)
	}
}
