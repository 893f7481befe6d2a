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

	"github.com/amsdev/ams/internal/amstest"
)

// TestStandardWebhooksLibraryVerifiesDelivery captures a real delivery and
// has the public `standardwebhooks` npm package verify it, as a receiver
// in JavaScript would. `make test` and .ci/run install the package
// (npm ci in webhook/testdata/standardwebhooks); CI sets
// AMS_REQUIRE_NODE_TESTS=1 so that a missing install fails instead of
// skipping.
func TestStandardWebhooksLibraryVerifiesDelivery(t *testing.T) {
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
