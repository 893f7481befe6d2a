package http_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

func (f *fixture) webhookCount() int {
	f.T.Helper()
	p, err := f.Store.ListWebhooks(context.Background(), f.User.ID, ams.ListParams{Limit: 100})
	if err != nil {
		f.T.Fatal(err)
	}
	return len(p.Data)
}

const hookURL = "http://127.0.0.1:9/hook" // dev-mode fixture: loopback http allowed

func TestWebhookCRUD(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("POST", "/v1/webhooks", `{"url":"`+hookURL+`","events":["task.created","message.created","message.created"],"secret":"0123456789abcdef"}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	w := r.json(t)
	id := w["id"].(string)
	if r.header.Get("Location") != "/v1/webhooks/"+id || w["object"] != "webhook" || w["active"] != true || w["status"] != "active" ||
		len(w["events"].([]any)) != 2 || w["events"].([]any)[0] != "message.created" || strings.Contains(string(r.body), "0123456789abcdef") {
		t.Fatalf("created: %s", r.body)
	}
	if g := f.do("GET", "/v1/webhooks/"+id, "").json(t); g["url"] != hookURL || g["secret"] != nil {
		t.Fatalf("get: %v", g)
	}
	if l := f.do("GET", "/v1/webhooks", "").json(t); len(l["data"].([]any)) != 1 {
		t.Fatalf("list: %v", l)
	}
	u := f.do("PATCH", "/v1/webhooks/"+id, `{"events":["task.completed"],"active":false,"secret":"another-secret-value"}`).json(t)
	if u["active"] != false || u["events"].([]any)[0] != "task.completed" || len(u["events"].([]any)) != 1 {
		t.Fatalf("patch: %v", u)
	}
	stored, _ := f.Store.FindWebhook(context.Background(), f.User.ID, id)
	if stored.Secret != "another-secret-value" {
		t.Fatal("secret not replaced")
	}
	if d := f.do("DELETE", "/v1/webhooks/"+id, ""); d.status != 204 || len(d.body) != 0 {
		t.Fatalf("delete: %d %s", d.status, d.body)
	}
	wantError(t, f.do("GET", "/v1/webhooks/"+id, ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("DELETE", "/v1/webhooks/"+id, ""), 404, "invalid_request_error", "resource_missing", "")
}

func TestWebhookBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ok := `"url":"` + hookURL + `","events":["message.created"],"secret":"0123456789abcdef"`
	cases := []struct{ name, body, code, param string }{
		{"missing url", `{"events":["message.created"],"secret":"0123456789abcdef"}`, "parameter_missing", "url"},
		{"missing events", `{"url":"` + hookURL + `","secret":"0123456789abcdef"}`, "parameter_missing", "events"},
		{"missing secret", `{"url":"` + hookURL + `","events":["message.created"]}`, "parameter_missing", "secret"},
		{"empty events", `{"url":"` + hookURL + `","events":[],"secret":"0123456789abcdef"}`, "parameter_invalid", "events"},
		{"unknown event", `{"url":"` + hookURL + `","events":["message.sent"],"secret":"0123456789abcdef"}`, "parameter_invalid", "events"},
		{"ping not subscribable", `{"url":"` + hookURL + `","events":["webhook.ping"],"secret":"0123456789abcdef"}`, "parameter_invalid", "events"},
		{"short secret", `{"url":"` + hookURL + `","events":["message.created"],"secret":"short"}`, "parameter_invalid", "secret"},
		{"control char in secret", `{"url":"` + hookURL + `","events":["message.created"],"secret":"0123456789\nabcdef"}`, "parameter_invalid", "secret"},
		{"not a url", `{"url":"not a url","events":["message.created"],"secret":"0123456789abcdef"}`, "parameter_invalid", "url"},
		{"ftp url", `{"url":"ftp://example.com/x","events":["message.created"],"secret":"0123456789abcdef"}`, "parameter_invalid", "url"},
		{"credentials in url", `{"url":"http://user:pw@127.0.0.1/x","events":["message.created"],"secret":"0123456789abcdef"}`, "parameter_invalid", "url"},
		{"unknown field", `{` + ok + `,"colour":"red"}`, "unknown_parameter", "colour"},
		{"events not array", `{"url":"` + hookURL + `","events":"message.created","secret":"0123456789abcdef"}`, "invalid_type", "events"},
		{"active not bool", `{` + ok + `,"active":"yes"}`, "invalid_type", "active"},
		{"malformed", `{` + ok, "invalid_json", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, f.do("POST", "/v1/webhooks", c.body), 400, "invalid_request_error", c.code, c.param)
			if n := f.webhookCount(); n != 0 {
				t.Fatalf("%d webhooks stored", n)
			}
		})
	}
	wantError(t, f.do("POST", "/v1/webhooks", "url=x", "Content-Type", "application/x-www-form-urlencoded"), 415, "invalid_request_error", "unsupported_media_type", "")
	// A read-only key cannot create, change or ping.
	ro := f.NewKey(f.User, "read,messages")
	wantError(t, f.do("POST", "/v1/webhooks", `{`+ok+`}`, "Authorization", "Bearer "+ro), 403, "permission_error", "insufficient_scope", "")
	r := f.do("POST", "/v1/webhooks", `{`+ok+`}`)
	id := r.json(t)["id"].(string)
	before := f.do("GET", "/v1/webhooks/"+id, "").body
	for _, c := range []struct{ body, code, param string }{
		{`{"events":[]}`, "parameter_invalid", "events"},
		{`{"secret":"x"}`, "parameter_invalid", "secret"},
		{`{"url":"gopher://x"}`, "parameter_invalid", "url"},
		{`{"active":null,"nope":1}`, "unknown_parameter", "nope"},
	} {
		wantError(t, f.do("PATCH", "/v1/webhooks/"+id, c.body), 400, "invalid_request_error", c.code, c.param)
	}
	wantError(t, f.do("PATCH", "/v1/webhooks/"+id, `{"active":false}`, "Authorization", "Bearer "+ro), 403, "permission_error", "insufficient_scope", "")
	if after := f.do("GET", "/v1/webhooks/"+id, "").body; string(after) != string(before) {
		t.Fatalf("refused PATCHes changed the webhook:\n%s\n%s", before, after)
	}
	// Another account's webhook does not exist for this one.
	bob := f.NewUser("bob@example.com", ams.PlanStandard)
	bobKey := f.NewKey(bob, "read,write")
	for _, m := range []struct{ method, path, body string }{
		{"GET", "/v1/webhooks/" + id, ""},
		{"PATCH", "/v1/webhooks/" + id, `{"active":false}`},
		{"DELETE", "/v1/webhooks/" + id, ""},
		{"POST", "/v1/webhooks/" + id + "/ping", ""},
		{"GET", "/v1/webhooks/" + id + "/deliveries", ""},
		{"POST", "/v1/webhooks/" + id + "/deliveries/dlv_x/redeliver", ""},
	} {
		wantError(t, f.do(m.method, m.path, m.body, "Authorization", "Bearer "+bobKey), 404, "invalid_request_error", "resource_missing", "")
	}
	if l := f.do("GET", "/v1/webhooks", "", "Authorization", "Bearer "+bobKey).json(t); len(l["data"].([]any)) != 0 {
		t.Fatal("another account lists the webhook")
	}
	wantError(t, f.do("POST", "/v1/webhooks/"+id+"/deliveries/dlv_unknown/redeliver", ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("POST", "/v1/webhooks/"+id+"/ping", `{"extra":1}`), 400, "invalid_request_error", "unknown_parameter", "extra")
	wantError(t, f.do("GET", "/v1/webhooks/"+id+"/deliveries?event_id=msg_1", ""), 400, "invalid_request_error", "parameter_invalid", "event_id")
	if after := f.do("GET", "/v1/webhooks/"+id, "").body; string(after) != string(before) {
		t.Fatal("another account changed the webhook")
	}
}

func TestWebhookURLRulesOutsideDev(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.Webhooks.Guard.AllowPrivate = false
	for _, u := range []string{"http://example.com/hook", "https://127.0.0.1/hook", "https://10.0.0.1/hook", "https://[::1]/hook", "https://169.254.169.254/"} {
		wantError(t, f.do("POST", "/v1/webhooks", `{"url":"`+u+`","events":["message.created"],"secret":"0123456789abcdef"}`),
			400, "invalid_request_error", "parameter_invalid", "url")
	}
	if n := f.webhookCount(); n != 0 {
		t.Fatalf("%d webhooks stored", n)
	}
}

// TestWebhookSecretRotation: PATCH "secret" keeps the replaced secret
// signing for 24 h, or previous_secret_expires_in seconds (0 to 7 days);
// the record shows previous_secret_expires_at, never a secret; a value out
// of range (or the field on POST, or without a secret to overlap) is a 400
// naming the field and changes nothing.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("POST", "/v1/webhooks", `{"url":"`+hookURL+`","events":["message.created"],"secret":"0123456789abcdef"}`)
	w := r.json(t)
	id := w["id"].(string)
	if v, ok := w["previous_secret_expires_at"]; !ok || v != nil {
		t.Fatalf("a new webhook: %s", r.body)
	}
	ts := func(d time.Duration) string { return ams.FormatTime(f.Clock.Now().Add(d)) }
	stored := func() *ams.Webhook {
		t.Helper()
		wh, err := f.Store.FindWebhook(context.Background(), f.User.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		return wh
	}
	// Without a previous secret, the field alone is refused.
	wantError(t, f.do("PATCH", "/v1/webhooks/"+id, `{"previous_secret_expires_in":60}`), 400, "invalid_request_error", "parameter_invalid", "previous_secret_expires_in")
	// Default: 24 h.
	u := f.do("PATCH", "/v1/webhooks/"+id, `{"secret":"second-secret-value"}`)
	if u.status != 200 || u.json(t)["previous_secret_expires_at"] != ts(24*time.Hour) || strings.Contains(string(u.body), "0123456789abcdef") ||
		strings.Contains(string(u.body), "second-secret-value") {
		t.Fatalf("rotate: %d %s", u.status, u.body)
	}
	if wh := stored(); wh.Secret != "second-secret-value" || wh.PreviousSecret != "0123456789abcdef" {
		t.Fatalf("stored: %q %q", wh.Secret, wh.PreviousSecret)
	}
	before := f.do("GET", "/v1/webhooks/"+id, "").body
	for _, c := range []struct{ body, code, param string }{
		{`{"secret":"third-secret-value","previous_secret_expires_in":-1}`, "parameter_invalid", "previous_secret_expires_in"},
		{`{"secret":"third-secret-value","previous_secret_expires_in":604801}`, "parameter_invalid", "previous_secret_expires_in"},
		{`{"secret":"third-secret-value","previous_secret_expires_in":"1h"}`, "invalid_type", "previous_secret_expires_in"},
		{`{"secret":"third-secret-value","previous_secret_expires_in":1.5}`, "invalid_type", "previous_secret_expires_in"},
		{`{"secret":"short","previous_secret_expires_in":60}`, "parameter_invalid", "secret"},
	} {
		wantError(t, f.do("PATCH", "/v1/webhooks/"+id, c.body), 400, "invalid_request_error", c.code, c.param)
	}
	if after := f.do("GET", "/v1/webhooks/"+id, "").body; string(after) != string(before) || stored().Secret != "second-secret-value" {
		t.Fatalf("refused PATCHes changed the webhook:\n%s\n%s", before, after)
	}
	// The most: 7 days; rotating again keeps only the secret just replaced.
	u = f.do("PATCH", "/v1/webhooks/"+id, `{"secret":"third-secret-value","previous_secret_expires_in":604800}`)
	if u.status != 200 || u.json(t)["previous_secret_expires_at"] != ts(7*24*time.Hour) {
		t.Fatalf("7 days: %d %s", u.status, u.body)
	}
	if wh := stored(); wh.Secret != "third-secret-value" || wh.PreviousSecret != "second-secret-value" {
		t.Fatalf("stored: %q %q", wh.Secret, wh.PreviousSecret)
	}
	// Without a secret: a new end for the overlap; 0 ends it now.
	if g := f.do("PATCH", "/v1/webhooks/"+id, `{"previous_secret_expires_in":3600}`).json(t); g["previous_secret_expires_at"] != ts(time.Hour) {
		t.Fatalf("shortened: %v", g)
	}
	f.Clock.Add(time.Hour)
	if g := f.do("GET", "/v1/webhooks/"+id, "").json(t); g["previous_secret_expires_at"] != nil {
		t.Fatalf("after its end: %v", g)
	}
	// 0: cut over at once.
	u = f.do("PATCH", "/v1/webhooks/"+id, `{"secret":"fourth-secret-value","previous_secret_expires_in":0}`)
	if u.status != 200 || u.json(t)["previous_secret_expires_at"] != nil || stored().PreviousSecret != "" {
		t.Fatalf("cut over: %d %s", u.status, u.body)
	}
	// Not on creation.
	wantError(t, f.do("POST", "/v1/webhooks", `{"url":"`+hookURL+`","events":["message.created"],"secret":"0123456789abcdef","previous_secret_expires_in":60}`),
		400, "invalid_request_error", "parameter_invalid", "previous_secret_expires_in")
	if n := f.webhookCount(); n != 1 {
		t.Fatalf("%d webhooks", n)
	}
}

// TestWebhookSubscribeToAll: "*" subscribes a webhook to every event type
// (shown as ["*"] however it was listed), an unknown type beside it is
// still refused, and a PATCH can narrow it again.
func TestWebhookSubscribeToAll(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("POST", "/v1/webhooks", `{"url":"`+hookURL+`","events":["task.created","*"],"secret":"0123456789abcdef"}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	w := r.json(t)
	if ev := w["events"].([]any); len(ev) != 1 || ev[0] != "*" {
		t.Fatalf("events %v, want [*]", ev)
	}
	id := w["id"].(string)
	wantError(t, f.do("POST", "/v1/webhooks", `{"url":"`+hookURL+`","events":["*","task.exploded"],"secret":"0123456789abcdef"}`), 400, "invalid_request_error", "parameter_invalid", "events")
	if n := f.webhookCount(); n != 1 {
		t.Fatalf("%d webhooks after the refusal, want 1", n)
	}
	// Every event of the account is queued for it, an addition included.
	task := f.do("POST", "/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"Call Ann"}`).json(t)
	if d := f.do("DELETE", "/v1/tasks/"+task["id"].(string), ""); d.status != 204 {
		t.Fatalf("delete task: %d %s", d.status, d.body)
	}
	jobs, err := f.Store.ClaimJobs(context.Background(), f.Clock.Now().Add(time.Hour), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 10})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, j := range jobs {
		types = append(types, j.Event.Type)
	}
	if strings.Join(types, ",") != "task.created,task.deleted" {
		t.Fatalf("queued for the webhook subscribed to all: %v, want task.created, task.deleted", types)
	}
	if u := f.do("PATCH", "/v1/webhooks/"+id, `{"events":["task.completed"]}`).json(t); len(u["events"].([]any)) != 1 || u["events"].([]any)[0] != "task.completed" {
		t.Fatalf("patch: %v", u)
	}
}
