package webhook_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/amsdev/ams/client/webhook"
)

// The shared signature test vectors, also read by the service's tests
// (webhook/vectors_test.go) and the Python and TypeScript SDKs; see
// sdk/testdata/README.md.
type vectorFile struct {
	Version          int      `json:"version"`
	ToleranceSeconds int64    `json:"tolerance_seconds"`
	Cases            []vector `json:"cases"`
}

type vector struct {
	Name                   string `json:"name"`
	Secret                 string `json:"secret"`
	Body                   string `json:"body"`
	Now                    int64  `json:"now"`
	XServiceSignature      string `json:"x_service_signature"`
	WebhookID              string `json:"webhook_id"`
	WebhookTimestamp       string `json:"webhook_timestamp"`
	WebhookSignature       string `json:"webhook_signature"`
	ValidXServiceSignature bool   `json:"valid_x_service_signature"`
	ValidStandard          bool   `json:"valid_standard"`
	Signed                 bool   `json:"signed"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "sdk", "testdata", "webhook-signatures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Version != 1 || len(f.Cases) < 20 {
		t.Fatalf("unexpected vectors: version %d, %d cases", f.Version, len(f.Cases))
	}
	if time.Duration(f.ToleranceSeconds)*time.Second != webhook.DefaultTolerance {
		t.Fatalf("the vectors' tolerance is %d s, DefaultTolerance %v", f.ToleranceSeconds, webhook.DefaultTolerance)
	}
	return f
}

// headers are the case's headers as a receiver's net/http server gets
// them ("" meaning absent): the names canonicalized, whatever case the
// sender wrote.
func headers(c vector) http.Header {
	h := http.Header{}
	for name, v := range map[string]string{
		"x-service-signature": c.XServiceSignature,
		"webhook-id":          c.WebhookID,
		"webhook-timestamp":   c.WebhookTimestamp,
		"webhook-signature":   c.WebhookSignature,
	} {
		if v != "" {
			h.Set(name, v)
		}
	}
	return h
}

func TestSignersReproduceSignedVectors(t *testing.T) {
	n := 0
	for _, c := range loadVectors(t).Cases {
		if !c.Signed {
			continue
		}
		n++
		body := []byte(c.Body)
		if got := webhook.Signature(c.Secret, body); got != c.XServiceSignature {
			t.Errorf("%s: Signature = %s, want %s", c.Name, got, c.XServiceSignature)
		}
		ts, err := strconv.ParseInt(c.WebhookTimestamp, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if got := webhook.StandardSignature(c.Secret, c.WebhookID, ts, body); got != c.WebhookSignature {
			t.Errorf("%s: StandardSignature = %s, want %s", c.Name, got, c.WebhookSignature)
		}
	}
	if n < 5 {
		t.Errorf("only %d signed cases", n)
	}
}

func TestVerifyVectors(t *testing.T) {
	f := loadVectors(t)
	for _, c := range f.Cases {
		body := []byte(c.Body)
		clock := webhook.WithClock(func() time.Time { return time.Unix(c.Now, 0) })
		tol := webhook.WithTolerance(time.Duration(f.ToleranceSeconds) * time.Second)

		err := webhook.VerifySignature(body, c.XServiceSignature, c.Secret)
		if (err == nil) != c.ValidXServiceSignature {
			t.Errorf("%s: VerifySignature = %v, want valid %v", c.Name, err, c.ValidXServiceSignature)
		}
		if err != nil && !errors.Is(err, webhook.ErrVerification) {
			t.Errorf("%s: %v does not wrap ErrVerification", c.Name, err)
		}

		h := headers(c)
		err = webhook.VerifyStandard(body, h, c.Secret, clock, tol)
		if (err == nil) != c.ValidStandard {
			t.Errorf("%s: VerifyStandard = %v, want valid %v", c.Name, err, c.ValidStandard)
		}
		if err != nil && !errors.Is(err, webhook.ErrVerification) {
			t.Errorf("%s: %v does not wrap ErrVerification", c.Name, err)
		}

		// Verify takes the Standard Webhooks verdict when webhook-signature
		// is present, else X-Service-Signature's.
		want := c.ValidStandard
		if c.WebhookSignature == "" {
			want = c.ValidXServiceSignature
		}
		if err := webhook.Verify(body, h, c.Secret, clock); (err == nil) != want {
			t.Errorf("%s: Verify = %v, want valid %v", c.Name, err, want)
		}
	}
}

// TestVerifyUsesTheClock checks the tolerance against the injected clock
// and the real one: a delivery signed now is accepted now, refused an hour
// later, and a narrower tolerance moves the edge.
func TestVerifyUsesTheClock(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"id":"evt_1","object":"event","type":"message.created","created_at":"2026-11-21T10:00:00Z","data":{}}`)
	now := time.Now()
	h := http.Header{}
	h.Set("webhook-id", "evt_1")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", "v1,d3Jvbmc= "+webhook.StandardSignature(secret, "evt_1", now.Unix(), body))

	if err := webhook.VerifyStandard(body, h, secret); err != nil {
		t.Errorf("signed now, verified with time.Now: %v", err)
	}
	later := func() time.Time { return now.Add(time.Hour) }
	if err := webhook.VerifyStandard(body, h, secret, webhook.WithClock(later)); !errors.Is(err, webhook.ErrVerification) {
		t.Errorf("an hour later: %v, want ErrVerification", err)
	}
	if err := webhook.VerifyStandard(body, h, secret, webhook.WithClock(later), webhook.WithTolerance(2*time.Hour)); err != nil {
		t.Errorf("an hour later with a 2 h tolerance: %v", err)
	}
	soon := func() time.Time { return now.Add(61 * time.Second) }
	if err := webhook.VerifyStandard(body, h, secret, webhook.WithClock(soon), webhook.WithTolerance(time.Minute)); err == nil {
		t.Error("61 s later with a 1 min tolerance: accepted")
	}
	if err := webhook.VerifyStandard(body, h, ""); err == nil {
		t.Error("an empty secret verified a delivery")
	}

	ev, err := webhook.ConstructEvent(body, h, secret, webhook.WithClock(func() time.Time { return now }))
	if err != nil || ev.ID != "evt_1" || ev.Type != "message.created" {
		t.Fatalf("ConstructEvent: %+v %v", ev, err)
	}
	// Without the Standard Webhooks headers, X-Service-Signature decides.
	x := http.Header{}
	x.Set("X-Service-Signature", webhook.Signature(secret, body))
	if ev, err := webhook.ConstructEvent(body, x, secret); err != nil || ev.ID != "evt_1" {
		t.Fatalf("ConstructEvent with X-Service-Signature: %+v %v", ev, err)
	}
	if _, err := webhook.ConstructEvent(append(body, ' '), x, secret); !errors.Is(err, webhook.ErrVerification) {
		t.Errorf("ConstructEvent of a changed body: %v", err)
	}
	notEvent := []byte(`[1,2]`)
	x.Set("X-Service-Signature", webhook.Signature(secret, notEvent))
	if _, err := webhook.ConstructEvent(notEvent, x, secret); !errors.Is(err, webhook.ErrVerification) {
		t.Errorf("ConstructEvent of a signed non-event: %v", err)
	}
}
