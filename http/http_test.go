package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/sqlite"
)

// fixture adds request helpers to the shared in-process server.
type fixture struct{ *amstest.Fixture }

func setup(t *testing.T) *fixture { return &fixture{amstest.New(t)} }

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response is not JSON: %v: %s", err, r.body)
	}
	return m
}

// do sends a request with the fixture's key; hdr holds extra headers
// (give "Authorization", "" to send none).
func (f *fixture) do(method, path, body string, hdr ...string) *response {
	f.T.Helper()
	r := f.Do(method, path, f.Key, body, hdr...)
	return &response{r.Status, r.Header, r.Body}
}

// wantError checks status and the documented error body.
func wantError(t *testing.T, r *response, status int, typ, code, param string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	m := r.json(t)
	e, _ := m["error"].(map[string]any)
	if e == nil || e["type"] != typ || e["code"] != code || e["message"] == "" {
		t.Fatalf("error body %s, want type %s code %s", r.body, typ, code)
	}
	if got, _ := e["param"].(string); got != param {
		t.Fatalf("param %q, want %q (%s)", got, param, r.body)
	}
	rid, _ := m["request_id"].(string)
	if !strings.HasPrefix(rid, "req_") || rid != r.header.Get("X-Request-Id") {
		t.Fatalf("request_id %q vs header %q", rid, r.header.Get("X-Request-Id"))
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error content type %q", ct)
	}
}

// counts returns how many conversations, messages and events the fixture
// user has, to show that a refused request stored nothing.
func (f *fixture) counts() [3]int {
	f.T.Helper()
	ctx := context.Background()
	p := ams.ListParams{Limit: 100}
	c, err1 := f.Store.ListConversations(ctx, f.User.ID, "", p)
	e, err2 := f.Store.ListEvents(ctx, f.User.ID, ams.EventFilter{}, p)
	if err := errors.Join(err1, err2); err != nil {
		f.T.Fatal(err)
	}
	n := 0
	for _, conv := range c.Data {
		n += conv.MessageCount
	}
	return [3]int{len(c.Data), n, len(e.Data)}
}

func (f *fixture) send(msg, conv string) map[string]any {
	f.T.Helper()
	body := map[string]any{"assistant_id": f.Assistant.ID, "message": msg}
	if conv != "" {
		body["conversation_id"] = conv
	}
	b, _ := json.Marshal(body)
	r := f.do("POST", "/v1/messages", string(b))
	if r.status != 201 {
		f.T.Fatalf("send: %d %s", r.status, r.body)
	}
	return r.json(f.T)
}

func TestSendMessageAndReadBack(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"Hello there"}`)
	if r.status != 201 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	m := r.json(t)
	id, _ := m["id"].(string)
	if !strings.HasPrefix(id, "msg_") || m["object"] != "message" || m["direction"] != "outbound" ||
		m["assistant_id"] != f.Assistant.ID || m["content"] == "" || r.header.Get("Location") != "/v1/messages/"+id {
		t.Fatalf("reply: %s (Location %q)", r.body, r.header.Get("Location"))
	}
	if _, err := time.Parse(time.RFC3339, m["created_at"].(string)); err != nil || !strings.HasSuffix(m["created_at"].(string), "Z") {
		t.Fatalf("created_at %v", m["created_at"])
	}
	conv := m["conversation_id"].(string)
	got := f.do("GET", "/v1/messages/"+id, "")
	if got.status != 200 || got.json(t)["content"] != m["content"] {
		t.Fatalf("get message: %d %s", got.status, got.body)
	}
	c := f.do("GET", "/v1/conversations/"+conv, "").json(t)
	if c["message_count"] != 2.0 || c["title"] != "Hello there" || c["assistant_id"] != f.Assistant.ID {
		t.Fatalf("conversation: %v", c)
	}
	list := f.do("GET", "/v1/conversations/"+conv+"/messages?order=asc", "").json(t)
	data := list["data"].([]any)
	if len(data) != 2 || data[0].(map[string]any)["direction"] != "inbound" || data[1].(map[string]any)["id"] != id ||
		list["object"] != "list" || list["has_more"] != false || list["last_id"] != id {
		t.Fatalf("conversation messages: %v", list)
	}
	ev := f.do("GET", "/v1/events?type=message.created", "").json(t)
	evs := ev["data"].([]any)
	if len(evs) != 2 {
		t.Fatalf("events: %v", ev)
	}
	newest := evs[0].(map[string]any)
	d := newest["data"].(map[string]any)
	if !strings.HasPrefix(newest["id"].(string), "evt_") || newest["type"] != "message.created" || d["message_id"] != id ||
		d["direction"] != "outbound" || d["assistant_id"] != f.Assistant.ID || d["content"] != m["content"] {
		t.Fatalf("message.created event: %v", newest)
	}
	// The engine sees the conversation: a second turn continues it.
	f.send("My name is Ada", conv)
	reply := f.send("What's my name?", conv)
	if !strings.Contains(reply["content"].(string), "Ada") || reply["conversation_id"] != conv {
		t.Fatalf("context lost: %v", reply)
	}
	if n := f.counts(); n != [3]int{1, 6, 10} { // six message.created, the conversation.created and three turn.completed
		t.Fatalf("counts %v", n)
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cases := []struct {
		name, auth, code string
	}{
		{"missing", "", "missing_credentials"},
		{"not bearer", "Basic dXNlcjpwYXNz", "invalid_authorization_header"},
		{"empty bearer", "Bearer ", "invalid_authorization_header"},
		{"unknown key", "Bearer ams_sk_" + strings.Repeat("x", 40), "invalid_api_key"},
		{"not a key", "Bearer hello", "invalid_api_key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.do("GET", "/v1/assistants", "", "Authorization", c.auth)
			wantError(t, r, 401, "authentication_error", c.code, "")
			if r.header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
				t.Fatalf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
			}
			if r.header.Get("X-RateLimit-Limit") != "" {
				t.Fatal("rate-limit headers on an unauthenticated answer")
			}
		})
	}
	// A POST with bad credentials stores nothing.
	before := f.counts()
	r := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"hi"}`, "Authorization", "Bearer ams_sk_nope")
	wantError(t, r, 401, "authentication_error", "invalid_api_key", "")
	if f.counts() != before {
		t.Fatal("unauthenticated POST stored data")
	}
}

func TestRevokedKeyRefusedOnNextRequest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if r := f.do("GET", "/v1/assistants", ""); r.status != 200 {
		t.Fatalf("before revoke: %d", r.status)
	}
	keys, _ := f.Store.ListKeys(context.Background(), f.User.ID)
	if keys[0].LastUsedAt == nil {
		t.Fatal("last_used_at not recorded")
	}
	if _, err := f.Store.RevokeKey(context.Background(), "", keys[0].ID, f.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	wantError(t, f.do("GET", "/v1/assistants", ""), 401, "authentication_error", "api_key_revoked", "")
}

func TestExpiredKey(t *testing.T) {
	t.Parallel()
	f := setup(t)
	exp := f.Clock.Now().Add(time.Hour)
	secret, k := ams.NewAPIKey(f.User.ID, "short", ams.Permissions{ams.PermRead}, f.Clock.Now(), &exp)
	if err := f.Store.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if r := f.do("GET", "/v1/assistants", "", "Authorization", "Bearer "+secret); r.status != 200 {
		t.Fatalf("before expiry: %d", r.status)
	}
	f.Clock.Add(time.Hour)
	wantError(t, f.do("GET", "/v1/assistants", "", "Authorization", "Bearer "+secret), 401, "authentication_error", "api_key_expired", "")
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	readOnly := f.NewKey(f.User, "read")
	msgsOnly := f.NewKey(f.User, "messages")
	admin := f.NewKey(f.User, "admin")
	integ := f.NewKey(f.User, "integrations")
	before := f.counts()
	r := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"hi"}`, "Authorization", "Bearer "+readOnly)
	wantError(t, r, 403, "permission_error", "insufficient_scope", "")
	if h := r.header.Get("WWW-Authenticate"); h != `Bearer error="insufficient_scope", scope="messages"` {
		t.Fatalf("WWW-Authenticate %q", h)
	}
	if f.counts() != before {
		t.Fatal("forbidden POST stored data")
	}
	cases := []struct {
		key, method, path string
		want              int
	}{
		{msgsOnly, "GET", "/v1/assistants", 403},
		{msgsOnly, "GET", "/v1/conversations", 200},
		{msgsOnly, "GET", "/v1/integrations", 403},
		{msgsOnly, "GET", "/v1/events", 403},
		{readOnly, "GET", "/v1/integrations", 200},
		{integ, "GET", "/v1/integrations", 200},
		{integ, "GET", "/v1/conversations", 403},
		{admin, "GET", "/v1/assistants", 200},
		{admin, "GET", "/v1/events", 200},
	}
	for _, c := range cases {
		if r := f.do(c.method, c.path, "", "Authorization", "Bearer "+c.key); r.status != c.want {
			t.Errorf("%s %s: %d, want %d (%s)", c.method, c.path, r.status, c.want, r.body)
		}
	}
	if r := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"hi"}`, "Authorization", "Bearer "+admin); r.status != 201 {
		t.Fatalf("admin POST: %d %s", r.status, r.body)
	}
}

func TestBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other := f.NewUser("bob@example.com", ams.PlanStandard)
	bobs := f.NewAssistant(other, "Bob's")
	ast := f.Assistant.ID
	big := `{"assistant_id":"` + ast + `","message":"` + strings.Repeat("a", amshttp.MaxBodyBytes) + `"}`
	cases := []struct {
		name, body, ctype string
		status            int
		typ, code, param  string
	}{
		{"malformed json", `{"assistant_id": "` + ast + `",`, "", 400, "invalid_request_error", "invalid_json", ""},
		{"not an object", `["x"]`, "", 400, "invalid_request_error", "invalid_json", ""},
		{"trailing data", `{"assistant_id":"` + ast + `","message":"hi"} {}`, "", 400, "invalid_request_error", "invalid_json", ""},
		{"unknown field", `{"assistant_id":"` + ast + `","message":"hi","colour":"red"}`, "", 400, "invalid_request_error", "unknown_parameter", "colour"},
		{"wrong type", `{"assistant_id":"` + ast + `","message":42}`, "", 400, "invalid_request_error", "invalid_type", "message"},
		{"null required", `{"assistant_id":null,"message":"hi"}`, "", 400, "invalid_request_error", "parameter_missing", "assistant_id"},
		{"missing assistant", `{"message":"hi"}`, "", 400, "invalid_request_error", "parameter_missing", "assistant_id"},
		{"missing message", `{"assistant_id":"` + ast + `"}`, "", 400, "invalid_request_error", "parameter_missing", "message"},
		{"empty message", `{"assistant_id":"` + ast + `","message":"  "}`, "", 400, "invalid_request_error", "parameter_invalid", "message"},
		{"too long message", `{"assistant_id":"` + ast + `","message":"` + strings.Repeat("b", ams.MaxMessageLength+1) + `"}`, "", 400, "invalid_request_error", "parameter_invalid", "message"},
		{"NUL in message", `{"assistant_id":"` + ast + `","message":"a\u0000b"}`, "", 400, "invalid_request_error", "invalid_encoding", "message"},
		{"bad assistant id", `{"assistant_id":"robot","message":"hi"}`, "", 400, "invalid_request_error", "parameter_invalid", "assistant_id"},
		{"unknown assistant", `{"assistant_id":"ast_doesnotexist","message":"hi"}`, "", 404, "invalid_request_error", "resource_missing", "assistant_id"},
		{"another account's assistant", `{"assistant_id":"` + bobs.ID + `","message":"hi"}`, "", 404, "invalid_request_error", "resource_missing", "assistant_id"},
		{"unknown conversation", `{"assistant_id":"` + ast + `","message":"hi","conversation_id":"conv_nothere"}`, "", 404, "invalid_request_error", "resource_missing", "conversation_id"},
		{"wrong content type", `{"assistant_id":"` + ast + `","message":"hi"}`, "text/plain", 415, "invalid_request_error", "unsupported_media_type", ""},
		{"form content type", `assistant_id=x`, "application/x-www-form-urlencoded", 415, "invalid_request_error", "unsupported_media_type", ""},
		{"too large", big, "", 413, "invalid_request_error", "request_too_large", ""},
		{"empty body", ``, "", 400, "invalid_request_error", "invalid_json", ""},
		{"nested too deep", `{"assistant_id":"` + ast + `","message":` + strings.Repeat("[", 40_000) + strings.Repeat("]", 40_000) + `}`,
			"", 400, "invalid_request_error", "invalid_json", ams.Clip("message" + strings.Repeat("[0]", amshttp.MaxJSONDepth-1))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.counts()
			hdr := []string{}
			if c.ctype != "" {
				hdr = append(hdr, "Content-Type", c.ctype)
			}
			r := f.do("POST", "/v1/messages", c.body, hdr...)
			wantError(t, r, c.status, c.typ, c.code, c.param)
			if after := f.counts(); after != before {
				t.Fatalf("stored data changed: %v -> %v", before, after)
			}
		})
	}
	// A body streamed without Content-Length is cut at the limit too.
	req, _ := http.NewRequest("POST", f.Server.URL+"/v1/messages", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+f.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked oversized body: %d", resp.StatusCode)
	}
}

// TestDeepBodiesRefusedCheaply: the 78 KB body of finding C1 (issue 26),
// a task title nested 40,000 deep, once took ams to 1.5 GiB; POST
// /v1/keys with 200 KB, to 23.7 GB. Each is now refused with 400
// invalid_json, allocating in proportion to the body, and stores nothing;
// an unknown key is refused before the body is read.
func TestDeepBodiesRefusedCheaply(t *testing.T) {
	f := setup(t)
	admin := f.NewKey(f.User, "admin")
	for _, c := range []struct{ path, key, body string }{
		{"/v1/tasks", f.Key, `{"assistant_id":"` + f.Assistant.ID + `","title":` + strings.Repeat("[", 40_000) + strings.Repeat("]", 40_000) + `}`},
		{"/v1/keys", admin, `{"name":` + strings.Repeat(`{"a":`, 40_000) + `1` + strings.Repeat("}", 40_000) + `}`},
	} {
		before := f.counts()
		var r *response
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		resp := f.Do("POST", c.path, c.key, c.body)
		runtime.ReadMemStats(&ms1)
		r = &response{resp.Status, resp.Header, resp.Body}
		if r.status != 400 {
			t.Fatalf("POST %s nested 40,000 deep: %d %s", c.path, r.status, r.body)
		}
		if e := r.json(t)["error"].(map[string]any); e["code"] != "invalid_json" {
			t.Fatalf("POST %s nested 40,000 deep: %s", c.path, r.body)
		}
		// The server, the client and the test share the heap: the bound
		// is generous, and the old walk allocated gigabytes.
		if grew := ms1.TotalAlloc - ms0.TotalAlloc; grew > 64<<20 {
			t.Fatalf("POST %s of %d bytes allocated %d MB", c.path, len(c.body), grew>>20)
		}
		if after := f.counts(); after != before {
			t.Fatalf("stored data changed: %v -> %v", before, after)
		}
		unknown := f.Do("POST", c.path, "ams_sk_"+strings.Repeat("x", 40), c.body)
		if unknown.Status != 401 {
			t.Fatalf("POST %s with an unknown key: %d %s", c.path, unknown.Status, unknown.Body)
		}
	}
}

func TestConversationOfAnotherAssistant(t *testing.T) {
	t.Parallel()
	f := setup(t)
	m := f.send("hi", "")
	second := f.NewAssistant(f.User, "Second")
	before := f.counts()
	r := f.do("POST", "/v1/messages", `{"assistant_id":"`+second.ID+`","message":"hi","conversation_id":"`+m["conversation_id"].(string)+`"}`)
	wantError(t, r, 400, "invalid_request_error", "parameter_invalid", "conversation_id")
	if f.counts() != before {
		t.Fatal("stored data changed")
	}
}

func TestRoutesAndMethods(t *testing.T) {
	t.Parallel()
	f := setup(t)
	wantError(t, f.do("GET", "/v1/nothing", ""), 404, "invalid_request_error", "route_not_found", "")
	wantError(t, f.do("GET", "/v1/assistants/ast_x/y", ""), 404, "invalid_request_error", "route_not_found", "")
	r := f.do("DELETE", "/v1/messages", "")
	wantError(t, r, 405, "invalid_request_error", "method_not_allowed", "")
	if r.header.Get("Allow") != "POST" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
	r = f.do("PUT", "/v1/assistants/ast_x", "")
	wantError(t, r, 405, "invalid_request_error", "method_not_allowed", "")
	if r.header.Get("Allow") != "GET, PATCH, DELETE" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
	// Ids of the wrong shape, unknown ids and other accounts' ids are all 404.
	other := f.NewUser("bob@example.com", ams.PlanStandard)
	bobKey := f.NewKey(other, "read,messages")
	m := f.send("hello", "")
	for _, p := range []string{
		"/v1/assistants/" + f.Assistant.ID,
		"/v1/messages/" + m["id"].(string),
		"/v1/conversations/" + m["conversation_id"].(string),
		"/v1/conversations/" + m["conversation_id"].(string) + "/messages",
	} {
		wantError(t, f.do("GET", p, "", "Authorization", "Bearer "+bobKey), 404, "invalid_request_error", "resource_missing", "")
	}
	for _, p := range []string{"/v1/assistants/nope", "/v1/messages/ast_wrongprefix", "/v1/messages/msg_unknown", "/v1/conversations/conv_unknown"} {
		wantError(t, f.do("GET", p, ""), 404, "invalid_request_error", "resource_missing", "")
	}
}

func TestListParameters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for i := 0; i < 5; i++ {
		f.send("hi", "")
	}
	cases := []struct{ query, code, param string }{
		{"limit=0", "parameter_invalid", "limit"},
		{"limit=101", "parameter_invalid", "limit"},
		{"limit=ten", "parameter_invalid", "limit"},
		{"order=sideways", "parameter_invalid", "order"},
		{"after=conv_a&before=conv_b", "parameter_invalid", "before"},
		{"after=conv_unknown", "resource_missing", "after"},
		{"colour=red", "unknown_parameter", "colour"},
		{"assistant_id=robot", "parameter_invalid", "assistant_id"},
	}
	for _, c := range cases {
		wantError(t, f.do("GET", "/v1/conversations?"+c.query, ""), 400, "invalid_request_error", c.code, c.param)
	}
	// Walk all pages with after=last_id.
	var seen []string
	path := "/v1/conversations?limit=2"
	for {
		l := f.do("GET", path, "").json(t)
		for _, d := range l["data"].([]any) {
			seen = append(seen, d.(map[string]any)["id"].(string))
		}
		if l["has_more"] != true {
			break
		}
		path = "/v1/conversations?limit=2&after=" + l["last_id"].(string)
	}
	if len(seen) != 5 {
		t.Fatalf("paged through %d conversations, want 5", len(seen))
	}
	empty := f.do("GET", "/v1/integrations", "").json(t)
	if empty["first_id"] != nil || empty["last_id"] != nil || len(empty["data"].([]any)) != 0 || empty["has_more"] != false {
		t.Fatalf("empty list: %v", empty)
	}
	wantError(t, f.do("GET", "/v1/events?type=nope.never", ""), 400, "invalid_request_error", "parameter_invalid", "type")
	wantError(t, f.do("GET", "/v1/messages/msg_x?expand=all", ""), 400, "invalid_request_error", "unknown_parameter", "expand")
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := setup(t)
	body := `{"assistant_id":"` + f.Assistant.ID + `","message":"hello"}`
	first := f.do("POST", "/v1/messages", body, "Idempotency-Key", "abc-123")
	if first.status != 201 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	second := f.do("POST", "/v1/messages", body, "Idempotency-Key", "abc-123")
	if second.status != 201 || !bytes.Equal(first.body, second.body) || second.header.Get("Idempotent-Replayed") != "true" ||
		second.header.Get("Location") != first.header.Get("Location") {
		t.Fatalf("replay: %d %s %v", second.status, second.body, second.header)
	}
	if n := f.counts(); n[0] != 1 || n[1] != 2 {
		t.Fatalf("replay stored again: %v", n)
	}
	before := f.counts()
	r := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"other"}`, "Idempotency-Key", "abc-123")
	wantError(t, r, 409, "invalid_request_error", "idempotency_key_reused", "")
	if f.counts() != before {
		t.Fatal("conflicting request stored data")
	}
	// A failed request is not stored: the same key may be retried.
	bad := f.do("POST", "/v1/messages", `{"assistant_id":"ast_missing","message":"x"}`, "Idempotency-Key", "k2")
	wantError(t, bad, 404, "invalid_request_error", "resource_missing", "assistant_id")
	if ok := f.do("POST", "/v1/messages", body, "Idempotency-Key", "k2"); ok.status != 201 {
		t.Fatalf("retry after failure: %d %s", ok.status, ok.body)
	}
	wantError(t, f.do("POST", "/v1/messages", body, "Idempotency-Key", strings.Repeat("k", 256)), 400, "invalid_request_error", "parameter_invalid", "Idempotency-Key")
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// The clock stands still: all 60 requests fall in one second, which
	// leaves the sliding minute window 61 s after it began.
	f.Clock.Add(20 * time.Second)
	for i := 1; i <= 60; i++ {
		r := f.do("GET", "/v1/assistants", "")
		if r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
		if i == 1 {
			h := r.header
			if h.Get("X-RateLimit-Limit") != "60" || h.Get("X-RateLimit-Remaining") != "59" ||
				h.Get("X-RateLimit-Reset") != strconv.FormatInt(f.Clock.Now().Truncate(time.Second).Add(61*time.Second).Unix(), 10) ||
				h.Get("RateLimit-Policy") != `"minute";q=60;w=60, "day";q=10000;w=86400` ||
				h.Get("RateLimit") != `"minute";r=59;t=61` {
				t.Fatalf("headers of the first request: %v", h)
			}
		}
	}
	r := f.do("GET", "/v1/assistants", "")
	wantError(t, r, 429, "rate_limit_error", "rate_limit_exceeded", "")
	if r.header.Get("Retry-After") != "61" || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("429 headers: %v", r.header)
	}
	// Other accounts are not affected.
	bob := f.NewUser("bob@example.com", ams.PlanProfessional)
	rb := f.do("GET", "/v1/assistants", "", "Authorization", "Bearer "+f.NewKey(bob, "read"))
	if rb.status != 200 || rb.header.Get("X-RateLimit-Limit") != "120" {
		t.Fatalf("professional account: %d %v", rb.status, rb.header)
	}
	// 60 s later the requests are still in the window (a fixed clock
	// minute would have let more through); at Retry-After they have left.
	f.Clock.Add(60 * time.Second)
	if r := f.do("GET", "/v1/assistants", ""); r.status != 429 || r.header.Get("Retry-After") != "1" {
		t.Fatalf("60 s later: %d, Retry-After %q; want 429, 1", r.status, r.header.Get("Retry-After"))
	}
	f.Clock.Add(time.Second)
	if r := f.do("GET", "/v1/assistants", ""); r.status != 200 || r.header.Get("X-RateLimit-Remaining") != "59" {
		t.Fatalf("61 s later: %d %v", r.status, r.header)
	}
}

func TestEnterpriseLimits(t *testing.T) {
	t.Parallel()
	f := setup(t)
	u := f.NewUser("corp@example.com", ams.PlanEnterprise)
	rpm, rpd := 3, 5
	if _, err := f.Store.UpdateUser(context.Background(), u.ID, ams.UserUpdate{RPM: &rpm, RPD: &rpd}, f.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	key := f.NewKey(u, "read")
	for i := 0; i < 3; i++ {
		if r := f.do("GET", "/v1/assistants", "", "Authorization", "Bearer "+key); r.status != 200 {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	wantError(t, f.do("GET", "/v1/assistants", "", "Authorization", "Bearer "+key), 429, "rate_limit_error", "rate_limit_exceeded", "")
	f.Clock.Add(61 * time.Second)
	f.do("GET", "/v1/assistants", "", "Authorization", "Bearer "+key)
	r := f.do("GET", "/v1/assistants", "", "Authorization", "Bearer "+key)
	// 5 of 5 per day used: the day window is now the tightest.
	if r.status != 200 || r.header.Get("X-RateLimit-Limit") != "5" || r.header.Get("X-RateLimit-Remaining") != "0" || !strings.HasPrefix(r.header.Get("RateLimit"), `"day";r=0;`) {
		t.Fatalf("day window: %d %v", r.status, r.header)
	}
	f.Clock.Add(time.Minute)
	r = f.do("GET", "/v1/assistants", "", "Authorization", "Bearer "+key)
	wantError(t, r, 429, "rate_limit_error", "rate_limit_exceeded", "")
	if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); ra < 3600 {
		t.Fatalf("Retry-After %d for a full day window", ra)
	}
}

// failingStore fails one read with an error whose text must not reach the
// client.
type failingStore struct{ *sqlite.DB }

func (failingStore) FindMessage(context.Context, string, string) (*ams.Message, error) {
	return nil, errors.New("disk I/O error at /var/secret/path")
}

func TestInternalErrorsHidden(t *testing.T) {
	t.Parallel()
	f := &fixture{amstest.New(t, amstest.WithStore(func(db *sqlite.DB) ams.Store { return failingStore{db} }))}
	r := f.do("GET", "/v1/messages/msg_abc", "")
	wantError(t, r, 500, "api_error", "internal_error", "")
	if bytes.Contains(r.body, []byte("secret")) || bytes.Contains(r.body, []byte("disk")) {
		t.Fatalf("internal text leaked: %s", r.body)
	}
}

func TestOpenAPIServedWithoutAuth(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("GET", "/v1/openapi.json", "", "Authorization", "")
	if r.status != 200 || r.json(t)["openapi"] != "3.1.0" || r.header.Get("X-Request-Id") == "" {
		t.Fatalf("openapi: %d %.100s", r.status, r.body)
	}
	// It names this server (its base URL), not the default address.
	servers, _ := r.json(t)["servers"].([]any)
	if len(servers) != 1 || servers[0].(map[string]any)["url"] != f.Server.URL {
		t.Fatalf("servers %v, want [%s]", servers, f.Server.URL)
	}
}
