package webhook_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/amsdev/ams/webhook"
)

// The shared signature test vectors: one file read by this test, the Python
// SDK's and the TypeScript SDK's. The expected values come from this
// package's signers; `go test ./webhook -run TestSignatureVectors -update`
// rewrites the file from the cases below (the check then runs on the new
// file). sdk/testdata/README.md describes the format.

var updateVectors = flag.Bool("update", false, "rewrite sdk/testdata/webhook-signatures.json")

var vectorsPath = filepath.Join("..", "sdk", "testdata", "webhook-signatures.json")

type vectorFile struct {
	Description      string   `json:"description"`
	Version          int      `json:"version"`
	ToleranceSeconds int64    `json:"tolerance_seconds"`
	Cases            []vector `json:"cases"`
}

type vector struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Inputs of the receiver.
	Secret string `json:"secret"`
	Body   string `json:"body"`
	Now    int64  `json:"now"`
	// The headers as received.
	XServiceSignature string `json:"x_service_signature"`
	WebhookID         string `json:"webhook_id"`
	WebhookTimestamp  string `json:"webhook_timestamp"`
	WebhookSignature  string `json:"webhook_signature"`
	// Expected verdicts.
	ValidXServiceSignature bool `json:"valid_x_service_signature"`
	ValidStandard          bool `json:"valid_standard"`
	// Set when the headers are exactly what the service sends for these
	// inputs: a signer must reproduce them byte for byte.
	Signed bool `json:"signed"`
}

const (
	vecTolerance = 300
	vecNow       = 1735689600 // 2025-01-01T00:00:00Z
	vecID        = "evt_01JGF6ZQ3N8V2W4X5Y6Z7A8B9C"
	vecPlain     = "s3cr3t-webhook-signing-key"
	vecWhsec     = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecWhsec2    = "whsec_c2VjcmV0LXNpZ25pbmcta2V5LTEyMzQ1Ng=="
	vecBody      = `{"id":"evt_01JGF6ZQ3N8V2W4X5Y6Z7A8B9C","object":"event","type":"message.created","created_at":"2025-01-01T00:00:00Z","data":{"message":{"id":"msg_01JGF6ZQ3N8V2W4X5Y6Z7A8B9D","object":"message","role":"user","content":"Hello, assistant!"}}}`
)

// buildVectors computes every case with the service's signers.
func buildVectors() vectorFile {
	ts := strconv.FormatInt(vecNow, 10)
	sig := func(secret, body string) string { return webhook.Signature(secret, []byte(body)) }
	std := func(secret, id string, t int64, body string) string {
		return webhook.StandardSignature(secret, id, t, []byte(body))
	}
	// signed returns a valid case: the headers the service sends.
	signed := func(name, desc, secret, body string, t int64) vector {
		return vector{
			Name: name, Description: desc, Secret: secret, Body: body, Now: vecNow,
			XServiceSignature: sig(secret, body),
			WebhookID:         vecID, WebhookTimestamp: strconv.FormatInt(t, 10),
			WebhookSignature:       std(secret, vecID, t, body),
			ValidXServiceSignature: true, ValidStandard: true, Signed: true,
		}
	}
	var cs []vector
	add := func(v vector) { cs = append(cs, v) }

	// Valid deliveries.
	add(signed("plain secret", "A plain secret: both HMAC keys are the secret's UTF-8 bytes.", vecPlain, vecBody, vecNow))
	add(signed("whsec secret", "A whsec_<base64> secret: the Standard Webhooks key is the base64-decoded part; the X-Service-Signature key is still the whole secret string, prefix included.", vecWhsec, vecBody, vecNow))
	add(signed("whsec secret with padding", "A whsec_ secret whose base64 has padding.", vecWhsec2, vecBody, vecNow))
	add(signed("whsec secret with invalid base64", "A secret that starts with whsec_ but whose rest is not valid standard base64: the service falls back to the secret's UTF-8 bytes as the key.", "whsec_not*base64!", vecBody, vecNow))
	add(signed("empty body", "An empty body is signed like any other.", vecPlain, "", vecNow))
	add(signed("unicode body", "Non-ASCII characters: the HMAC covers the UTF-8 bytes of the body.", vecPlain, `{"content":"Grüße, 世界 — ✓ 🎉","note":"tab\tnewline\n"}`, vecNow))
	add(signed("body with whitespace", "Whitespace and key order matter: the signature covers the exact bytes, never a re-serialization.", vecPlain, "{ \"b\": 1,\n  \"a\": 2 }\n", vecNow))
	add(signed("timestamp at the past edge", "now - timestamp equals the tolerance (300 s): still valid.", vecPlain, vecBody, vecNow-vecTolerance))
	add(signed("timestamp at the future edge", "timestamp - now equals the tolerance (300 s): still valid.", vecPlain, vecBody, vecNow+vecTolerance))

	// Several signatures in webhook-signature, space-separated (secret rotation).
	v := signed("multiple signatures, second valid", "webhook-signature holds several space-separated signatures; one valid is enough. Non-v1 entries are ignored.", vecWhsec, vecBody, vecNow)
	v.WebhookSignature = std(vecWhsec2, vecID, vecNow, vecBody) + " v1a,c29tZS1hc3ltbWV0cmljLXNpZ25hdHVyZQ== " + v.WebhookSignature
	v.Signed = false
	add(v)
	v = signed("multiple signatures, first valid", "The valid signature first, then one by another secret.", vecWhsec, vecBody, vecNow)
	v.WebhookSignature += " " + std(vecWhsec2, vecID, vecNow, vecBody)
	v.Signed = false
	add(v)

	// Invalid deliveries.
	v = signed("tampered body", "The body was changed after signing (one character): both signatures fail.", vecPlain, vecBody, vecNow)
	v.Body = strings.Replace(vecBody, "Hello", "Hallo", 1)
	v.ValidXServiceSignature, v.ValidStandard, v.Signed = false, false, false
	add(v)
	v = signed("body with an added trailing newline", "A byte appended to the body: both signatures fail.", vecPlain, vecBody, vecNow)
	v.Body = vecBody + "\n"
	v.ValidXServiceSignature, v.ValidStandard, v.Signed = false, false, false
	add(v)
	v = signed("wrong secret", "Signed with another secret than the receiver's.", vecWhsec2, vecBody, vecNow)
	v.Secret = vecWhsec
	v.ValidXServiceSignature, v.ValidStandard, v.Signed = false, false, false
	add(v)
	v = signed("whsec secret used raw", "The receiver's key for the Standard Webhooks signature must be the decoded secret: a webhook-signature computed with the raw whsec_ string bytes as the key fails.", vecWhsec, vecBody, vecNow)
	m := hmac.New(sha256.New, []byte(vecWhsec))
	m.Write([]byte(vecID + "." + ts + "." + vecBody))
	v.WebhookSignature = "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	v.ValidStandard, v.Signed = false, false
	add(v)
	v = signed("timestamp too old", "now - timestamp is 301 s, over the tolerance: the Standard Webhooks check fails (X-Service-Signature has no timestamp and is valid).", vecPlain, vecBody, vecNow-vecTolerance-1)
	v.ValidStandard = false
	add(v)
	v = signed("timestamp too new", "timestamp - now is 301 s, over the tolerance: invalid.", vecPlain, vecBody, vecNow+vecTolerance+1)
	v.ValidStandard = false
	add(v)
	v = signed("timestamp one hour old", "A replay of an old delivery: invalid.", vecPlain, vecBody, vecNow-3600)
	v.ValidStandard = false
	add(v)
	v = signed("changed timestamp", "The webhook-timestamp header was changed after signing (within tolerance): the signature covers it, so it fails.", vecPlain, vecBody, vecNow)
	v.WebhookTimestamp = strconv.FormatInt(vecNow-10, 10)
	v.ValidStandard, v.Signed = false, false
	add(v)
	v = signed("changed webhook-id", "The webhook-id header was changed after signing: invalid.", vecPlain, vecBody, vecNow)
	v.WebhookID = "evt_01JGF6ZQ3N8V2W4X5Y6Z7A8B9X"
	v.ValidStandard, v.Signed = false, false
	add(v)

	malformed := func(name, desc string, edit func(*vector)) {
		v := signed(name, desc, vecPlain, vecBody, vecNow)
		v.Signed = false
		edit(&v)
		add(v)
	}
	good := sig(vecPlain, vecBody)
	goodStd := std(vecPlain, vecID, vecNow, vecBody)
	malformed("x-service-signature without prefix", "The hex digest without \"sha256=\": malformed, invalid.", func(v *vector) {
		v.XServiceSignature = strings.TrimPrefix(good, "sha256=")
		v.ValidXServiceSignature = false
	})
	malformed("x-service-signature with another algorithm", "\"sha1=\" and the right hex: invalid.", func(v *vector) {
		v.XServiceSignature = "sha1=" + strings.TrimPrefix(good, "sha256=")
		v.ValidXServiceSignature = false
	})
	malformed("x-service-signature empty", "An empty (missing) header: invalid.", func(v *vector) {
		v.XServiceSignature = ""
		v.ValidXServiceSignature = false
	})
	malformed("x-service-signature truncated", "The hex digest cut short by one character: invalid.", func(v *vector) {
		v.XServiceSignature = good[:len(good)-1]
		v.ValidXServiceSignature = false
	})
	malformed("webhook-signature without version", "The base64 digest without \"v1,\": malformed, invalid.", func(v *vector) {
		v.WebhookSignature = strings.TrimPrefix(goodStd, "v1,")
		v.ValidStandard = false
	})
	malformed("webhook-signature with another version", "\"v2,\" and the right digest: unknown versions are ignored, so no signature is valid.", func(v *vector) {
		v.WebhookSignature = "v2," + strings.TrimPrefix(goodStd, "v1,")
		v.ValidStandard = false
	})
	malformed("webhook-signature empty", "An empty (missing) webhook-signature: invalid.", func(v *vector) {
		v.WebhookSignature = ""
		v.ValidStandard = false
	})
	malformed("webhook-signature garbage", "Not a signature list at all: invalid, and the verifier does not crash.", func(v *vector) {
		v.WebhookSignature = "v1,,,, ,v1 garbage=="
		v.ValidStandard = false
	})
	malformed("webhook-timestamp not a number", "A non-numeric webhook-timestamp: invalid.", func(v *vector) {
		v.WebhookTimestamp = "yesterday"
		v.ValidStandard = false
	})
	malformed("webhook-timestamp empty", "A missing webhook-timestamp: invalid.", func(v *vector) {
		v.WebhookTimestamp = ""
		v.ValidStandard = false
	})
	malformed("webhook-id empty", "A missing webhook-id: invalid.", func(v *vector) {
		v.WebhookID = ""
		v.ValidStandard = false
	})

	return vectorFile{
		Description: "Webhook signature test vectors shared by the Go service tests and the Python and TypeScript SDKs. See README.md in this folder.",
		Version:     1, ToleranceSeconds: vecTolerance, Cases: cs,
	}
}

// TestSignatureVectors checks every shared vector against the service's
// signers (signed cases) and a reference verifier (every case).
func TestSignatureVectors(t *testing.T) {
	if *updateVectors {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(buildVectors()); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsPath, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Version != 1 || f.ToleranceSeconds != vecTolerance || len(f.Cases) < 20 {
		t.Fatalf("unexpected file: version %d, tolerance %d, %d cases", f.Version, f.ToleranceSeconds, len(f.Cases))
	}
	// The file is what the cases above produce (run with -update after
	// changing them).
	want := buildVectors()
	if len(want.Cases) != len(f.Cases) {
		t.Errorf("file has %d cases, the generator %d: run go test ./webhook -run TestSignatureVectors -update", len(f.Cases), len(want.Cases))
	}
	names := map[string]bool{}
	for i, c := range f.Cases {
		if names[c.Name] {
			t.Errorf("duplicate case name %q", c.Name)
		}
		names[c.Name] = true
		if i < len(want.Cases) && want.Cases[i] != c {
			t.Errorf("case %q differs from the generator: run with -update", c.Name)
		}
		body := []byte(c.Body)
		if c.Signed {
			if got := webhook.Signature(c.Secret, body); got != c.XServiceSignature {
				t.Errorf("%s: Signature = %s, file %s", c.Name, got, c.XServiceSignature)
			}
			ts, err := strconv.ParseInt(c.WebhookTimestamp, 10, 64)
			if err != nil {
				t.Errorf("%s: signed case with timestamp %q", c.Name, c.WebhookTimestamp)
			}
			if got := webhook.StandardSignature(c.Secret, c.WebhookID, ts, body); got != c.WebhookSignature {
				t.Errorf("%s: StandardSignature = %s, file %s", c.Name, got, c.WebhookSignature)
			}
		}
		if got := verifySignature(c.Secret, body, c.XServiceSignature); got != c.ValidXServiceSignature {
			t.Errorf("%s: X-Service-Signature verified %v, file says %v", c.Name, got, c.ValidXServiceSignature)
		}
		if got := verifyStandard(c.Secret, body, c.WebhookID, c.WebhookTimestamp, c.WebhookSignature, c.Now, f.ToleranceSeconds); got != c.ValidStandard {
			t.Errorf("%s: Standard Webhooks verified %v, file says %v", c.Name, got, c.ValidStandard)
		}
	}
	for _, n := range []string{"plain secret", "whsec secret", "tampered body", "wrong secret", "timestamp too old", "multiple signatures, second valid", "webhook-signature garbage"} {
		if !names[n] {
			t.Errorf("missing case %q", n)
		}
	}
}

// verifySignature is a receiver's check of X-Service-Signature.
func verifySignature(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(header), []byte(webhook.Signature(secret, body)))
}

// verifyStandard is a receiver's check of the Standard Webhooks headers.
func verifyStandard(secret string, body []byte, id, timestamp, header string, now, tolerance int64) bool {
	if id == "" || timestamp == "" || header == "" {
		return false
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || ts < now-tolerance || ts > now+tolerance {
		return false
	}
	want := webhook.StandardSignature(secret, id, ts, body)
	ok := false
	for _, s := range strings.Split(header, " ") {
		if v, _, found := strings.Cut(s, ","); !found || v != "v1" {
			continue
		}
		if hmac.Equal([]byte(s), []byte(want)) {
			ok = true
		}
	}
	return ok
}
