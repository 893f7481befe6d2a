package browser

import (
	"net/http"
	"testing"
)

// TestUsagePage: API requests show up on /account/usage (counts are stored
// every 10 s, so the page is reloaded until they do), with the plan's
// limits and the two charts.
func TestUsagePage(t *testing.T) {
	p := newPage(t)
	e := p.e
	e.needPage(t, "/account/usage")
	for range 5 {
		if st, body := e.api(t, "GET", "/v1/assistants", e.devKey, ""); st != http.StatusOK {
			t.Fatalf("GET /v1/assistants: %d %s", st, body)
		}
	}
	p.signIn("dev@example.com", e.devPass, "/account/usage")
	p.waitText("Requests per minute, last 24 hours")
	p.waitText("Requests per day, last 30 days")
	p.waitText("60 requests per minute") // the standard plan
	p.reloadUntil("today's requests counted", `(m => m && Number(m[1].replace(/\D/g, "")) >= 5)(document.body.innerText.match(/Today \(UTC\)\s*([\d,. ]+)/))`)
	if n, err := eval[int](p, `document.querySelectorAll("main svg").length`); err != nil || n < 2 {
		t.Fatalf("usage charts: %d svg (%v), want 2", n, err)
	}
	p.shot("usage")
}
