package pages_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/amsdev/ams"
)

// TestWebhookFilterPayloadAndSummaryPage: the form sets a webhook's
// filter and payload (a bad filter is a form error naming it, and saves
// nothing); its page shows them with the summary of its last 24 hours.
func TestWebhookFilterPayloadAndSummaryPage(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	b := h.Browser
	rc := newReceiver(t)
	ast := ams.NewID(ams.PrefixAssistant)
	f := h.form(t, h.get(t, b, "/account/webhooks/new"), "/account/webhooks")
	f.Set("url", rc.URL)
	f["events"] = []string{ams.EventMessageCreated}
	f.Set("filter_assistant_id", ast)
	f.Set("filter_metadata", "team=billing\n region = eu ")
	f.Set("payload", "thin")
	p := h.post(t, b, "/account/webhooks", f)
	wantPage(t, p, http.StatusOK, "Webhook created", "Thin: ids only", "assistant <code>"+ast+"</code>", "metadata <code>region=eu</code>",
		"metadata <code>team=billing</code>", "No delivery attempts.")
	wh := h.webhooksOf(t, h.User)[0]
	if wh.Payload != ams.PayloadThin || wh.Filter.AssistantID != ast || wh.Filter.Metadata["team"] != "billing" || wh.Filter.Metadata["region"] != "eu" {
		t.Fatalf("stored %+v", wh)
	}
	edit := "/account/webhooks/" + wh.ID
	e := h.get(t, b, edit+"/edit")
	wantPage(t, e, http.StatusOK, `value="`+ast+`"`, "region=eu\nteam=billing", `value="thin" checked`)
	g := h.form(t, e, edit)
	g.Set("filter_assistant_id", "conv_nope")
	wantPage(t, h.post(t, b, edit, g), http.StatusUnprocessableEntity, "There is a problem", "must be an assistant id")
	if got, _ := h.Store.FindWebhook(context.Background(), h.User.ID, wh.ID); got.Filter.AssistantID != ast {
		t.Fatalf("a refused edit changed the filter: %+v", got.Filter)
	}
	// Cleared and full again; a ping makes one attempt of the summary.
	g = h.form(t, e, edit)
	g.Set("filter_assistant_id", "")
	g.Set("filter_metadata", "")
	g.Set("payload", "full")
	wantPage(t, h.post(t, b, edit, g), http.StatusOK, "Webhook saved.", "every event of its types", "Full: the record")
	pg := h.get(t, b, edit)
	h.post(t, b, edit+"/ping", h.form(t, pg, edit+"/ping"))
	h.deliver(t)
	wantPage(t, h.get(t, b, edit), http.StatusOK, "1 attempt, 1 succeeded (100.0%)")
}
