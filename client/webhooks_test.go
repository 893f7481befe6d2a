package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams/client"
)

const webhookJSON = `{"id":"wh_1","object":"webhook","url":"https://example.com/hook","events":["*"],"active":true,"status":"active",` +
	`"previous_secret_expires_at":"2026-11-22T10:00:00Z","metadata":{"team":"ops"},"ordered":true,"created_at":"2026-11-21T10:00:00Z","updated_at":"2026-11-21T10:00:00Z"}`

const deliveryJSON = `{"id":"dlv_1","object":"webhook_delivery","webhook_id":"wh_1","event_id":"evt_1","event_type":"webhook.ping","attempt":1,` +
	`"url":"https://example.com/hook","success":false,"status_code":null,"duration_ms":5001,"error":"timeout","response_body":"","created_at":"2026-11-21T10:00:00Z"}`

const integrationJSON = `{"id":"int_1","object":"integration","provider":"caldav","status":"connected","config":{"url":"https://dav.example.com/cal/"},` +
	`"last_error":null,"connected_at":"2026-11-21T10:00:00Z","created_at":"2026-11-21T10:00:00Z","updated_at":"2026-11-21T10:00:00Z"}`

// TestWebhookAndIntegrationRequests checks the requests the webhook,
// delivery, integration and calendar feed methods send, and that their
// answers decode.
func TestWebhookAndIntegrationRequests(t *testing.T) {
	rc := &recorder{}
	c, _ := newTestClient(t, rc.ServeHTTP)
	ctx := context.Background()
	check := func(method, uri, body string) {
		t.Helper()
		r := rc.last(t)
		if r.method != method || r.uri != uri {
			t.Errorf("request %s %s, want %s %s", r.method, r.uri, method, uri)
		}
		if body == "" && r.body != "" {
			t.Errorf("%s %s: body %q, want none", method, uri, r.body)
		} else if body != "" {
			sameJSON(t, r.body, body)
		}
		if method == "POST" && r.idempotencyKey == "" {
			t.Errorf("%s %s without an Idempotency-Key", method, uri)
		}
	}

	rc.answer(201, webhookJSON)
	off := false
	wh, err := c.CreateWebhook(ctx, client.CreateWebhookParams{URL: "https://example.com/hook", Events: []string{client.EventTypeAll},
		Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Active: &off, Metadata: client.Metadata{"team": "ops"}, Ordered: true, IdempotencyKey: "k1"})
	if err != nil || wh.ID != "wh_1" || !wh.Ordered || wh.Events[0] != "*" || wh.Status != client.WebhookStatusActive || wh.Metadata["team"] != "ops" ||
		wh.PreviousSecretExpiresAt == nil || !wh.PreviousSecretExpiresAt.Equal(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("CreateWebhook: %+v %v", wh, err)
	}
	check("POST", "/v1/webhooks", `{"url":"https://example.com/hook","events":["*"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","active":false,"ordered":true,"metadata":{"team":"ops"}}`)
	if rc.last(t).idempotencyKey != "k1" {
		t.Errorf("Idempotency-Key %q, want k1", rc.last(t).idempotencyKey)
	}

	rc.answer(200, webhookJSON)
	secret, in, on := "a-new-secret-of-some-length", time.Hour+1500*time.Millisecond, true
	if _, err := c.UpdateWebhook(ctx, "wh_1", client.UpdateWebhookParams{Events: []string{"message.created"}, Secret: &secret, PreviousSecretExpiresIn: &in,
		Active: &on, Metadata: client.MetadataUpdate{"team": nil}}); err != nil {
		t.Fatal(err)
	}
	check("PATCH", "/v1/webhooks/wh_1", `{"events":["message.created"],"secret":"a-new-secret-of-some-length","previous_secret_expires_in":3601,"active":true,"metadata":{"team":null}}`)
	zero := time.Duration(0)
	if _, err := c.UpdateWebhook(ctx, "wh_1", client.UpdateWebhookParams{PreviousSecretExpiresIn: &zero}); err != nil {
		t.Fatal(err)
	}
	check("PATCH", "/v1/webhooks/wh_1", `{"previous_secret_expires_in":0}`)
	if _, err := c.UpdateWebhook(ctx, "wh_1", client.UpdateWebhookParams{Ordered: &off}); err != nil {
		t.Fatal(err)
	}
	check("PATCH", "/v1/webhooks/wh_1", `{"ordered":false}`)
	if _, err := c.GetWebhook(ctx, "wh_1"); err != nil {
		t.Fatal(err)
	}
	check("GET", "/v1/webhooks/wh_1", "")

	rc.answer(200, `{"object":"list","data":[`+webhookJSON+`],"first_id":"wh_1","last_id":"wh_1","has_more":false}`)
	if l, err := c.ListWebhooks(ctx, &client.ListParams{Limit: 1}); err != nil || len(l.Data) != 1 || l.Data[0].URL != "https://example.com/hook" {
		t.Fatalf("ListWebhooks: %+v %v", l, err)
	}
	check("GET", "/v1/webhooks?limit=1", "")

	rc.answer(200, `{"object":"list","data":[`+deliveryJSON+`],"first_id":"dlv_1","last_id":"dlv_1","has_more":false}`)
	l, err := c.ListWebhookDeliveries(ctx, "wh_1", &client.ListWebhookDeliveriesParams{EventID: "evt_1", ListParams: client.ListParams{Order: client.OrderAsc}})
	if err != nil || len(l.Data) != 1 {
		t.Fatalf("ListWebhookDeliveries: %+v %v", l, err)
	}
	if d := l.Data[0]; d.StatusCode != nil || d.Error == nil || *d.Error != "timeout" || d.DurationMS != 5001 || d.EventType != "webhook.ping" || d.Attempt != 1 {
		t.Errorf("delivery: %+v", d)
	}
	check("GET", "/v1/webhooks/wh_1/deliveries?event_id=evt_1&order=asc", "")
	n := 0
	for _, err := range c.AllWebhookDeliveries(ctx, "wh_1", nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("AllWebhookDeliveries: %d", n)
	}

	rc.answer(202, `{"object":"webhook_redelivery","webhook_id":"wh_1","event_id":"evt_1","delivery_id":"dlv_1","status":"queued"}`)
	if r, err := c.RedeliverWebhookDelivery(ctx, "wh_1", "dlv_1"); err != nil || r.Status != "queued" || r.EventID != "evt_1" {
		t.Fatalf("RedeliverWebhookDelivery: %+v %v", r, err)
	}
	check("POST", "/v1/webhooks/wh_1/deliveries/dlv_1/redeliver", "")

	rc.answer(202, `{"id":"evt_9","object":"event","type":"webhook.ping","created_at":"2026-11-21T10:00:00Z","data":{"webhook_id":"wh_1"}}`)
	if ev, err := c.PingWebhook(ctx, "wh_1"); err != nil || ev.Type != "webhook.ping" || ev.Data["webhook_id"] != "wh_1" {
		t.Fatalf("PingWebhook: %+v %v", ev, err)
	}
	check("POST", "/v1/webhooks/wh_1/ping", "")

	rc.answer(200, `{"object":"webhook_recovery","webhook_id":"wh_1","since":"2026-11-20T09:00:00Z","until":"2026-11-21T10:00:00Z","queued":3}`)
	since, until := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), time.Date(2026, 11, 21, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	if r, err := c.RecoverWebhook(ctx, "wh_1", client.RecoverWebhookParams{Since: since, Until: &until, IdempotencyKey: "k2"}); err != nil || r.Queued != 3 {
		t.Fatalf("RecoverWebhook: %+v %v", r, err)
	}
	check("POST", "/v1/webhooks/wh_1/recover", `{"since":"2026-11-20T09:00:00Z","until":"2026-11-21T09:00:00Z"}`)
	if rc.last(t).idempotencyKey != "k2" {
		t.Errorf("Idempotency-Key %q, want k2", rc.last(t).idempotencyKey)
	}

	rc.answer(204, "")
	if err := c.DeleteWebhook(ctx, "wh_1"); err != nil {
		t.Fatal(err)
	}
	check("DELETE", "/v1/webhooks/wh_1", "")

	// Integrations and the calendar feed.
	rc.answer(201, integrationJSON)
	in1, err := c.CreateIntegration(ctx, client.CreateIntegrationParams{Provider: client.ProviderCalDAV,
		Config: map[string]any{"url": "https://dav.example.com/cal/", "username": "ann"}, Secrets: map[string]string{"password": "pw"}})
	if err != nil || in1.ID != "int_1" || in1.Status != client.IntegrationConnected {
		t.Fatalf("CreateIntegration: %+v %v", in1, err)
	}
	check("POST", "/v1/integrations", `{"provider":"caldav","config":{"url":"https://dav.example.com/cal/","username":"ann"},"secrets":{"password":"pw"}}`)
	rc.answer(200, integrationJSON)
	if _, err := c.GetIntegration(ctx, "int_1"); err != nil {
		t.Fatal(err)
	}
	check("GET", "/v1/integrations/int_1", "")
	if _, err := c.SyncIntegration(ctx, "int_1"); err != nil {
		t.Fatal(err)
	}
	check("POST", "/v1/integrations/int_1/sync", "")
	rc.answer(204, "")
	if err := c.DeleteIntegration(ctx, "int_1"); err != nil {
		t.Fatal(err)
	}
	check("DELETE", "/v1/integrations/int_1", "")
	rc.answer(201, `{"id":"int_2","object":"calendar_feed","url":"https://ams.example.com/calendar/feed/ams_cf_x.ics","created_at":"2026-11-21T10:00:00Z"}`)
	if f, err := c.CreateCalendarFeed(ctx); err != nil || f.ID != "int_2" || f.URL == "" {
		t.Fatalf("CreateCalendarFeed: %+v %v", f, err)
	}
	check("POST", "/v1/calendar/feed", "")

	// An empty id sends nothing.
	before := rc.count()
	if _, err := c.PingWebhook(ctx, ""); err == nil {
		t.Error("PingWebhook with no id")
	}
	if _, err := c.RedeliverWebhookDelivery(ctx, "wh_1", ""); err == nil {
		t.Error("RedeliverWebhookDelivery with no delivery id")
	}
	if _, err := c.ListWebhookDeliveries(ctx, "", nil); err == nil {
		t.Error("ListWebhookDeliveries with no id")
	}
	if _, err := c.SyncIntegration(ctx, ""); err == nil {
		t.Error("SyncIntegration with no id")
	}
	if rc.count() != before {
		t.Errorf("%d requests sent for empty ids", rc.count()-before)
	}
}
