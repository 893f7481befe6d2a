package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/amstest"
	"github.com/amsdev/ams/webhook"
)

// standardSig is the Standard Webhooks signature of a captured delivery
// with secret (not whsec_: the key is the secret's bytes).
func standardSig(secret string, g received) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(g.header.Get("Webhook-Id") + "." + g.header.Get("Webhook-Timestamp") + "."))
	mac.Write(g.body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestStandardSignaturesFormat(t *testing.T) {
	body := []byte(`{"id":"evt_1"}`)
	one := webhook.StandardSignatures([]string{"new-secret-0123456"}, "evt_1", 1700000000, body)
	if one != webhook.StandardSignature("new-secret-0123456", "evt_1", 1700000000, body) {
		t.Fatalf("one secret: %q", one)
	}
	two := webhook.StandardSignatures([]string{"new-secret-0123456", "old-secret-0123456"}, "evt_1", 1700000000, body)
	parts := strings.Split(two, " ")
	if len(parts) != 2 || parts[0] != one || parts[1] != webhook.StandardSignature("old-secret-0123456", "evt_1", 1700000000, body) ||
		strings.Count(two, "v1,") != 2 {
		t.Fatalf("two secrets, newest first, space-separated: %q", two)
	}
	j := &ams.Job{Secret: "new", PreviousSecret: "old", PreviousSecretExpiresAt: time.Unix(100, 0)}
	if s := j.Secrets(time.Unix(99, 0)); len(s) != 2 || s[0] != "new" || s[1] != "old" {
		t.Fatalf("within the overlap: %q", s)
	}
	if s := j.Secrets(time.Unix(100, 0)); len(s) != 1 || s[0] != "new" {
		t.Fatalf("at its end: %q", s)
	}
}

// TestSecretRotationOverlap replaces a webhook's secret while deliveries
// wait for their retry: the retries carry a webhook-signature per secret
// (new first) and X-Service-Signature with the new secret only; 24 h later
// (injected clock) only the new secret signs.
func TestSecretRotationOverlap(t *testing.T) {
	f := amstest.New(t)
	rc := newReceiver(t, f.Clock.Now)
	rc.setStatus(500)
	wh := createWebhook(t, f, rc.URL, "message.created")
	sendMessage(t, f, "before the rotation")
	if n := runOnce(t, f); n != 2 {
		t.Fatalf("first attempts: %d", n)
	}
	for _, g := range rc.requests() {
		if g.header.Get("Webhook-Signature") != standardSig(secret, g) {
			t.Fatalf("before the rotation: %q", g.header.Get("Webhook-Signature"))
		}
	}
	const newSecret = "the-new-signing-secret"
	r := f.Do("PATCH", "/v1/webhooks/"+wh, f.Key, fmt.Sprintf(`{"secret":%q}`, newSecret))
	want := f.Clock.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339Nano)
	if r.Status != 200 || r.JSON(t)["previous_secret_expires_at"] != want {
		t.Fatalf("rotate: %d %s (want expiry %s)", r.Status, r.Body, want)
	}
	rc.setStatus(200)
	f.Clock.Add(time.Minute)
	if n := runOnce(t, f); n != 2 {
		t.Fatalf("retries: %d", n)
	}
	for _, g := range rc.requests()[2:] {
		if got, want := g.header.Get("Webhook-Signature"), standardSig(newSecret, g)+" "+standardSig(secret, g); got != want {
			t.Fatalf("during the overlap webhook-signature %q, want %q", got, want)
		}
		if g.header.Get("X-Service-Signature") != webhook.Signature(newSecret, g.body) {
			t.Fatalf("X-Service-Signature is not the new secret's alone: %q", g.header.Get("X-Service-Signature"))
		}
	}
	// Just before the end of the overlap both still sign; at its end only
	// the new secret does, and the webhook no longer shows an expiry.
	f.Clock.Add(24*time.Hour - time.Minute - time.Second)
	sendMessage(t, f, "last second")
	runOnce(t, f)
	f.Clock.Add(time.Second)
	if g := f.Do("GET", "/v1/webhooks/"+wh, f.Key, "").JSON(t); g["previous_secret_expires_at"] != nil {
		t.Fatalf("after the overlap: %v", g)
	}
	sendMessage(t, f, "after the overlap")
	runOnce(t, f)
	got := rc.requests()
	if len(got) != 8 {
		t.Fatalf("%d requests", len(got))
	}
	for _, g := range got[4:6] {
		if g.header.Get("Webhook-Signature") != standardSig(newSecret, g)+" "+standardSig(secret, g) {
			t.Fatalf("1 s before the end: %q", g.header.Get("Webhook-Signature"))
		}
	}
	for _, g := range got[6:] {
		if g.header.Get("Webhook-Signature") != standardSig(newSecret, g) || g.header.Get("X-Service-Signature") != webhook.Signature(newSecret, g.body) {
			t.Fatalf("after the overlap: %v", g.header)
		}
	}
}
