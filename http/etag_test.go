package http_test

import (
	"strings"
	"testing"
)

// TestConditionalGet: a GET of one record answers a weak ETag made from
// its body; If-None-Match with it (or "*") is 304 without a body; once
// the record changes the old tag gets the new body and a new tag. Lists
// and error answers carry no ETag.
func TestConditionalGet(t *testing.T) {
	t.Parallel()
	f := setup(t)
	task := f.create("/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"Call Bob"}`)["id"].(string)
	path := "/v1/tasks/" + task

	first := f.do("GET", path, "")
	tag := first.header.Get("ETag")
	if first.status != 200 || !strings.HasPrefix(tag, `W/"`) || !strings.HasSuffix(tag, `"`) || len(tag) < 10 {
		t.Fatalf("GET: %d ETag %q", first.status, tag)
	}
	if again := f.do("GET", path, ""); again.header.Get("ETag") != tag || string(again.body) != string(first.body) {
		t.Fatalf("the same record answered ETag %q, then %q", tag, again.header.Get("ETag"))
	}

	for _, inm := range []string{tag, strings.TrimPrefix(tag, "W/"), `"other", ` + tag, "*"} {
		r := f.do("GET", path, "", "If-None-Match", inm)
		if r.status != 304 || len(r.body) != 0 || r.header.Get("ETag") != tag {
			t.Fatalf("If-None-Match %s: %d ETag %q body %q", inm, r.status, r.header.Get("ETag"), r.body)
		}
		if r.header.Get("X-Request-Id") == "" || r.header.Get("X-RateLimit-Remaining") == "" {
			t.Fatalf("304 without X-Request-Id or rate-limit headers: %v", r.header)
		}
	}
	if r := f.do("GET", path, "", "If-None-Match", `W/"other"`); r.status != 200 || r.header.Get("ETag") != tag {
		t.Fatalf("another tag: %d %q", r.status, r.header.Get("ETag"))
	}

	f.ok(200, "PATCH", path, `{"title":"Call Bob at 9"}`)
	changed := f.do("GET", path, "", "If-None-Match", tag)
	if changed.status != 200 || changed.header.Get("ETag") == tag || changed.header.Get("ETag") == "" ||
		!strings.Contains(string(changed.body), "Call Bob at 9") {
		t.Fatalf("after a change: %d ETag %q (was %q) %s", changed.status, changed.header.Get("ETag"), tag, changed.body)
	}

	// Every single-record GET is conditional: an assistant, the account
	// (the fixture's key has no admin: its 403 has no tag).
	ast := f.do("GET", "/v1/assistants/"+f.Assistant.ID, "")
	if ast.status != 200 || ast.header.Get("ETag") == "" {
		t.Fatalf("GET assistant: %d ETag %q", ast.status, ast.header.Get("ETag"))
	}
	if r := f.do("GET", "/v1/assistants/"+f.Assistant.ID, "", "If-None-Match", ast.header.Get("ETag")); r.status != 304 {
		t.Fatalf("GET assistant If-None-Match: %d", r.status)
	}
	for _, p := range []string{"/v1/tasks", "/v1/tasks/task_nothere", "/v1/account"} {
		if r := f.do("GET", p, ""); r.header.Get("ETag") != "" {
			t.Errorf("GET %s (%d) has ETag %q", p, r.status, r.header.Get("ETag"))
		}
	}
}
