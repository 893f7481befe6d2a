package http_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// pending is how many delivery jobs wait in the queue.
func (f *fixture) pending() int64 {
	f.T.Helper()
	n, _, err := f.Store.QueueStats(context.Background(), f.Clock.Now())
	if err != nil {
		f.T.Fatal(err)
	}
	return n
}

// TestWebhookRecoverBadInput: every malformed or refused recovery is
// answered with the documented error body and queues nothing; a good one
// queues the events the webhook missed while it was disabled.
func TestWebhookRecoverBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("POST", "/v1/webhooks", `{"url":"`+hookURL+`","events":["message.created"],"secret":"0123456789abcdef"}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id, created := r.json(t)["id"].(string), r.json(t)["created_at"].(string)
	f.do("PATCH", "/v1/webhooks/"+id, `{"active": false}`)
	f.Clock.Add(time.Second)
	f.send("while it is off", "")
	f.Clock.Add(time.Second)
	f.do("PATCH", "/v1/webhooks/"+id, `{"active": true}`)
	if f.pending() != 0 {
		t.Fatalf("%d jobs pending before the recovery", f.pending())
	}
	bob := f.NewUser("bob@example.com", ams.PlanStandard)
	bobKey := f.NewKey(bob, "read,write")
	theirs := f.Do("POST", "/v1/webhooks", bobKey, `{"url":"`+hookURL+`","events":["message.created"],"secret":"0123456789abcdef"}`).JSON(t)["id"].(string)
	readOnly := f.NewKey(f.User, "read")

	now := f.Clock.Now()
	since := now.Add(-time.Hour).Format(time.RFC3339)
	path := "/v1/webhooks/" + id + "/recover"
	cases := []struct {
		name, path, body string
		hdr              []string
		status           int
		typ, code, param string
	}{
		{"malformed JSON", path, `{"since": `, nil, 400, "invalid_request_error", "invalid_json", ""},
		{"not an object", path, `["since"]`, nil, 400, "invalid_request_error", "invalid_json", ""},
		{"no since", path, `{}`, nil, 400, "invalid_request_error", "parameter_missing", "since"},
		{"null since", path, `{"since": null}`, nil, 400, "invalid_request_error", "parameter_missing", "since"},
		{"since not a time", path, `{"since": "yesterday"}`, nil, 400, "invalid_request_error", "parameter_invalid", "since"},
		{"since without zone", path, `{"since": "2026-11-21T09:00:00"}`, nil, 400, "invalid_request_error", "parameter_invalid", "since"},
		{"since a number", path, `{"since": 1763715600}`, nil, 400, "invalid_request_error", "invalid_type", "since"},
		{"until not a time", path, `{"since": "` + since + `", "until": "soon"}`, nil, 400, "invalid_request_error", "parameter_invalid", "until"},
		{"since after until", path, `{"since": "` + since + `", "until": "` + now.Add(-2*time.Hour).Format(time.RFC3339) + `"}`, nil,
			400, "invalid_request_error", "parameter_invalid", "until"},
		{"since equals until", path, `{"since": "` + since + `", "until": "` + since + `"}`, nil, 400, "invalid_request_error", "parameter_invalid", "until"},
		{"since in the future", path, `{"since": "` + now.Add(time.Minute).Format(time.RFC3339) + `"}`, nil,
			400, "invalid_request_error", "parameter_invalid", "since"},
		{"unknown field", path, `{"since": "` + since + `", "from": "x"}`, nil, 400, "invalid_request_error", "unknown_parameter", "from"},
		{"query parameter", path + "?since=" + since, `{"since": "` + since + `"}`, nil, 400, "invalid_request_error", "unknown_parameter", "since"},
		{"not JSON", path, `since=x`, []string{"Content-Type", "text/plain"}, 415, "invalid_request_error", "unsupported_media_type", ""},
		{"unknown webhook", "/v1/webhooks/wh_missing/recover", `{"since": "` + since + `"}`, nil, 404, "invalid_request_error", "resource_missing", ""},
		{"not a webhook id", "/v1/webhooks/evt_x/recover", `{"since": "` + since + `"}`, nil, 404, "invalid_request_error", "resource_missing", ""},
		{"another account's webhook", "/v1/webhooks/" + theirs + "/recover", `{"since": "` + since + `"}`, nil,
			404, "invalid_request_error", "resource_missing", ""},
		{"read-only key", path, `{"since": "` + since + `"}`, []string{"Authorization", "Bearer " + readOnly}, 403, "permission_error", "insufficient_scope", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.do("POST", c.path, c.body, c.hdr...)
			wantError(t, r, c.status, c.typ, c.code, c.param)
			if f.pending() != 0 {
				t.Fatalf("%d jobs queued", f.pending())
			}
		})
	}
	// Bob cannot recover Ann's webhook either.
	ar := f.Do("POST", path, bobKey, `{"since": "`+since+`"}`)
	r = &response{ar.Status, ar.Header, ar.Body}
	wantError(t, r, 404, "invalid_request_error", "resource_missing", "")

	// A disabled webhook is 409 webhook_inactive.
	f.do("PATCH", "/v1/webhooks/"+id, `{"active": false}`)
	wantError(t, f.do("POST", path, `{"since": "`+since+`"}`), 409, "invalid_request_error", "webhook_inactive", "")
	f.do("PATCH", "/v1/webhooks/"+id, `{"active": true}`)

	// The good request: the two events of the message sent while it was off.
	r = f.do("POST", path, `{"since": "`+since+`", "until": "`+f.Clock.Now().Format(time.RFC3339Nano)+`"}`)
	if r.status != 200 {
		t.Fatalf("recover: %d %s", r.status, r.body)
	}
	// since, an hour before the webhook existed, is clamped to its
	// creation.
	if m := r.json(t); m["object"] != "webhook_recovery" || m["webhook_id"] != id || m["queued"] != 2.0 || m["since"] != created {
		t.Fatalf("recovery: %s, want since %s (the webhook's creation)", r.body, created)
	}
	if f.pending() != 2 {
		t.Fatalf("%d jobs pending", f.pending())
	}
}

// TestWebhookLimit: an account may have 50 webhooks; the 51st is 409
// webhook_limit_reached naming the cap, and nothing is stored. An
// enterprise account's own cap applies to it.
func TestWebhookLimit(t *testing.T) {
	t.Parallel()
	f := setup(t)
	create := func(i int) *response {
		t.Helper()
		if i%40 == 0 {
			f.Clock.Add(time.Minute) // a new rate-limit minute
		}
		return f.do("POST", "/v1/webhooks", fmt.Sprintf(`{"url":"%s/%d","events":["message.created"],"secret":"0123456789abcdef"}`, hookURL, i))
	}
	for i := 0; i < ams.DefaultMaxWebhooks; i++ {
		if r := create(i); r.status != 201 {
			t.Fatalf("webhook %d: %d %s", i+1, r.status, r.body)
		}
	}
	r := create(50)
	wantError(t, r, 409, "invalid_request_error", "webhook_limit_reached", "")
	if msg := r.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "50 webhooks") {
		t.Fatalf("message %q does not name the cap", msg)
	}
	if n := f.webhookCount(); n != 50 {
		t.Fatalf("%d webhooks stored", n)
	}
	// Enterprise, with a cap of 52 of its own: two more, then refused.
	plan, max := ams.PlanEnterprise, 52
	if _, err := f.Store.UpdateUser(context.Background(), f.User.ID, ams.UserUpdate{Plan: &plan, MaxWebhooks: &max}, f.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	for i := 51; i <= 52; i++ {
		if r := create(i); r.status != 201 {
			t.Fatalf("enterprise webhook %d: %d %s", i, r.status, r.body)
		}
	}
	r = create(53)
	wantError(t, r, 409, "invalid_request_error", "webhook_limit_reached", "")
	if msg := r.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "52 webhooks") {
		t.Fatalf("message %q does not name the account's cap", msg)
	}
	// Deleting one makes room for one.
	id := f.do("GET", "/v1/webhooks?limit=1", "").json(t)["data"].([]any)[0].(map[string]any)["id"].(string)
	if r := f.do("DELETE", "/v1/webhooks/"+id, ""); r.status != 204 {
		t.Fatalf("delete: %d", r.status)
	}
	if r := create(54); r.status != 201 {
		t.Fatalf("after a delete: %d %s", r.status, r.body)
	}
}

// TestWebhookRecoverClamped (issue 31, point 7): a recovery never sends
// a webhook the events from before it existed unless the request says
// include_earlier: true; then they are queued too. A bad include_earlier
// is a 400 naming it, and queues nothing.
func TestWebhookRecoverClamped(t *testing.T) {
	t.Parallel()
	f := setup(t)
	before := f.Clock.Now()
	f.send("before the webhook", "")
	f.Clock.Add(time.Minute)
	r := f.do("POST", "/v1/webhooks", `{"url":"`+hookURL+`","events":["message.created"],"secret":"0123456789abcdef"}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id, created := r.json(t)["id"].(string), r.json(t)["created_at"].(string)
	f.Clock.Add(time.Minute)
	path := "/v1/webhooks/" + id + "/recover"
	since := ams.FormatTime(before.Add(-time.Hour))
	wantError(t, f.do("POST", path, `{"since":"`+since+`","include_earlier":"yes"}`), 400, "invalid_request_error", "invalid_type", "include_earlier")
	if f.pending() != 0 {
		t.Fatalf("%d jobs pending after a refused recovery", f.pending())
	}
	m := f.ok(200, "POST", path, `{"since":"`+since+`"}`)
	if m["queued"] != 0.0 || m["since"] != created || f.pending() != 0 {
		t.Fatalf("clamped recovery: %v (%d pending), want 0 queued since %s", m, f.pending(), created)
	}
	m = f.ok(200, "POST", path, `{"since":"`+since+`","include_earlier":true}`)
	if m["queued"] != 2.0 || m["since"] != since || f.pending() != 2 {
		t.Fatalf("recovery with include_earlier: %v (%d pending), want the 2 earlier events since %s", m, f.pending(), since)
	}
}
