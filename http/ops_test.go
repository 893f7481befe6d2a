package http_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestHealthReadyAndMetrics(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if r := f.do("GET", "/healthz", "", "Authorization", ""); r.status != 200 || r.json(t)["status"] != "ok" {
		t.Fatalf("healthz: %d %s", r.status, r.body)
	}
	if r := f.do("GET", "/readyz", "", "Authorization", ""); r.status != 200 || r.json(t)["status"] != "ready" {
		t.Fatalf("readyz: %d %s", r.status, r.body)
	}
	f.do("GET", "/v1/messages/msg_nothere", "")
	f.do("GET", "/v1/messages/msg_nothere2", "")
	f.send("hello", "")
	resp, err := http.Get(f.Server.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []string{
		`ams_http_requests_total{method="GET",route="GET /v1/messages/{id}",status="404"} 2`,
		`ams_http_requests_total{method="POST",route="POST /v1/messages",status="201"} 1`,
		`ams_http_request_duration_seconds_count{method="POST",route="POST /v1/messages"} 1`,
		`ams_webhook_queue_depth 0`,
		`ams_webhook_oldest_pending_seconds 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if regexp.MustCompile(`route="[^"]*msg_`).MatchString(body) {
		t.Fatal("raw paths with ids leak into route labels")
	}
	// The store gone: not ready.
	f.Store.Close()
	if r := f.do("GET", "/readyz", "", "Authorization", ""); r.status != 503 || strings.Contains(string(r.body), "closed") {
		t.Fatalf("readyz with the store closed: %d %s", r.status, r.body)
	}
}
