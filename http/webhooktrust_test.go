package http_test

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/amsdev/ams"
)

// TestWebhookFilterAndPayload: filter and payload on create, get and
// update; each bad filter or payload is a 400 naming its field, and
// stores nothing.
func TestWebhookFilterAndPayload(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ast := f.Assistant.ID
	r := f.do("POST", "/v1/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"],"secret":"0123456789abcdef","payload":"thin","filter":{"assistant_id":%q,"metadata.team":"billing"}}`, hookURL, ast))
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	w := r.json(t)
	id := w["id"].(string)
	fl, _ := w["filter"].(map[string]any)
	if w["payload"] != "thin" || fl["assistant_id"] != ast || fl["metadata.team"] != "billing" || len(fl) != 2 || w["summary"] != nil {
		t.Fatalf("created: %s", r.body)
	}
	g := f.do("GET", "/v1/webhooks/"+id, "").json(t)
	if sum, _ := g["summary"].(map[string]any); sum["attempts"] != 0.0 || sum["success_rate"] != nil || sum["window_hours"] != 24.0 {
		t.Fatalf("summary of a new webhook: %v", g["summary"])
	}
	// A PATCH replaces the filter, and null removes it.
	conv := ams.NewID(ams.PrefixConversation)
	p := f.do("PATCH", "/v1/webhooks/"+id, fmt.Sprintf(`{"filter":{"conversation_id":%q},"payload":"full"}`, conv)).json(t)
	if fl, _ := p["filter"].(map[string]any); len(fl) != 1 || fl["conversation_id"] != conv || p["payload"] != "full" {
		t.Fatalf("patched: %v", p)
	}
	if p := f.do("PATCH", "/v1/webhooks/"+id, `{"filter":null}`).json(t); len(p["filter"].(map[string]any)) != 0 {
		t.Fatalf("filter removed: %v", p)
	}
	if l := f.do("GET", "/v1/webhooks", "").json(t); l["data"].([]any)[0].(map[string]any)["summary"] != nil {
		t.Fatalf("list: %v", l)
	}

	ok := fmt.Sprintf(`"url":%q,"events":["message.created"],"secret":"0123456789abcdef"`, hookURL)
	bad := []struct{ name, fields, param string }{
		{"unknown filter field", `"filter":{"direction":"inbound"}`, "filter.direction"},
		{"filter on content", `"filter":{"content":"hi"}`, "filter.content"},
		{"filter not an object", `"filter":["assistant_id"]`, "filter"},
		{"filter value not a string", `"filter":{"assistant_id":7}`, "filter.assistant_id"},
		{"assistant filter of another kind", `"filter":{"assistant_id":"conv_1"}`, "filter.assistant_id"},
		{"conversation filter of another kind", `"filter":{"conversation_id":"ast_1"}`, "filter.conversation_id"},
		{"empty metadata key", `"filter":{"metadata.":"x"}`, "filter.metadata."},
		{"empty metadata value", `"filter":{"metadata.team":""}`, "filter.metadata.team"},
		{"unknown payload", `"payload":"summary"`, "payload"},
		{"payload not a string", `"payload":true`, "payload"},
	}
	before := f.do("GET", "/v1/webhooks/"+id, "").body
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, f.do("POST", "/v1/webhooks", `{`+ok+`,`+c.fields+`}`), 400, "invalid_request_error", map[bool]string{true: "invalid_type", false: "parameter_invalid"}[c.name == "payload not a string"], c.param)
			if n := f.webhookCount(); n != 1 {
				t.Fatalf("%d webhooks stored", n)
			}
			wantError(t, f.do("PATCH", "/v1/webhooks/"+id, `{`+c.fields+`}`), 400, "invalid_request_error", map[bool]string{true: "invalid_type", false: "parameter_invalid"}[c.name == "payload not a string"], c.param)
		})
	}
	if after := f.do("GET", "/v1/webhooks/"+id, "").body; string(after) != string(before) {
		t.Fatalf("refused PATCHes changed the webhook:\n%s\n%s", before, after)
	}
}

// TestTriggeredEventsMatchSchema (issue 32): a test event of every type,
// as POST /v1/events/trigger answers it and as a page of GET /v1/events
// lists it, validates against openapi.json's Event, and says test: true.
func TestTriggeredEventsMatchSchema(t *testing.T) {
	t.Parallel()
	f := setup(t)
	u := f.NewUser("trigger@example.com", ams.PlanEnterprise)
	c := newAnswerChecker(t, f, f.NewKey(u, "read,write,admin"))
	var ids []string
	for _, typ := range ams.EventTypes {
		e := c.ok(201, "POST", "/v1/events/trigger", "/v1/events/trigger", fmt.Sprintf(`{"type":%q}`, typ))
		if e["test"] != true || e["type"] != typ {
			t.Fatalf("%s: %v", typ, e)
		}
		data, _ := e["data"].(map[string]any)
		if len(data) < 2 || data["test"] != nil {
			t.Fatalf("%s: data %v", typ, data)
		}
		ids = append(ids, e["id"].(string))
	}
	var listed []string
	after := ""
	for {
		path := "/v1/events?order=asc&limit=10"
		if after != "" {
			path += "&after=" + url.QueryEscape(after)
		}
		page := c.ok(200, "GET", "/v1/events", path, "")
		for _, e := range page["data"].([]any) {
			listed = append(listed, e.(map[string]any)["id"].(string))
		}
		if page["has_more"] != true {
			break
		}
		after = page["last_id"].(string)
	}
	for _, id := range ids {
		if !slices.Contains(listed, id) {
			t.Fatalf("event %s not listed", id)
		}
	}
	// A real event has no test field.
	if r := f.do("POST", "/v1/messages", fmt.Sprintf(`{"assistant_id":%q,"message":"hi"}`, f.Assistant.ID)); r.status != 201 {
		t.Fatalf("send: %d", r.status)
	}
	for _, e := range f.do("GET", "/v1/events", "").json(t)["data"].([]any) {
		if _, ok := e.(map[string]any)["test"]; ok {
			t.Fatalf("a real event has test: %v", e)
		}
	}
}
