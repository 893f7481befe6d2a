package http_test

import (
	"context"
	"testing"
)

// TestWebhookOrdered: ordered is set at creation, shown, changed by
// PATCH, and a value that is not a boolean is refused naming it, storing
// nothing.
func TestWebhookOrdered(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ok := `"url":"` + hookURL + `","events":["message.created"],"secret":"0123456789abcdef"`
	for _, body := range []string{`{` + ok + `,"ordered":"yes"}`, `{` + ok + `,"ordered":1}`} {
		wantError(t, f.do("POST", "/v1/webhooks", body), 400, "invalid_request_error", "invalid_type", "ordered")
		if n := f.webhookCount(); n != 0 {
			t.Fatalf("%d webhooks stored", n)
		}
	}
	plain := f.do("POST", "/v1/webhooks", `{`+ok+`}`).json(t)
	if plain["ordered"] != false {
		t.Fatalf("a webhook created without ordered: %v", plain)
	}
	r := f.do("POST", "/v1/webhooks", `{`+ok+`,"ordered":true}`)
	if r.status != 201 || r.json(t)["ordered"] != true {
		t.Fatalf("create ordered: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	if g := f.do("GET", "/v1/webhooks/"+id, "").json(t); g["ordered"] != true {
		t.Fatalf("get: %v", g)
	}
	before := f.do("GET", "/v1/webhooks/"+id, "").body
	wantError(t, f.do("PATCH", "/v1/webhooks/"+id, `{"ordered":"no"}`), 400, "invalid_request_error", "invalid_type", "ordered")
	if after := f.do("GET", "/v1/webhooks/"+id, "").body; string(after) != string(before) {
		t.Fatalf("a refused PATCH changed the webhook:\n%s\n%s", before, after)
	}
	if u := f.do("PATCH", "/v1/webhooks/"+id, `{"ordered":false}`).json(t); u["ordered"] != false {
		t.Fatalf("patch: %v", u)
	}
	if w, err := f.Store.FindWebhook(context.Background(), f.User.ID, id); err != nil || w.Ordered {
		t.Fatalf("stored: %+v %v", w, err)
	}
}
