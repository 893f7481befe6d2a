package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams/client/webhook"
	service "github.com/amsdev/ams/webhook"
)

// The shared secret-rotation vectors (sdk/testdata/webhook-rotation.json):
// whole deliveries, headers as the service sends them before, during and
// after a secret rotation, with the verdict every SDK's delivery check
// (webhook.ConstructEvent here, ams.construct_event in Python,
// verifyWebhook in TypeScript) and the public standardwebhooks library
// must reach. The headers come from the service's own signers;
// `go test ./client/webhook -run TestRotationVectors -update` rewrites the
// file from the cases below. sdk/testdata/README.md describes the format.

var updateRotation = flag.Bool("update", false, "rewrite sdk/testdata/webhook-rotation.json")

var rotationPath = filepath.Join("..", "..", "sdk", "testdata", "webhook-rotation.json")

type rotationFile struct {
	Description      string           `json:"description"`
	Version          int              `json:"version"`
	ToleranceSeconds int64            `json:"tolerance_seconds"`
	OldSecret        string           `json:"old_secret"`
	NewSecret        string           `json:"new_secret"`
	Cases            []rotationVector `json:"cases"`
}

type rotationVector struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Secret is the receiver's.
	Secret string `json:"secret"`
	Body   string `json:"body"`
	Now    int64  `json:"now"`
	// Headers are the delivery's, named as the service sends them; a
	// header not listed is absent.
	Headers map[string]string `json:"headers"`
	// Valid is the verdict of each SDK's delivery check.
	Valid bool `json:"valid"`
	// Standardwebhooks is the verdict of the public standardwebhooks
	// library, which reads the Standard Webhooks headers only.
	Standardwebhooks bool `json:"standardwebhooks"`
}

const (
	rotTolerance = 300
	rotNow       = 1767225600 // 2026-01-01T00:00:00Z
	rotID        = "evt_01KDX3B8W2M4N6P8Q0R2S4T6V8"
	rotOld       = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rotNew       = "whsec_c2VjcmV0LXNpZ25pbmcta2V5LTEyMzQ1Ng=="
	rotOther     = "whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldA=="
	rotBody      = `{"id":"evt_01KDX3B8W2M4N6P8Q0R2S4T6V8","object":"event","type":"message.created","created_at":"2026-01-01T00:00:00Z","data":{"message_id":"msg_01KDX3B8W2M4N6P8Q0R2S4T6V9","direction":"outbound","content":"Rotated."}}`
)

// buildRotation computes every case with the service's signers: a
// delivery signs X-Service-Signature with the newest secret only, and
// webhook-signature with every secret still signing, newest first.
func buildRotation() rotationFile {
	deliver := func(secrets []string, ts int64) map[string]string {
		return map[string]string{
			"X-Service-Signature": service.Signature(secrets[0], []byte(rotBody)),
			"webhook-id":          rotID,
			"webhook-timestamp":   strconv.FormatInt(ts, 10),
			"webhook-signature":   service.StandardSignatures(secrets, rotID, ts, []byte(rotBody)),
		}
	}
	before := deliver([]string{rotOld}, rotNow)
	during := deliver([]string{rotNew, rotOld}, rotNow)
	after := deliver([]string{rotNew}, rotNow)
	without := func(h map[string]string, names ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for _, n := range names {
			delete(out, n)
		}
		return out
	}
	var cs []rotationVector
	add := func(name, desc, secret string, h map[string]string, now int64, valid bool) {
		cs = append(cs, rotationVector{
			Name: name, Description: desc, Secret: secret, Body: rotBody, Now: now, Headers: h,
			Valid: valid, Standardwebhooks: valid && h["webhook-signature"] != "",
		})
	}
	add("before the rotation, old secret", "Only the old secret signs; the receiver holds it.", rotOld, before, rotNow, true)
	add("before the rotation, new secret", "Only the old secret signs; the receiver switched to the new secret too early: refused.", rotNew, before, rotNow, false)
	add("overlap, old secret", "Both secrets sign webhook-signature (new first); X-Service-Signature is the new secret's. A receiver still holding the old secret accepts: X-Service-Signature is not required when webhook-signature is present.", rotOld, during, rotNow, true)
	add("overlap, new secret", "Both secrets sign; the receiver holds the new secret.", rotNew, during, rotNow, true)
	add("overlap, another secret", "Both secrets sign; the receiver holds a third secret: refused.", rotOther, during, rotNow, false)
	add("overlap, old secret, signatures in the other order", "The old secret's signature first: the order does not matter.", rotOld,
		func() map[string]string {
			h := without(during)
			sigs := strings.Split(h["webhook-signature"], " ")
			h["webhook-signature"] = sigs[1] + " " + sigs[0]
			return h
		}(), rotNow, true)
	add("overlap, old secret, without X-Service-Signature", "Both secrets sign webhook-signature and X-Service-Signature is absent: still accepted.", rotOld, without(during, "X-Service-Signature"), rotNow, true)
	add("overlap, old secret, stale timestamp", "Both secrets sign, but the timestamp is 301 s old: refused.", rotOld, deliver([]string{rotNew, rotOld}, rotNow-rotTolerance-1), rotNow, false)
	add("overlap, new secret, stale timestamp", "The timestamp is 301 s old and X-Service-Signature (no timestamp) matches the new secret: refused all the same, since webhook-signature is present and decides.", rotNew, deliver([]string{rotNew, rotOld}, rotNow-rotTolerance-1), rotNow, false)
	add("overlap expired, old secret", "After the overlap only the new secret signs; a receiver still holding the old secret is refused.", rotOld, after, rotNow, false)
	add("overlap expired, new secret", "After the overlap only the new secret signs; the receiver holds it.", rotNew, after, rotNow, true)
	add("X-Service-Signature alone, new secret", "No Standard Webhooks headers (a proxy dropped them): X-Service-Signature is checked, and matches the new secret.", rotNew, without(during, "webhook-id", "webhook-timestamp", "webhook-signature"), rotNow, true)
	add("empty webhook-signature, new secret", "A webhook-signature header present but empty counts as absent: X-Service-Signature is checked, and matches.", rotNew,
		func() map[string]string {
			h := without(during, "webhook-id", "webhook-timestamp")
			h["webhook-signature"] = ""
			return h
		}(), rotNow, true)
	add("X-Service-Signature alone, old secret", "No Standard Webhooks headers during the overlap: X-Service-Signature is only ever the newest secret's, so a receiver holding the old secret is refused.", rotOld, without(during, "webhook-id", "webhook-timestamp", "webhook-signature"), rotNow, false)
	return rotationFile{
		Description:      "Secret-rotation vectors: whole deliveries as the service sends them before, during and after a rotation, and the verdict of every SDK's delivery check and of the standardwebhooks library. See README.md in this folder.",
		Version:          1,
		ToleranceSeconds: rotTolerance,
		OldSecret:        rotOld,
		NewSecret:        rotNew,
		Cases:            cs,
	}
}

func encodeRotation(t *testing.T, f rotationFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func loadRotation(t *testing.T) rotationFile {
	t.Helper()
	raw, err := os.ReadFile(rotationPath)
	if err != nil {
		t.Fatal(err)
	}
	var f rotationFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Version != 1 || f.ToleranceSeconds != rotTolerance || len(f.Cases) < 10 {
		t.Fatalf("unexpected rotation vectors: version %d, tolerance %d, %d cases", f.Version, f.ToleranceSeconds, len(f.Cases))
	}
	return f
}

// TestRotationVectors checks that the file is what the service's signers
// produce, then has webhook.ConstructEvent reach every verdict.
func TestRotationVectors(t *testing.T) {
	want := encodeRotation(t, buildRotation())
	if *updateRotation {
		if err := os.WriteFile(rotationPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(rotationPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, want) {
		t.Fatal("sdk/testdata/webhook-rotation.json differs from the generator: run go test ./client/webhook -run TestRotationVectors -update")
	}
	f := loadRotation(t)
	for _, c := range f.Cases {
		h := http.Header{}
		for k, v := range c.Headers {
			h.Set(k, v)
		}
		clock := webhook.WithClock(func() time.Time { return time.Unix(c.Now, 0) })
		ev, err := webhook.ConstructEvent([]byte(c.Body), h, c.Secret, clock, webhook.WithTolerance(time.Duration(f.ToleranceSeconds)*time.Second))
		if (err == nil) != c.Valid {
			t.Errorf("%s: ConstructEvent = %v, want valid %v", c.Name, err, c.Valid)
		}
		if err != nil && !errors.Is(err, webhook.ErrVerification) {
			t.Errorf("%s: %v does not wrap ErrVerification", c.Name, err)
		}
		if err == nil && ev.ID != c.Headers["webhook-id"] && c.Headers["webhook-id"] != "" {
			t.Errorf("%s: event %s", c.Name, ev.ID)
		}
	}
}

// TestRotationVectorsStandardWebhooksLibrary has the public
// standardwebhooks npm package verify every rotation vector, as a
// JavaScript receiver would, with the harness of the service's own test
// (webhook/testdata/standardwebhooks; `make test-go` installs it). It
// skips without node or the package, and fails then when
// AMS_REQUIRE_NODE_TESTS=1 (CI).
func TestRotationVectorsStandardWebhooksLibrary(t *testing.T) {
	dir := filepath.Join("..", "..", "webhook", "testdata", "standardwebhooks")
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks"))
	if nodeErr != nil || modErr != nil {
		msg := "node or the standardwebhooks package is missing: run `npm ci --prefix webhook/testdata/standardwebhooks`"
		if os.Getenv("AMS_REQUIRE_NODE_TESTS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for i, c := range loadRotation(t).Cases {
		in, _ := json.Marshal(map[string]any{"secret": c.Secret, "body": c.Body, "now": c.Now, "headers": map[string]string{
			"webhook-id":        c.Headers["webhook-id"],
			"webhook-timestamp": c.Headers["webhook-timestamp"],
			"webhook-signature": c.Headers["webhook-signature"],
		}})
		path := filepath.Join(t.TempDir(), fmt.Sprintf("case%d.json", i))
		if err := os.WriteFile(path, in, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("node", filepath.Join(dir, "verify.mjs"), path).CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("node: %v", err)
		}
		if got := err == nil; got != c.Standardwebhooks {
			t.Errorf("%s: standardwebhooks verified %v, want %v: %s", c.Name, got, c.Standardwebhooks, strings.TrimSpace(string(out)))
		}
	}
}
