package pages_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/format"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/webhook"
)

// receiver is a webhook endpoint that records what it gets and answers
// with status (200 unless set).
type receiver struct {
	*httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	got    []received
}

type received struct {
	Header http.Header
	Body   []byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.status.Store(http.StatusOK)
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Clone(), b})
		rc.mu.Unlock()
		st := int(rc.status.Load())
		w.WriteHeader(st)
		io.WriteString(w, "receiver says "+strconv.Itoa(st))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// deliver runs the worker once over what is due.
func (h *accountHarness) deliver(t *testing.T) {
	t.Helper()
	if _, err := h.Worker.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// createWebhook fills the new-webhook form and posts it.
func (h *accountHarness) createWebhook(t *testing.T, b *http.Client, u string, events []string, secret string) *webPage {
	t.Helper()
	f := h.form(t, h.get(t, b, "/account/webhooks/new"), "/account/webhooks")
	f.Set("url", u)
	f["events"] = events
	if secret != "" {
		f.Set("secret_mode", "custom")
		f.Set("secret", secret)
	}
	return h.post(t, b, "/account/webhooks", f)
}

func (h *accountHarness) webhooksOf(t *testing.T, u *ams.User) []*ams.Webhook {
	t.Helper()
	p, err := h.Store.ListWebhooks(context.Background(), u.ID, ams.ListParams{Limit: 100, Order: ams.OrderDesc})
	if err != nil {
		t.Fatal(err)
	}
	return p.Data
}

func (h *accountHarness) deliveries(t *testing.T, u *ams.User, id string) []*ams.Delivery {
	t.Helper()
	p, err := h.Store.ListDeliveries(context.Background(), u.ID, id, ams.DeliveryFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderDesc})
	if err != nil {
		t.Fatal(err)
	}
	return p.Data
}

// TestWebhookCreatePingRedeliver: a webhook made on the page with a
// generated secret (shown once) receives a ping signed with that secret;
// the attempt appears in its delivery log, and redelivering it makes a
// second attempt of the same event.
func TestWebhookCreatePingRedeliver(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	b := h.Browser
	rc := newReceiver(t)

	p := h.get(t, b, "/account/webhooks")
	wantPage(t, p, http.StatusOK, "You have no webhooks yet", `href="/account/webhooks" aria-current="page"`, `href="/account/apps"`)
	p = h.get(t, b, "/account/webhooks/new")
	for _, typ := range ams.EventTypes {
		wantPage(t, p, http.StatusOK, `name="events" value="`+typ+`"`, `for="event-`+typ+`"`)
	}

	p = h.createWebhook(t, b, rc.URL+"/hook", []string{ams.EventMessageCreated, ams.EventTaskCreated}, "")
	wantPage(t, p, http.StatusOK, "Webhook created. Copy its signing secret now", "Nothing delivered yet")
	if cc := p.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("page with the secret: Cache-Control %q", cc)
	}
	hooks := h.webhooksOf(t, h.User)
	if len(hooks) != 1 {
		t.Fatalf("stored webhooks: %+v", hooks)
	}
	wh := hooks[0]
	if wh.URL != rc.URL+"/hook" || strings.Join(wh.Events, ",") != "message.created,task.created" || !wh.Active || wh.Status != ams.WebhookActive {
		t.Fatalf("stored webhook: %+v", wh)
	}
	if p.Request.URL.Path != "/account/webhooks/"+wh.ID {
		t.Fatalf("after creating: at %s", p.Request.URL.Path)
	}
	secret := secretOnPage(p, "webhook-secret")
	if !strings.HasPrefix(secret, webhook.SecretPrefix) || secret != wh.Secret {
		t.Fatalf("secret on the page %q, stored %q", secret, wh.Secret)
	}
	if len(webhook.StandardKey(secret)) != 32 {
		t.Errorf("generated secret %q is not whsec_ and the base64 of 32 bytes", secret)
	}
	p = h.get(t, b, "/account/webhooks/"+wh.ID)
	if secretOnPage(p, "webhook-secret") != "" || strings.Contains(p.Body, secret) {
		t.Fatal("the secret is shown again on reload")
	}

	// Ping: one webhook.ping event, queued for this webhook, delivered
	// signed with the secret shown.
	p = h.post(t, b, "/account/webhooks/"+wh.ID+"/ping", h.form(t, p, "/account/webhooks/"+wh.ID+"/ping"))
	wantPage(t, p, http.StatusOK, "Ping sent")
	h.deliver(t)
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(got))
	}
	r0 := got[0]
	if r0.Header.Get("X-Service-Event") != ams.EventWebhookPing || r0.Header.Get("X-Service-Signature") != webhook.Signature(secret, r0.Body) {
		t.Fatalf("ping: headers %v", r0.Header)
	}
	ts, _ := strconv.ParseInt(r0.Header.Get("Webhook-Timestamp"), 10, 64)
	if r0.Header.Get("Webhook-Signature") != webhook.StandardSignature(secret, r0.Header.Get("Webhook-Id"), ts, r0.Body) {
		t.Fatalf("ping: Standard Webhooks signature does not verify with the shown secret")
	}
	if !strings.Contains(string(r0.Body), `"webhook_id":"`+wh.ID+`"`) {
		t.Fatalf("ping body %s", r0.Body)
	}

	// The log shows the attempt.
	ds := h.deliveries(t, h.User, wh.ID)
	if len(ds) != 1 || !ds[0].Success {
		t.Fatalf("deliveries: %+v", ds)
	}
	p = h.get(t, b, "/account/webhooks/"+wh.ID)
	redeliver := "/account/webhooks/" + wh.ID + "/deliveries/" + ds[0].ID + "/redeliver"
	wantPage(t, p, http.StatusOK, "Delivery log", "webhook.ping", ds[0].EventID, `<span class="badge badge-ok">200</span>`,
		"receiver says 200", format.Number(ds[0].DurationMS)+" ms", `action="`+redeliver+`"`)
	p = h.get(t, b, "/account/webhooks")
	wantPage(t, p, http.StatusOK, rc.URL+"/hook", "message.created, task.created", `<span class="badge badge-ok">Active</span>`, `<span class="badge badge-ok">OK</span>`)

	// Redeliver: the same event again, a second attempt in the log.
	h.Clock.Add(time.Minute)
	p = h.post(t, b, redeliver, h.form(t, h.get(t, b, "/account/webhooks/"+wh.ID), redeliver))
	wantPage(t, p, http.StatusOK, "is queued for delivery again")
	h.deliver(t)
	got = rc.requests()
	if len(got) != 2 || got[1].Header.Get("Webhook-Id") != got[0].Header.Get("Webhook-Id") || string(got[1].Body) != string(got[0].Body) {
		t.Fatalf("redelivery: %d requests; the second must carry the same event", len(got))
	}
	ds = h.deliveries(t, h.User, wh.ID)
	if len(ds) != 2 || ds[0].EventID != ds[1].EventID || ds[0].ID == ds[1].ID {
		t.Fatalf("deliveries after redelivery: %+v", ds)
	}
	p = h.get(t, b, "/account/webhooks/"+wh.ID)
	if n := strings.Count(p.Body, "/redeliver\""); n != 2 {
		t.Fatalf("the log shows %d attempts, want 2:\n%s", n, p.Body)
	}
}

// TestWebhookFailingStandsOut: a webhook turned off by failed deliveries
// stands out in the list with the reason; enabling it makes it active
// again, as PATCH {"active": true} does; disabling turns it off.
func TestWebhookFailingStandsOut(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	b := h.Browser
	rc := newReceiver(t)
	rc.status.Store(http.StatusGone)

	// A secret of the user's own: stored as given, not shown.
	own := "my-own-secret-1234567890"
	p := h.createWebhook(t, b, rc.URL, []string{ams.EventMessageCreated}, own)
	wantPage(t, p, http.StatusOK, "Webhook created. Its deliveries are signed with the secret you gave.")
	if strings.Contains(p.Body, own) || secretOnPage(p, "webhook-secret") != "" {
		t.Fatal("a pasted secret is shown")
	}
	wh := h.webhooksOf(t, h.User)[0]
	if wh.Secret != own {
		t.Fatalf("stored secret %q", wh.Secret)
	}
	p = h.post(t, b, "/account/webhooks/"+wh.ID+"/ping", h.form(t, p, "/account/webhooks/"+wh.ID+"/ping"))
	wantPage(t, p, http.StatusOK, "Ping sent")
	h.deliver(t)
	if got, _ := h.Store.FindWebhook(context.Background(), h.User.ID, wh.ID); got.Status != ams.WebhookFailing || got.Active {
		t.Fatalf("after a 410: %+v", got)
	}

	p = h.get(t, b, "/account/webhooks")
	wantPage(t, p, http.StatusOK, "1 webhook is failing", `<tr class="failing">`, `<span class="badge badge-danger">Failing</span>`,
		"Turned off after failed deliveries: the receiver answered 410 Gone", `<span class="badge badge-danger">Failed</span>`)
	p = h.get(t, b, "/account/webhooks/"+wh.ID)
	wantPage(t, p, http.StatusOK, "This webhook is failing.", "Last attempt, just now: the receiver answered 410 Gone",
		`<span class="badge badge-danger">410</span>`, "receiver says 410")
	// Pings and redeliveries wait until it is enabled.
	ds := h.deliveries(t, h.User, wh.ID)
	csrf := h.form(t, p, "/account/webhooks/"+wh.ID+"/enable").Get("csrf_token")
	p = h.post(t, b, "/account/webhooks/"+wh.ID+"/deliveries/"+ds[0].ID+"/redeliver", url.Values{"csrf_token": {csrf}})
	wantPage(t, p, http.StatusOK, "This webhook is disabled: enable it first")
	p = h.post(t, b, "/account/webhooks/"+wh.ID+"/ping", url.Values{"csrf_token": {csrf}})
	wantPage(t, p, http.StatusOK, "This webhook is disabled: enable it first")
	h.deliver(t)
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("a failing webhook got %d requests", n)
	}

	// Enable from the list.
	rc.status.Store(http.StatusOK)
	p = h.get(t, b, "/account/webhooks")
	p = h.post(t, b, "/account/webhooks/"+wh.ID+"/enable", h.form(t, p, "/account/webhooks/"+wh.ID+"/enable"))
	wantPage(t, p, http.StatusOK, "Webhook enabled again.")
	if p.Request.URL.Path != "/account/webhooks" || strings.Contains(p.Body, `class="failing"`) {
		t.Fatalf("after enabling from the list: at %s\n%s", p.Request.URL.Path, p.Body)
	}
	if got, _ := h.Store.FindWebhook(context.Background(), h.User.ID, wh.ID); got.Status != ams.WebhookActive || !got.Active {
		t.Fatalf("after enabling: %+v", got)
	}
	p = h.post(t, b, "/account/webhooks/"+wh.ID+"/deliveries/"+ds[0].ID+"/redeliver", url.Values{"csrf_token": {csrf}})
	wantPage(t, p, http.StatusOK, "is queued for delivery again")
	h.deliver(t)
	if got := rc.requests(); len(got) != 2 || got[1].Header.Get("X-Service-Signature") != webhook.Signature(own, got[1].Body) {
		t.Fatalf("after enabling: %d requests", len(got))
	}

	// Disable from the webhook's page.
	p = h.get(t, b, "/account/webhooks/"+wh.ID)
	p = h.post(t, b, "/account/webhooks/"+wh.ID+"/disable", h.form(t, p, "/account/webhooks/"+wh.ID+"/disable"))
	wantPage(t, p, http.StatusOK, "Webhook disabled.", `<span class="badge badge-muted">Disabled</span>`, "This webhook is disabled")
	if got, _ := h.Store.FindWebhook(context.Background(), h.User.ID, wh.ID); got.Status != ams.WebhookActive || got.Active {
		t.Fatalf("after disabling: %+v", got)
	}
	p = h.get(t, b, "/account/webhooks")
	wantPage(t, p, http.StatusOK, `<span class="badge badge-muted">Disabled</span>`, `action="/account/webhooks/`+wh.ID+`/enable"`)
}

// TestWebhookEditAndDelete: the edit form starts from the webhook, checks
// what it gets as the API does, and saves URL and events; deleting asks
// for confirmation first.
func TestWebhookEditAndDelete(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	b := h.Browser
	rc := newReceiver(t)
	h.createWebhook(t, b, rc.URL+"/a", []string{ams.EventTaskCreated}, "")
	wh := h.webhooksOf(t, h.User)[0]

	edit := "/account/webhooks/" + wh.ID
	p := h.get(t, b, edit+"/edit")
	wantPage(t, p, http.StatusOK, "Edit webhook", `value="`+rc.URL+`/a"`)
	f := h.form(t, p, edit)
	if got := f["events"]; len(got) != 1 || got[0] != ams.EventTaskCreated {
		t.Fatalf("checked events of the edit form: %v", got)
	}
	if f.Has("secret") {
		t.Error("the edit form asks for a secret")
	}

	for _, tc := range []struct {
		url    string
		events []string
		want   string
	}{
		{rc.URL + "/b", nil, "Choose at least one event"},
		{rc.URL + "/b", []string{"task.created", "task.exploded"}, "Unknown event type &#39;task.exploded&#39;"},
		{"", []string{"task.created"}, "Enter the URL"},
		{"ftp://example.com/hook", []string{"task.created"}, "Invalid webhook URL: the URL must use https or http."},
	} {
		g := h.form(t, p, edit)
		g.Set("url", tc.url)
		g["events"] = tc.events
		q := h.post(t, b, edit, g)
		wantPage(t, q, http.StatusUnprocessableEntity, "There is a problem", tc.want)
	}
	if got, _ := h.Store.FindWebhook(context.Background(), h.User.ID, wh.ID); got.URL != wh.URL || strings.Join(got.Events, ",") != "task.created" {
		t.Fatalf("an invalid edit changed the webhook: %+v", got)
	}

	f.Set("url", rc.URL+"/b")
	f["events"] = []string{ams.EventMessageCreated, ams.EventTaskReminder, ams.EventMessageCreated}
	p = h.post(t, b, edit, f)
	wantPage(t, p, http.StatusOK, "Webhook saved.")
	got, _ := h.Store.FindWebhook(context.Background(), h.User.ID, wh.ID)
	if got.URL != rc.URL+"/b" || strings.Join(got.Events, ",") != "message.created,task.reminder" || got.Secret != wh.Secret {
		t.Fatalf("after editing: %+v", got)
	}

	// Delete: confirmation first.
	del := edit + "/delete"
	p = h.post(t, b, del, url.Values{"csrf_token": {f.Get("csrf_token")}})
	wantPage(t, p, http.StatusOK, "Delete this webhook?", rc.URL+"/b")
	if len(h.webhooksOf(t, h.User)) != 1 {
		t.Fatal("deleted before confirmation")
	}
	p = h.post(t, b, del, h.form(t, p, del))
	wantPage(t, p, http.StatusOK, "deleted, with its delivery log", "You have no webhooks yet")
	if len(h.webhooksOf(t, h.User)) != 0 {
		t.Fatal("not deleted")
	}
	wantPage(t, h.get(t, b, edit), http.StatusNotFound)
}

// TestWebhookSSRF: the pages refuse the URLs the API refuses, with the
// same reason, as a form error, and store nothing.
func TestWebhookSSRF(t *testing.T) {
	t.Parallel()
	// As ams serve without --dev; the pages and the API share it.
	strict := &ssrf.Guard{}
	h := newAccountHarness(t, strict)
	key := h.NewKey(h.User, "write")
	for _, u := range []string{
		"http://127.0.0.1:8080/hook",       // plain http
		"https://127.0.0.1/hook",           // loopback
		"https://10.1.2.3/hook",            // private
		"https://169.254.169.254/metadata", // cloud metadata
		"https://[::1]/hook",
		"https://localhost/hook", // resolves to loopback
		"https://user:pw@example.com/hook",
		"https://example.com/hook#frag",
	} {
		p := h.createWebhook(t, h.Browser, u, []string{ams.EventMessageCreated}, "")
		wantPage(t, p, http.StatusUnprocessableEntity, "There is a problem", `id="url-error"`, `aria-invalid="true"`)
		api := h.Do("POST", "/v1/webhooks", key, `{"url": "`+u+`", "events": ["message.created"], "secret": "0123456789abcdefghij"}`)
		if api.Status != http.StatusBadRequest {
			t.Fatalf("API accepted %s: %d", u, api.Status)
		}
		msg := api.JSON(t)["error"].(map[string]any)["message"].(string)
		if !strings.Contains(p.Body, `<p class="field-error" id="url-error">`+htmlText(msg)+`</p>`) {
			t.Errorf("%s: the page does not give the API's reason %q:\n%s", u, msg, p.Body)
		}
	}
	// A secret of the user's own is checked as the API does.
	p := h.createWebhook(t, h.Browser, "https://1.1.1.1/hook", []string{ams.EventMessageCreated}, "too short")
	wantPage(t, p, http.StatusUnprocessableEntity, "&#39;secret&#39; must be 16 to 256 characters.")
	if hooks := h.webhooksOf(t, h.User); len(hooks) != 0 {
		t.Fatalf("refused webhooks were stored: %+v", hooks)
	}
}

// htmlText is s as html/template writes it in text.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "+", "&#43;").Replace(s)
}

// TestWebhooksOtherAccountAndCSRF: another account's webhook and its
// deliveries are 404 for every page and action, and nothing changes;
// forms without a valid CSRF token are refused.
func TestWebhooksOtherAccountAndCSRF(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	ctx := context.Background()
	rc := newReceiver(t)
	bob := h.NewUser("bob@example.com", ams.PlanStandard)
	now := h.Clock.Now()
	theirs := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: bob.ID, URL: rc.URL + "/bob",
		Events: []string{ams.EventMessageCreated}, Active: true, Status: ams.WebhookActive, Secret: webhook.NewSecret(), CreatedAt: now, UpdatedAt: now}
	if err := h.Store.CreateWebhook(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if err := h.Store.PingWebhook(ctx, bob.ID, theirs.ID, webhook.PingEvent(bob.ID, theirs.ID, now)); err != nil {
		t.Fatal(err)
	}
	h.deliver(t)
	bobDlv := h.deliveries(t, bob, theirs.ID)[0]
	// Ann's own webhook, to pair with Bob's delivery.
	h.createWebhook(t, h.Browser, rc.URL+"/ann", []string{ams.EventTaskCreated}, "")
	mine := h.webhooksOf(t, h.User)[0]

	p := h.get(t, h.Browser, "/account/webhooks")
	if strings.Contains(p.Body, rc.URL+"/bob") {
		t.Fatal("Ann's list shows Bob's webhook")
	}
	csrf := h.form(t, p, "/account/webhooks/"+mine.ID+"/disable").Get("csrf_token")
	base := "/account/webhooks/" + theirs.ID
	for _, path := range []string{base, base + "/edit", "/account/webhooks/wh_nonexistent", "/account/webhooks/nothing"} {
		wantPage(t, h.get(t, h.Browser, path), http.StatusNotFound)
	}
	for _, path := range []string{base, base + "/enable", base + "/disable", base + "/ping", base + "/delete",
		base + "/deliveries/" + bobDlv.ID + "/redeliver", "/account/webhooks/" + mine.ID + "/deliveries/" + bobDlv.ID + "/redeliver"} {
		f := url.Values{"csrf_token": {csrf}, "confirm": {"yes"}, "url": {rc.URL + "/ann"}, "events": {"task.created"}}
		p := h.post(t, h.Browser, path, f)
		wantPage(t, p, http.StatusNotFound)
		if strings.Contains(p.Body, rc.URL+"/bob") {
			t.Errorf("%s: the 404 page shows Bob's URL", path)
		}
	}
	h.deliver(t)
	got, err := h.Store.FindWebhook(ctx, bob.ID, theirs.ID)
	if err != nil || got.URL != theirs.URL || !got.Active || strings.Join(got.Events, ",") != "message.created" {
		t.Fatalf("Bob's webhook changed: %+v %v", got, err)
	}
	if n := len(h.deliveries(t, bob, theirs.ID)); n != 1 {
		t.Fatalf("Bob's webhook has %d deliveries, want 1", n)
	}
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("the receiver got %d requests, want Bob's one ping", n)
	}

	// CSRF: no token, a forged one, another site's post.
	f := url.Values{"url": {rc.URL + "/x"}, "events": {"task.created"}, "secret_mode": {"generate"}}
	wantPage(t, h.post(t, h.Browser, "/account/webhooks", f), http.StatusForbidden)
	f.Set("csrf_token", "forged")
	wantPage(t, h.post(t, h.Browser, "/account/webhooks", f), http.StatusForbidden)
	f.Set("csrf_token", csrf)
	wantPage(t, h.post(t, h.Browser, "/account/webhooks", f, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"), http.StatusForbidden)
	wantPage(t, h.post(t, h.Browser, "/account/webhooks/"+mine.ID+"/delete", url.Values{"confirm": {"yes"}}), http.StatusForbidden)
	wantPage(t, h.post(t, h.Browser, "/account/webhooks/"+mine.ID+"/ping", url.Values{"csrf_token": {"forged"}}), http.StatusForbidden)
	if hooks := h.webhooksOf(t, h.User); len(hooks) != 1 || hooks[0].ID != mine.ID {
		t.Fatalf("refused posts changed Ann's webhooks: %+v", hooks)
	}
	h.deliver(t)
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("a refused ping was delivered (%d requests)", n)
	}
}

// TestWebhookDeliveryLogPages: the log shows the newest attempts first,
// a page at a time, with links to older and back to the newest.
func TestWebhookDeliveryLogPages(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	rc := newReceiver(t)
	h.createWebhook(t, h.Browser, rc.URL, []string{ams.EventTaskCreated}, "")
	wh := h.webhooksOf(t, h.User)[0]
	ctx := context.Background()
	for range 30 {
		h.Clock.Add(time.Second)
		if err := h.Store.PingWebhook(ctx, h.User.ID, wh.ID, webhook.PingEvent(h.User.ID, wh.ID, h.Clock.Now())); err != nil {
			t.Fatal(err)
		}
		h.deliver(t)
	}
	ds := h.deliveries(t, h.User, wh.ID)
	if len(ds) != 30 {
		t.Fatalf("%d deliveries", len(ds))
	}
	page := "/account/webhooks/" + wh.ID
	p := h.get(t, h.Browser, page)
	older := page + "?after=" + ds[24].ID
	wantPage(t, p, http.StatusOK, ds[0].ID, ds[24].ID, `href="`+older+`"`)
	if strings.Contains(p.Body, ds[25].ID) || strings.Count(p.Body, "/redeliver\"") != 25 {
		t.Fatal("the first page of the log is not the 25 newest attempts")
	}
	p = h.get(t, h.Browser, older)
	wantPage(t, p, http.StatusOK, ds[25].ID, ds[29].ID, `href="`+page+`">Newest attempts`)
	if strings.Contains(p.Body, ds[24].ID) || strings.Count(p.Body, "/redeliver\"") != 5 || strings.Contains(p.Body, "?after=") {
		t.Fatal("the second page of the log is not the 5 oldest attempts, without a next page")
	}
	wantPage(t, h.get(t, h.Browser, page+"?after=bogus"), http.StatusBadRequest)
}

// TestWebhookPageShowsSecretOverlap: after the secret was replaced (through
// the API), the webhook's page says until when the previous one still
// signs, and nothing once that time has passed.
func TestWebhookPageShowsSecretOverlap(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	b := h.Browser
	rc := newReceiver(t)
	h.createWebhook(t, b, rc.URL+"/a", []string{ams.EventTaskCreated}, "")
	wh := h.webhooksOf(t, h.User)[0]
	page := "/account/webhooks/" + wh.ID
	if p := h.get(t, b, page); strings.Contains(p.Body, "Previous secret") {
		t.Fatal("a webhook never rotated shows a previous secret")
	}
	secret := "a-replacement-secret-value"
	up, err := h.Store.UpdateWebhook(context.Background(), h.User.ID, wh.ID, ams.WebhookUpdate{Secret: &secret}, h.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := h.get(t, b, page)
	wantPage(t, p, http.StatusOK, "Previous secret", `datetime="`+up.PreviousSecretExpiresAt.UTC().Format(time.RFC3339)+`"`)
	if strings.Contains(p.Body, secret) || strings.Contains(p.Body, wh.Secret) {
		t.Fatal("the page shows a secret")
	}
	h.Clock.Add(ams.DefaultSecretOverlap)
	if p := h.get(t, b, page); strings.Contains(p.Body, "Previous secret") {
		t.Fatal("the previous secret is still shown after its overlap")
	}
}
