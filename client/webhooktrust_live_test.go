package client_test

import (
	"context"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/client"
)

// TestWebhookFilterPayloadLive: the Go client sets a webhook's filter and
// payload, reads them and its summary back, and replaces them, on both
// engines; a triggered event says Test.
func TestWebhookFilterPayloadLive(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			f := liveFixture(t, engine)
			c := client.New(f.Server.URL, f.Key)
			ctx := context.Background()
			w, err := c.CreateWebhook(ctx, client.CreateWebhookParams{URL: "http://127.0.0.1:9/hook", Events: []string{client.EventTypeAll},
				Secret: "0123456789abcdef", Payload: client.WebhookPayloadThin,
				Filter: map[string]string{client.FilterAssistantID: f.Assistant.ID, client.FilterMetadata("team"): "billing"}})
			if err != nil {
				t.Fatal(err)
			}
			if w.Payload != client.WebhookPayloadThin || w.Filter["assistant_id"] != f.Assistant.ID || w.Filter["metadata.team"] != "billing" || w.Summary != nil {
				t.Fatalf("created %+v", w)
			}
			g, err := c.GetWebhook(ctx, w.ID)
			if err != nil || g.Summary == nil || g.Summary.WindowHours != 24 || g.Summary.Attempts != 0 || g.Summary.SuccessRate != nil {
				t.Fatalf("get %+v %v", g, err)
			}
			full := client.WebhookPayloadFull
			u, err := c.UpdateWebhook(ctx, w.ID, client.UpdateWebhookParams{Filter: map[string]string{}, Payload: &full})
			if err != nil || len(u.Filter) != 0 || u.Payload != full {
				t.Fatalf("update %+v %v", u, err)
			}
			_, err = c.UpdateWebhook(ctx, w.ID, client.UpdateWebhookParams{Filter: map[string]string{"direction": "inbound"}})
			if e, ok := err.(*client.Error); !ok || e.Param != "filter.direction" || e.StatusCode != 400 {
				t.Fatalf("bad filter: %v", err)
			}
			ev, err := c.TriggerEvent(ctx, ams.EventWebhookDegraded)
			if err != nil || !ev.Test || ev.Data["webhook_id"] == nil || ev.Data["failed_attempts"] != 3.0 {
				t.Fatalf("trigger %+v %v", ev, err)
			}
		})
	}
}
