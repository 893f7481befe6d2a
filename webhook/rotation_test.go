package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
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
	want := ams.FormatTime(f.Clock.Now().Add(24 * time.Hour))
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

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"600", 10 * time.Minute, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{"99999999999999999999999", 1<<63 - 1, true}, // too large to represent: the longest
		{"9223372036854775807", 1<<63 - 1, true},
		{"Tue, 24 Nov 2026 12:30:00 GMT", 30 * time.Minute, true},  // IMF-fixdate
		{"Tuesday, 24-Nov-26 12:05:00 GMT", 5 * time.Minute, true}, // RFC 850
		{"Tue Nov 24 12:01:00 2026", time.Minute, true},            // asctime
		{"Tue, 24 Nov 2026 11:00:00 GMT", 0, false},                // in the past: negative
		{"-5", 0, false},
		{"1.5", 0, false},
		{"+5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
		{"2026-11-24T12:30:00Z", 0, false},
	}
	for _, c := range cases {
		got, ok := webhook.ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestRetryDelayBounds(t *testing.T) {
	s := webhook.DefaultSchedule // 0, 1m, 5m, 30m, 2h
	cases := []struct {
		attempt  int
		ra, want time.Duration
	}{
		{1, 10 * time.Minute, 10 * time.Minute},           // longer than 1m: honoured
		{1, 10 * time.Second, time.Minute},                // never sooner than the schedule
		{1, 1<<63 - 1, 2*time.Hour + 36*time.Minute},      // capped: 1m+5m+30m+2h remain
		{3, 24 * time.Hour, 2*time.Hour + 30*time.Minute}, // 30m+2h remain
		{4, 3 * time.Hour, 2 * time.Hour},                 // the last delay: nothing to stretch
		{2, 20 * time.Minute, 20 * time.Minute},
	}
	for _, c := range cases {
		if got := webhook.RetryDelay(s, c.attempt, c.ra); got != c.want {
			t.Errorf("RetryDelay(attempt %d, %v) = %v, want %v", c.attempt, c.ra, got, c.want)
		}
	}
}

// TestRetryAfterBackPressure: a receiver answering 503 with Retry-After
// gets its next attempt no sooner than asked (600 s: at +10 min instead
// of +1 min), and a huge value is capped at the rest of the schedule.
func TestRetryAfterBackPressure(t *testing.T) {
	for _, c := range []struct {
		name, retryAfter string
		status           int
		next             time.Duration
	}{
		{"503 600 s", "600", http.StatusServiceUnavailable, 10 * time.Minute},
		{"429 huge", "999999999999", http.StatusTooManyRequests, 2*time.Hour + 36*time.Minute},
		{"503 malformed", "later", http.StatusServiceUnavailable, time.Minute},
		{"500 ignored", "600", http.StatusInternalServerError, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := amstest.New(t)
			var mu sync.Mutex
			var at []time.Time
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				at = append(at, f.Clock.Now())
				mu.Unlock()
				w.Header().Set("Retry-After", c.retryAfter)
				w.WriteHeader(c.status)
			}))
			t.Cleanup(srv.Close)
			wh := createWebhook(t, f, srv.URL, "message.created")
			if r := f.Do("POST", "/v1/webhooks/"+wh+"/ping", f.Key, ""); r.Status != 202 {
				t.Fatalf("ping: %d", r.Status)
			}
			start := f.Clock.Now()
			if n := runOnce(t, f); n != 1 {
				t.Fatalf("first attempt: %d", n)
			}
			f.Clock.Add(c.next - time.Second)
			if n := runOnce(t, f); n != 0 {
				t.Fatalf("attempted %v after the first, before %v", c.next-time.Second, c.next)
			}
			f.Clock.Add(time.Second)
			if n := runOnce(t, f); n != 1 {
				t.Fatalf("no attempt at +%v", c.next)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(at) != 2 || !at[1].Equal(start.Add(c.next)) {
				t.Fatalf("attempts at %v", at)
			}
			l := f.Do("GET", "/v1/webhooks/"+wh+"/deliveries", f.Key, "").JSON(t)
			last := l["data"].([]any)[1].(map[string]any)["error"].(string)
			if honoured := c.next > time.Minute; honoured != strings.Contains(last, "Retry-After") {
				t.Fatalf("delivery error %q", last)
			}
		})
	}
}
