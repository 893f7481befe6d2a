package pages_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// sendAPIMessage sends a message through the API with the fixture's key.
func (h *accountHarness) sendAPIMessage(t *testing.T, text string) {
	t.Helper()
	r := h.Do("POST", "/v1/messages", h.Key, fmt.Sprintf(`{"assistant_id":%q,"message":%q}`, h.Assistant.ID, text))
	if r.Status != 201 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
}

// TestWebhookRecoverOnPage: "Recover events since ..." reads its
// datetime-local in the account's time zone, queues what the webhook
// missed while it was off, and says how many in a flash; a bad time is a
// form error, a disabled webhook a flash.
func TestWebhookRecoverOnPage(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	b := h.Browser
	rc := newReceiver(t)
	ctx := context.Background()
	paris := "Europe/Paris" // UTC+1 in November
	if _, err := h.Store.UpdateUser(ctx, h.User.ID, ams.UserUpdate{Timezone: &paris}, h.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	h.createWebhook(t, b, rc.URL, []string{ams.EventMessageCreated}, "")
	wh := h.webhooksOf(t, h.User)[0]
	page := "/account/webhooks/" + wh.ID
	p := h.get(t, b, page)
	p = h.post(t, b, page+"/disable", h.form(t, p, page+"/disable"))
	// Recovery waits until the webhook is on.
	wantPage(t, p, http.StatusOK, "Enable this webhook first")
	csrf := h.form(t, p, page+"/enable").Get("csrf_token")
	p = h.post(t, b, page+"/recover", url.Values{"csrf_token": {csrf}, "since": {"2026-11-21T09:00"}})
	wantPage(t, p, http.StatusOK, "This webhook is disabled: enable it first")

	// Two messages (four events) at 10:00 UTC, 11:00 in Paris, while it is off.
	h.sendAPIMessage(t, "one")
	h.sendAPIMessage(t, "two")
	h.Clock.Add(time.Hour)
	p = h.post(t, b, page+"/enable", url.Values{"csrf_token": {csrf}})
	// The form's default is a day ago, at most now, in Paris time (now is
	// 11:00 UTC, 12:00 in Paris).
	wantPage(t, p, http.StatusOK, "Webhook enabled.", `type="datetime-local" id="since" name="since" value="2026-11-20T12:00" max="2026-11-21T12:00"`)

	// Bad times are form errors; nothing is queued.
	for _, c := range []struct{ since, want string }{
		{"", "Enter the date and time from which to recover events."},
		{"yesterday", "Enter the date and time like"},
		{"2026-11-21T12:30", "must not be in the future"}, // 11:30 UTC, after now (11:00 UTC)
	} {
		p = h.post(t, b, page+"/recover", url.Values{"csrf_token": {csrf}, "since": {c.since}})
		wantPage(t, p, http.StatusUnprocessableEntity, c.want, `aria-invalid="true"`)
	}
	h.deliver(t)
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("%d deliveries after refused recoveries", n)
	}

	// 10:30 in Paris is 09:30 UTC: before the messages (read as UTC it
	// would be after them, and nothing would be recovered).
	p = h.post(t, b, page+"/recover", url.Values{"csrf_token": {csrf}, "since": {"2026-11-21T10:30"}})
	wantPage(t, p, http.StatusOK, "4 events since 21 Nov 2026 10:30 CET are queued for delivery again, oldest first (they may arrive out of order).")
	h.deliver(t)
	if n := len(rc.requests()); n != 4 {
		t.Fatalf("%d deliveries after the recovery, want 4", n)
	}
	p = h.post(t, b, page+"/recover", url.Values{"csrf_token": {csrf}, "since": {"2026-11-21T10:30"}})
	wantPage(t, p, http.StatusOK, "Nothing to recover")
}

// TestWebhookLimitOnPage: the account's 51st webhook is refused on the
// page with the cap named, and nothing is stored.
func TestWebhookLimitOnPage(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	rc := newReceiver(t)
	for i := 0; i < ams.DefaultMaxWebhooks; i++ {
		w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: h.User.ID, URL: rc.URL, Events: []string{ams.EventTaskCreated},
			Active: true, Status: ams.WebhookActive, Secret: "0123456789abcdef", CreatedAt: h.Clock.Now(), UpdatedAt: h.Clock.Now()}
		if err := h.Store.CreateWebhook(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
	p := h.createWebhook(t, h.Browser, rc.URL+"/51", []string{ams.EventMessageCreated}, "")
	wantPage(t, p, http.StatusConflict, "This account already has 50 webhooks, the most it may have.", rc.URL+"/51")
	if n := len(h.webhooksOf(t, h.User)); n != 50 {
		t.Fatalf("%d webhooks stored", n)
	}
}

// TestWaitlistSendsNothing: an account on the early-access waitlist cannot
// create, ping, recover or redeliver webhooks, on the pages or through the
// API, and its receiver gets nothing.
func TestWaitlistSendsNothing(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	ctx := context.Background()
	rc := newReceiver(t)
	now := h.Clock.Now()
	zoe := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "zoe@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := h.Store.CreateUser(ctx, zoe); err != nil {
		t.Fatal(err)
	}
	h.setPassword(zoe)
	b := h.signIn(t, zoe.Email)
	key := h.NewKey(zoe, "read,write,messages") // made by an operator, say

	// Create: the page and the API refuse.
	p := h.createWebhook(t, b, rc.URL, []string{ams.EventMessageCreated}, "")
	wantPage(t, p, http.StatusForbidden, "This account is on the early-access waitlist: webhooks can be created")
	r := h.Do("POST", "/v1/webhooks", key, `{"url":"`+rc.URL+`","events":["message.created"],"secret":"0123456789abcdef"}`)
	if r.Status != 403 || r.JSON(t)["error"].(map[string]any)["code"] != "account_on_waitlist" {
		t.Fatalf("API create: %d %s", r.Status, r.Body)
	}
	if n := len(h.webhooksOf(t, zoe)); n != 0 {
		t.Fatalf("%d webhooks stored", n)
	}

	// A webhook it had before it was put back on the waitlist, with a
	// delivery: ping, recover and redeliver are refused.
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: zoe.ID, URL: rc.URL, Events: []string{ams.EventMessageCreated},
		Active: true, Status: ams.WebhookActive, Secret: "0123456789abcdef", CreatedAt: now, UpdatedAt: now}
	if err := h.Store.CreateWebhook(ctx, w); err != nil {
		t.Fatal(err)
	}
	page := "/account/webhooks/" + w.ID
	p = h.get(t, b, page)
	csrf := h.form(t, p, page+"/ping").Get("csrf_token")
	for _, path := range []string{page + "/ping", page + "/recover", page + "/deliveries/dlv_x/redeliver"} {
		p = h.post(t, b, path, url.Values{"csrf_token": {csrf}, "since": {"2026-11-21T09:00"}})
		wantPage(t, p, http.StatusForbidden, "This account is on the early-access waitlist")
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/webhooks/" + w.ID + "/ping", ""},
		{"/v1/webhooks/" + w.ID + "/recover", `{"since": "2026-11-21T09:00:00Z"}`},
		{"/v1/webhooks/" + w.ID + "/deliveries/dlv_x/redeliver", ""},
	} {
		if r := h.Do("POST", c.path, key, c.body); r.Status != 403 || r.JSON(t)["error"].(map[string]any)["code"] != "account_on_waitlist" {
			t.Fatalf("API %s: %d %s", c.path, r.Status, r.Body)
		}
	}
	h.Clock.Add(time.Minute)
	h.deliver(t)
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("the receiver got %d requests", n)
	}
	if evs, _ := h.Store.ListEvents(ctx, zoe.ID, ams.EventFilter{}, ams.ListParams{Limit: 10}); len(evs.Data) != 0 {
		t.Fatalf("events of the waitlisted account: %d", len(evs.Data))
	}

	// Approved: the page works.
	if _, _, err := h.App.Accounts.Approve(ctx, zoe.ID); err != nil {
		t.Fatal(err)
	}
	p = h.post(t, b, page+"/ping", url.Values{"csrf_token": {csrf}})
	wantPage(t, p, http.StatusOK, "Ping sent")
}

// TestPagePingsRateLimited: pings from the account pages count against
// the account's rate limit together with its API requests; over it the
// page answers 429 with Retry-After, and nothing is sent.
func TestPagePingsRateLimited(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	b := h.Browser
	rc := newReceiver(t)
	h.createWebhook(t, b, rc.URL, []string{ams.EventMessageCreated}, "")
	wh := h.webhooksOf(t, h.User)[0]
	page := "/account/webhooks/" + wh.ID
	csrf := h.form(t, h.get(t, b, page), page+"/ping").Get("csrf_token")
	pings := func() int {
		evs, err := h.Store.ListEvents(context.Background(), h.User.ID, ams.EventFilter{Type: ams.EventWebhookPing}, ams.ListParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs.Data)
	}
	// 30 API requests, then 30 pings from the page: the standard plan's 60.
	for i := 0; i < 30; i++ {
		if r := h.Do("GET", "/v1/webhooks", h.Key, ""); r.Status != 200 {
			t.Fatalf("API request %d: %d", i, r.Status)
		}
	}
	for i := 0; i < 30; i++ {
		p := h.post(t, b, page+"/ping", url.Values{"csrf_token": {csrf}})
		wantPage(t, p, http.StatusOK, "Ping sent")
	}
	p := h.post(t, b, page+"/ping", url.Values{"csrf_token": {csrf}})
	wantPage(t, p, http.StatusTooManyRequests, "Rate limit exceeded: your plan allows 60 requests per minute")
	if ra := p.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After %q", ra)
	}
	for _, path := range []string{page + "/recover", page + "/deliveries/dlv_x/redeliver"} {
		p = h.post(t, b, path, url.Values{"csrf_token": {csrf}, "since": {"2026-11-21T09:00"}})
		wantPage(t, p, http.StatusTooManyRequests, "Rate limit exceeded")
	}
	if r := h.Do("GET", "/v1/webhooks", h.Key, ""); r.Status != 429 {
		t.Fatalf("API after the pages' pings: %d", r.Status)
	}
	if n := pings(); n != 30 {
		t.Fatalf("%d pings stored, want 30", n)
	}
	h.deliver(t)
	if n := len(rc.requests()); n != 30 {
		t.Fatalf("the receiver got %d pings, want 30", n)
	}
	// Once the requests have left the sliding minute (61 s, as the clock
	// stood still), pings go out again.
	h.Clock.Add(61 * time.Second)
	p = h.post(t, b, page+"/ping", url.Values{"csrf_token": {csrf}})
	wantPage(t, p, http.StatusOK, "Ping sent")
	if !strings.Contains(p.Body, "webhook.ping") || pings() != 31 {
		t.Fatalf("after a minute: %d pings", pings())
	}
}
