package http_test

import (
	"strings"
	"testing"
	"time"
)

func (f *fixture) assistantCount() int {
	f.T.Helper()
	return len(f.ok(200, "GET", "/v1/assistants?limit=100", "")["data"].([]any))
}

func TestAssistantLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.create("/v1/assistants", `{"name":"  Travel helper ","description":"Plans trips.","instructions":"Answer briefly."}`)
	id := a["id"].(string)
	if !strings.HasPrefix(id, "ast_") || a["object"] != "assistant" || a["name"] != "Travel helper" || a["description"] != "Plans trips." ||
		a["instructions"] != "Answer briefly." || a["model"] != "builtin" || a["created_at"] != "2026-11-21T10:00:00.000Z" || a["updated_at"] != a["created_at"] {
		t.Fatalf("created: %v", a)
	}
	sameRecord(t, f.ok(200, "GET", "/v1/assistants/"+id, ""), a)
	if got := ids(f.ok(200, "GET", "/v1/assistants", "")); len(got) != 2 || got[0] != id {
		t.Fatalf("list: %v", got)
	}
	// It answers messages.
	if r := f.ok(201, "POST", "/v1/messages", `{"assistant_id":"`+id+`","message":"hello"}`); r["assistant_id"] != id {
		t.Fatalf("reply: %v", r)
	}

	f.Clock.Add(time.Minute)
	u := f.ok(200, "PATCH", "/v1/assistants/"+id, `{"name":"Trips","description":null,"model":"gpt-4o-mini"}`)
	if u["name"] != "Trips" || u["description"] != "" || u["instructions"] != "Answer briefly." || u["model"] != "gpt-4o-mini" ||
		u["updated_at"] != "2026-11-21T10:01:00.000Z" || u["created_at"] != a["created_at"] {
		t.Fatalf("patched: %v", u)
	}
	// Nothing to change: updated_at stays.
	f.Clock.Add(time.Minute)
	same := f.ok(200, "PATCH", "/v1/assistants/"+id, `{"name":"Trips"}`)
	sameRecord(t, same, u)
	if m := f.ok(200, "PATCH", "/v1/assistants/"+id, `{"model":null}`); m["model"] != "builtin" {
		t.Fatalf("model null: %v", m)
	}

	// A task of the assistant outlives it.
	task := f.create("/v1/tasks", `{"assistant_id":"`+id+`","title":"Book hotel"}`)
	f.ok(204, "DELETE", "/v1/assistants/"+id, "")
	wantError(t, f.do("GET", "/v1/assistants/"+id, ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("PATCH", "/v1/assistants/"+id, `{"name":"x"}`), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("DELETE", "/v1/assistants/"+id, ""), 404, "invalid_request_error", "resource_missing", "")
	wantError(t, f.do("POST", "/v1/messages", `{"assistant_id":"`+id+`","message":"hello"}`), 404, "invalid_request_error", "resource_missing", "assistant_id")
	wantError(t, f.do("POST", "/v1/tasks", `{"assistant_id":"`+id+`","title":"x"}`), 404, "invalid_request_error", "resource_missing", "assistant_id")
	wantError(t, f.do("POST", "/v1/assistants/"+id+"/actions", `{"type":"list_tasks"}`), 404, "invalid_request_error", "resource_missing", "id")
	if got := ids(f.ok(200, "GET", "/v1/assistants", "")); len(got) != 1 || got[0] != f.Assistant.ID {
		t.Fatalf("list after delete: %v", got)
	}
	sameRecord(t, f.ok(200, "GET", "/v1/tasks/"+task["id"].(string), ""), task)
}

func TestAssistantBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cases := []struct {
		name, body, code, param string
	}{
		{"missing name", `{"description":"d"}`, "parameter_missing", "name"},
		{"null name", `{"name":null}`, "parameter_missing", "name"},
		{"blank name", `{"name":"   "}`, "parameter_invalid", "name"},
		{"name too long", `{"name":"` + strings.Repeat("é", 201) + `"}`, "parameter_invalid", "name"},
		{"name not a string", `{"name":1}`, "invalid_type", "name"},
		{"NUL in name", `{"name":"a\u0000b"}`, "invalid_encoding", "name"},
		{"instructions too long", `{"name":"n","instructions":"` + strings.Repeat("i", 32*1024+1) + `"}`, "parameter_invalid", "instructions"},
		{"description too long", `{"name":"n","description":"` + strings.Repeat("d", 10_001) + `"}`, "parameter_invalid", "description"},
		{"empty model", `{"name":"n","model":""}`, "parameter_invalid", "model"},
		{"model with spaces", `{"name":"n","model":"gpt 4"}`, "parameter_invalid", "model"},
		{"model too long", `{"name":"n","model":"` + strings.Repeat("m", 101) + `"}`, "parameter_invalid", "model"},
		{"model not a string", `{"name":"n","model":["builtin"]}`, "invalid_type", "model"},
		{"unknown field", `{"name":"n","temperature":0.2}`, "unknown_parameter", "temperature"},
		{"id given", `{"name":"n","id":"ast_mine"}`, "unknown_parameter", "id"},
		{"malformed", `{"name":`, "invalid_json", ""},
		{"empty body", ``, "invalid_json", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.counts()
			wantError(t, f.do("POST", "/v1/assistants", c.body), 400, "invalid_request_error", c.code, c.param)
			if f.assistantCount() != 1 || f.counts() != before {
				t.Fatal("a refused create stored something")
			}
		})
	}
	wantError(t, f.do("POST", "/v1/assistants", `{"name":"n"}`, "Content-Type", "text/plain"), 415, "invalid_request_error", "unsupported_media_type", "")
	wantError(t, f.do("POST", "/v1/assistants", `{"name":"`+strings.Repeat("n", 1<<20)+`"}`), 413, "invalid_request_error", "request_too_large", "")
	// Accepted edges: 200 characters of name, a model with every allowed sign.
	if a := f.create("/v1/assistants", `{"name":"`+strings.Repeat("é", 200)+`","model":"org/Model-1.5:latest_v2"}`); a["model"] != "org/Model-1.5:latest_v2" {
		t.Fatalf("edges: %v", a)
	}

	path := "/v1/assistants/" + f.Assistant.ID
	for _, c := range []struct{ body, code, param string }{
		{`{"name":null}`, "parameter_invalid", "name"},
		{`{"name":""}`, "parameter_invalid", "name"},
		{`{"model":"no spaces please"}`, "parameter_invalid", "model"},
		{`{"created_at":"2026-01-01T00:00:00Z"}`, "unknown_parameter", "created_at"},
	} {
		wantError(t, f.do("PATCH", path, c.body), 400, "invalid_request_error", c.code, c.param)
	}
	// Bad input is 400 even for an unknown id; a good one is 404 there.
	wantError(t, f.do("PATCH", "/v1/assistants/ast_nothere", `{"name":""}`), 400, "invalid_request_error", "parameter_invalid", "name")
	wantError(t, f.do("PATCH", "/v1/assistants/ast_nothere", `{"name":"x"}`), 404, "invalid_request_error", "resource_missing", "")
	got := f.ok(200, "GET", path, "")
	if got["name"] != f.Assistant.Name || got["model"] != "builtin" {
		t.Fatalf("assistant changed by refused PATCHes: %v", got)
	}
}

func TestAssistantIdempotentCreate(t *testing.T) {
	t.Parallel()
	f := setup(t)
	first := f.do("POST", "/v1/assistants", `{"name":"Once"}`, "Idempotency-Key", "ast-1")
	second := f.do("POST", "/v1/assistants", `{"name":"Once"}`, "Idempotency-Key", "ast-1")
	if first.status != 201 || second.status != 201 || string(first.body) != string(second.body) || second.header.Get("Idempotent-Replayed") != "true" ||
		second.header.Get("Location") != first.header.Get("Location") {
		t.Fatalf("replay: %d %d %s", first.status, second.status, second.body)
	}
	if n := f.assistantCount(); n != 2 {
		t.Fatalf("%d assistants after a replayed create", n)
	}
}
