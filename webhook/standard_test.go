package webhook_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/testing/amstest"
)

// TestStandardWebhooksLibraryVerifiesDelivery captures a real delivery and
// has the public `standardwebhooks` npm package verify it, as a receiver
// in JavaScript would. `make test` and .ci/run install the package
// (npm ci in webhook/testdata/standardwebhooks); CI sets
// AMS_REQUIRE_NODE_TESTS=1 so that a missing install fails instead of
// skipping.
func TestStandardWebhooksLibraryVerifiesDelivery(t *testing.T) {
	dir := needStandardWebhooks(t)
	f := amstest.New(t)
	// The library checks the timestamp against the real clock.
	f.Clock.Add(time.Since(f.Clock.Now()))
	rc := newReceiver(t, f.Clock.Now)
	key := make([]byte, 32)
	rand.Read(key)
	whsec := "whsec_" + base64.StdEncoding.EncodeToString(key)
	r := f.Do("POST", "/v1/webhooks", f.Key, fmt.Sprintf(`{"url":%q,"events":["message.created"],"secret":%q}`, rc.URL, whsec))
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	sendMessage(t, f, "verify me")
	runOnce(t, f)
	got := rc.requests()
	if len(got) != 2 {
		t.Fatalf("%d deliveries", len(got))
	}
	for i, g := range got {
		verify := func(secret string, body []byte) (string, error) {
			in, _ := json.Marshal(map[string]any{
				"secret": secret, "body": string(body),
				"headers": map[string]string{
					"webhook-id":        g.header.Get("Webhook-Id"),
					"webhook-timestamp": g.header.Get("Webhook-Timestamp"),
					"webhook-signature": g.header.Get("Webhook-Signature"),
				},
			})
			path := filepath.Join(t.TempDir(), fmt.Sprintf("delivery%d.json", i))
			os.WriteFile(path, in, 0o600)
			out, err := exec.Command("node", filepath.Join(dir, "verify.mjs"), path).CombinedOutput()
			return strings.TrimSpace(string(out)), err
		}
		out, err := verify(whsec, g.body)
		if err != nil || out != "verified "+g.header.Get("Webhook-Id") {
			t.Fatalf("standardwebhooks rejected a real delivery: %v: %s", err, out)
		}
		// The check is real: a changed body or another secret fails.
		if out, err := verify(whsec, append([]byte(" "), g.body...)); err == nil {
			t.Fatalf("tampered body verified: %s", out)
		}
		other := make([]byte, 32)
		rand.Read(other)
		if out, err := verify("whsec_"+base64.StdEncoding.EncodeToString(other), g.body); err == nil {
			t.Fatalf("wrong secret verified: %s", out)
		}
	}
}

// needStandardWebhooks skips the test (fails it in CI) unless node and the
// standardwebhooks package are installed; it returns the harness directory.
func needStandardWebhooks(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("testdata", "standardwebhooks")
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks"))
	if nodeErr != nil || modErr != nil {
		msg := "node or the standardwebhooks package is missing: run `npm ci --prefix webhook/testdata/standardwebhooks`"
		if os.Getenv("AMS_REQUIRE_NODE_TESTS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// libraryVerifies reports whether the standardwebhooks package accepts
// delivery g with secret, on a receiver whose clock reads now.
func libraryVerifies(t *testing.T, dir, secret string, g received, now time.Time) bool {
	t.Helper()
	in, _ := json.Marshal(map[string]any{
		"secret": secret, "body": string(g.body), "now": now.Unix(),
		"headers": map[string]string{
			"webhook-id":        g.header.Get("Webhook-Id"),
			"webhook-timestamp": g.header.Get("Webhook-Timestamp"),
			"webhook-signature": g.header.Get("Webhook-Signature"),
		},
	})
	path := filepath.Join(t.TempDir(), "delivery.json")
	if err := os.WriteFile(path, in, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", filepath.Join(dir, "verify.mjs"), path).CombinedOutput()
	ok := err == nil && strings.TrimSpace(string(out)) == "verified "+g.header.Get("Webhook-Id")
	if !ok && err == nil {
		t.Fatalf("verify.mjs: %s", out)
	}
	return ok
}

// TestStandardWebhooksLibraryVerifiesRotation rotates a webhook's secret
// (whsec_ secrets, as the library takes them) while a delivery waits for
// its retry: during the 24 h overlap the public standardwebhooks package
// accepts the deliveries with the old secret and with the new one; after
// it (injected clock) only with the new one.
func TestStandardWebhooksLibraryVerifiesRotation(t *testing.T) {
	dir := needStandardWebhooks(t)
	f := amstest.New(t)
	rc := newReceiver(t, f.Clock.Now)
	newWhsec := func() string {
		key := make([]byte, 32)
		rand.Read(key)
		return "whsec_" + base64.StdEncoding.EncodeToString(key)
	}
	oldSecret, newSecret := newWhsec(), newWhsec()
	r := f.Do("POST", "/v1/webhooks", f.Key, fmt.Sprintf(`{"url":%q,"events":["message.created"],"secret":%q}`, rc.URL, oldSecret))
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	wh := r.JSON(t)["id"].(string)
	rc.setStatus(503) // the first attempts fail, before the rotation
	sendMessage(t, f, "rotate me")
	runOnce(t, f)
	if r := f.Do("PATCH", "/v1/webhooks/"+wh, f.Key, fmt.Sprintf(`{"secret":%q}`, newSecret)); r.Status != 200 {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	rc.setStatus(200)
	f.Clock.Add(time.Minute) // the retries, signed during the overlap
	runOnce(t, f)
	during := rc.requests()[2:]
	f.Clock.Add(24 * time.Hour) // past the overlap
	sendMessage(t, f, "after the overlap")
	runOnce(t, f)
	after := rc.requests()[4:]
	if len(during) != 2 || len(after) != 2 {
		t.Fatalf("%d deliveries during the overlap, %d after", len(during), len(after))
	}
	for _, g := range during {
		if !libraryVerifies(t, dir, oldSecret, g, g.at) || !libraryVerifies(t, dir, newSecret, g, g.at) {
			t.Fatalf("during the overlap a secret was refused: %s", g.header.Get("Webhook-Signature"))
		}
		if libraryVerifies(t, dir, newWhsec(), g, g.at) {
			t.Fatal("another secret verified")
		}
	}
	for _, g := range after {
		if !libraryVerifies(t, dir, newSecret, g, g.at) {
			t.Fatalf("after the overlap the new secret was refused: %s", g.header.Get("Webhook-Signature"))
		}
		if libraryVerifies(t, dir, oldSecret, g, g.at) {
			t.Fatalf("after the overlap the old secret still verifies: %s", g.header.Get("Webhook-Signature"))
		}
	}
}
