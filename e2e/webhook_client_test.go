package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/client/webhook"
	"github.com/amsdev/ams/internal/testing/wait"
)

// TestClientWebhooksAgainstAmsServe drives the Go SDK against a real
// `ams serve --dev` process: a webhook created with the client is pinged,
// the server's own worker delivers it, and the receiver verifies the
// delivery with package client/webhook on the real clock; the delivery is
// then listed and redelivered, the calendar feed is created and read, and
// the served OpenAPI document is fetched.
func TestClientWebhooksAgainstAmsServe(t *testing.T) {
	s := startServe(t, t.TempDir())
	c := client.New(s.base, s.field(t, `API key\s+(ams_sk_\w+)`))
	ctx := context.Background()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

	var mu sync.Mutex
	var accepted []string
	var verifyErrs []error
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev, err := webhook.ConstructEvent(body, r.Header, secret)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			verifyErrs = append(verifyErrs, err)
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		// X-Service-Signature verifies as well.
		if err := webhook.VerifySignature(body, r.Header.Get("X-Service-Signature"), secret); err != nil {
			verifyErrs = append(verifyErrs, err)
		}
		accepted = append(accepted, ev.ID)
	}))
	defer rc.Close()
	received := func(n int) []string {
		t.Helper()
		var got []string
		wait.Until(func() bool {
			mu.Lock()
			var errs []error
			got, errs = append([]string(nil), accepted...), verifyErrs
			mu.Unlock()
			if len(errs) > 0 {
				t.Fatalf("the receiver refused a delivery: %v", errs)
			}
			return len(got) >= n
		})
		return got
	}

	wh, err := c.CreateWebhook(ctx, client.CreateWebhookParams{URL: rc.URL + "/hook", Events: []string{client.EventTypeAll}, Secret: secret})
	if err != nil || !slices.Equal(wh.Events, []string{"*"}) {
		t.Fatalf("CreateWebhook: %+v %v", wh, err)
	}
	ping, err := c.PingWebhook(ctx, wh.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := received(1); len(got) != 1 || got[0] != ping.ID {
		t.Fatalf("receiver accepted %v, want the ping %s", got, ping.ID)
	}
	// The attempt is recorded just after the answer: wait for it.
	var dl *client.List[client.WebhookDelivery]
	wait.Until(func() bool {
		dl, err = c.ListWebhookDeliveries(ctx, wh.ID, &client.ListWebhookDeliveriesParams{EventID: ping.ID})
		return err != nil || len(dl.Data) > 0
	})
	if err != nil || len(dl.Data) != 1 || !dl.Data[0].Success {
		t.Fatalf("ListWebhookDeliveries: %+v %v", dl, err)
	}
	if _, err := c.RedeliverWebhookDelivery(ctx, wh.ID, dl.Data[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := received(2); len(got) != 2 || got[1] != ping.ID {
		t.Fatalf("after the redelivery the receiver accepted %v", got)
	}
	if err := c.DeleteWebhook(ctx, wh.ID); err != nil {
		t.Fatal(err)
	}

	feed, err := c.CreateCalendarFeed(ctx)
	if err != nil || !strings.HasPrefix(feed.URL, s.base+"/") {
		t.Fatalf("CreateCalendarFeed: %+v %v (base %s)", feed, err, s.base)
	}
	resp, err := http.Get(feed.URL)
	if err != nil {
		t.Fatal(err)
	}
	ics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/calendar") || !strings.Contains(string(ics), "BEGIN:VCALENDAR") {
		t.Fatalf("feed: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), ics)
	}

	raw, err := c.GetOpenAPIDocument(ctx)
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err != nil || json.Unmarshal(raw, &doc) != nil || !strings.HasPrefix(doc.OpenAPI, "3.1") || doc.Paths["/v1/webhooks"] == nil {
		t.Fatalf("GetOpenAPIDocument: %.200s %v", raw, err)
	}
}
