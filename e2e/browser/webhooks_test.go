package browser

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// receiver is a webhook endpoint that records each delivery's event id
// (the webhook-id header) and answers with status.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	ids []string
	sig []string
}

func newReceiver(t *testing.T, status int) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.ids = append(rc.ids, r.Header.Get("webhook-id"))
		rc.sig = append(rc.sig, r.Header.Get("X-Service-Signature"))
		rc.mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"received": true, "status": %d}`, status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// deliveries returns the event ids received so far, in order.
func (rc *receiver) deliveries() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.ids...)
}

// logRows is a JavaScript expression: the number of attempts in the
// webhook page's delivery log (each has a Redeliver button).
const logRows = `[...document.querySelectorAll("button")].filter(b => b.innerText.trim() === "Redeliver").length`

// TestWebhookForm: the user creates a webhook on /account/webhooks/new; its
// page shows the signing secret once and an empty log.
func TestWebhookForm(t *testing.T) {
	p := newPage(t)
	e := p.e
	ok := newReceiver(t, http.StatusOK)

	p.signIn("dev@example.com", e.devPass, "/account/webhooks")
	p.waitText("Webhooks")
	p.submit("New webhook")
	p.waitPath("/account/webhooks/new")
	// ams serve --dev gives the pages the API's guard: http loopback URLs
	// are allowed, and the form says so.
	p.waitText("This server runs in development mode")
	p.fill("Endpoint URL", ok.URL+"/hooks/form")
	p.check("message.created", true)
	p.check("task.created", true)
	p.check("Generate one for me", true)
	p.shot("webhook-new")
	p.submit("Create webhook")

	p.waitText("Copy its signing secret now")
	p.secret("the signing secret", regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`))
	p.waitText("Nothing delivered yet.")
	if !regexp.MustCompile(`/account/webhooks/wh_\w+$`).MatchString(p.location()) {
		t.Fatalf("after creating: at %s, want the webhook's page", p.location())
	}
	p.shot("webhook-created")
	p.open(p.location())
	p.waitText("Delivery log")
	if strings.Contains(p.fieldValues()+p.bodyText(), "whsec_") {
		t.Fatal("the signing secret is shown again")
	}

	// Deleted after confirmation (so that it gets no events of the tests
	// after this one).
	p.click("Delete this webhook…")
	p.submit("Delete webhook")
	p.waitPath("/account/webhooks")
	p.waitText("deleted, with its delivery log")
	if listed, _ := eval[bool](p, `[...document.querySelectorAll("a")].some(a => a.innerText.includes(`+jsString(ok.URL)+`))`); listed {
		t.Fatal("the deleted webhook is still listed")
	}
}

// TestWebhookDeliveries: on a webhook's page the user sends a ping, sees
// the delivery in the log, redelivers it and sees the second attempt; an
// API message adds its message.created deliveries; a webhook whose receiver
// fails stands out as failing on the list.
func TestWebhookDeliveries(t *testing.T) {
	p := newPage(t)
	e := p.e
	ok := newReceiver(t, http.StatusOK)
	bad := newReceiver(t, http.StatusInternalServerError)
	// Created through the API (curl-equivalent) with the dev key.
	create := func(url string) string {
		st, body := e.api(t, "POST", "/v1/webhooks", e.devKey, `{"url":"`+url+`","events":["message.created"],"secret":"whsec_c2VjcmV0LXNpZ25pbmcta2V5LTEyMzQ1Ng=="}`)
		m := regexp.MustCompile(`"id":"(wh_\w+)"`).FindStringSubmatch(body)
		if st != http.StatusCreated || m == nil {
			t.Fatalf("POST /v1/webhooks: %d %s", st, body)
		}
		return m[1]
	}
	okID := create(ok.URL + "/hooks/ams")

	p.signIn("dev@example.com", e.devPass, "/account/webhooks/"+okID)
	p.waitText("Delivery log")

	// A ping: its delivery appears in the log.
	p.submit("Send a ping")
	p.waitText("Ping sent: a webhook.ping event")
	p.reloadUntil("the ping in the delivery log", logRows+` >= 1`)
	got := ok.deliveries()
	if len(got) != 1 || !strings.HasPrefix(got[0], "evt_") {
		t.Fatalf("the receiver got %v, want one delivery", got)
	}
	ping := got[0]
	p.waitText(ping)
	p.waitText("webhook.ping")

	// Redeliver it: a second attempt of the same event.
	p.submitNear("Redeliver", ping)
	p.waitText("is queued for delivery again")
	p.reloadUntil("the redelivery in the log", logRows+` >= 2`)
	if got := ok.deliveries(); len(got) != 2 || got[1] != ping {
		t.Fatalf("after redeliver the receiver got %v, want %s twice", got, ping)
	}

	// A message through the API: its message.created events are delivered.
	asst := regexp.MustCompile(`assistant\s+(ast_\w+)`).FindStringSubmatch(e.stdout)[1]
	if st, body := e.api(t, "POST", "/v1/messages", e.devKey, `{"assistant_id":"`+asst+`","message":"Hello from the browser tests"}`); st != http.StatusCreated {
		t.Fatalf("POST /v1/messages: %d %s", st, body)
	}
	p.reloadUntil("the message.created deliveries", logRows+` >= 4`)
	p.waitText("message.created")
	p.shot("webhook-deliveries")

	// A receiver that fails: after the retry schedule (0s, 1s) the webhook
	// is turned off and stands out as failing.
	badID := create(bad.URL + "/broken")
	p.open("/account/webhooks/" + badID)
	p.submit("Send a ping")
	p.waitText("Ping sent")
	p.reloadUntil("the failing webhook", `document.body.innerText.includes("This webhook is failing.")`)
	p.shot("webhook-failing")
	p.open("/account/webhooks")
	p.waitFor("the failing-webhooks alert", `/\bwebhooks? (is|are) failing\b/.test(document.body.innerText)`)
	p.waitText(bad.URL + "/broken")
	p.shot("webhooks")
	if n := len(bad.deliveries()); n != 2 {
		t.Errorf("the failing receiver got %d attempts, want 2 (--webhook-retry-schedule 0s,1s)", n)
	}
}
