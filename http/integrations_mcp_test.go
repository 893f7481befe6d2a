package http_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/mcptest"
	"github.com/amsdev/ams/mcp"
)

// connectEverything connects the reference server as integration
// "everything" and returns its record.
func (f *fixture) connectEverything(url string, extra string) map[string]any {
	f.T.Helper()
	r := f.do("POST", "/v1/integrations", `{"provider": "mcp", "name": "everything", "url": "`+url+`",
		"headers": {"Authorization": "Bearer sealed-token-123"}`+extra+`}`)
	if r.status != 201 {
		f.T.Fatalf("connect: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), "sealed-token-123") {
		f.T.Fatalf("the header's value is shown: %s", r.body)
	}
	return r.json(f.T)
}

func (f *fixture) actionCount() int {
	f.T.Helper()
	p, err := f.Store.ListActions(context.Background(), f.User.ID, ams.ActionFilter{}, ams.ListParams{Limit: 100})
	if err != nil {
		f.T.Fatal(err)
	}
	return len(p.Data)
}

func toolNames(m map[string]any) []string {
	var out []string
	tools, _ := m["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		name, _ := tm["name"].(string)
		out = append(out, name)
		if _, ok := tm["input_schema"].(map[string]any); !ok {
			return nil
		}
	}
	return out
}

// TestMCPIntegrationEverything drives an MCP integration through its
// life against the reference server: connect (tools listed), run
// get-sum and echo as actions, a schema violation refused with nothing
// sent or stored, the server stopped mid-use (a failed action,
// integration.error once) and started again (integration.connected),
// sync, disconnect.
func TestMCPIntegrationEverything(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t)
	f := setup(t)
	in := f.connectEverything(srv.URL, `, "require_approval": ["echo"]`)
	id, _ := in["id"].(string)
	if in["status"] != "connected" || in["provider"] != "mcp" || in["name"] != "everything" || in["url"] != srv.URL {
		t.Fatalf("integration: %v", in)
	}
	names := toolNames(in)
	if !slices.Contains(names, "get-sum") || !slices.Contains(names, "echo") {
		t.Fatalf("tools: %v", names)
	}
	if ra, _ := in["require_approval"].([]any); len(ra) != 1 || ra[0] != "echo" {
		t.Fatalf("require_approval: %v", in["require_approval"])
	}
	// The headers are sealed at rest, and readable only unsealed.
	secrets, err := f.Store.IntegrationSecrets(context.Background(), f.User.ID, id)
	if err != nil || secrets["Authorization"] != "Bearer sealed-token-123" {
		t.Fatalf("secrets: %v %v", secrets, err)
	}
	if got := f.eventTypes("integration."); !slices.Equal(got, []string{"integration.connected"}) {
		t.Fatalf("events: %v", got)
	}
	if r := f.do("GET", "/v1/integrations/"+id, ""); r.status != 200 || !slices.Contains(toolNames(r.json(t)), "get-sum") {
		t.Fatalf("get: %d %s", r.status, r.body)
	}

	// The tools are the assistant's.
	tb := f.App.World.Toolbox(f.User.ID, f.Assistant, "")
	var specs []string
	for _, s := range tb.Specs() {
		specs = append(specs, s.Name)
	}
	if !slices.Contains(specs, "create_task") || !slices.Contains(specs, "everything__get-sum") {
		t.Fatalf("specs: %v", specs)
	}
	na := tb.(interface{ NeedsApproval(string) bool })
	if !na.NeedsApproval("everything__echo") || na.NeedsApproval("everything__get-sum") || na.NeedsApproval("create_task") {
		t.Fatal("NeedsApproval does not follow require_approval")
	}

	actions := "/v1/assistants/" + f.Assistant.ID + "/actions"
	r := f.do("POST", actions, `{"type": "everything__get-sum", "input": {"a": 2, "b": 3}}`)
	if r.status != 201 {
		t.Fatalf("get-sum: %d %s", r.status, r.body)
	}
	act := r.json(t)
	res, _ := act["result"].(map[string]any)
	if act["status"] != "succeeded" || res == nil || res["isError"] != false || !strings.Contains(jsonText(res["content"]), "5") {
		t.Fatalf("get-sum action: %s", r.body)
	}
	if _, ok := act["duration_ms"].(float64); !ok {
		t.Fatalf("duration_ms: %s", r.body)
	}
	r = f.do("POST", actions, `{"type": "everything__echo", "input": {"message": "hello from ams"}}`)
	if r.status != 201 || !strings.Contains(string(r.body), "hello from ams") {
		t.Fatalf("echo: %d %s", r.status, r.body)
	}

	// Bad input: refused before anything is sent, nothing stored.
	before := f.actionCount()
	wantError(t, f.do("POST", actions, `{"type": "everything__get-sum", "input": {"a": "two", "b": 3}}`), 400, "invalid_request_error", "parameter_invalid", "input.a")
	wantError(t, f.do("POST", actions, `{"type": "everything__get-sum", "input": {"a": 2}}`), 400, "invalid_request_error", "parameter_invalid", "input")
	wantError(t, f.do("POST", actions, `{"type": "everything__no-such-tool", "input": {}}`), 400, "invalid_request_error", "parameter_invalid", "type")
	wantError(t, f.do("POST", actions, `{"type": "nothing__get-sum", "input": {}}`), 400, "invalid_request_error", "parameter_invalid", "type")
	if n := f.actionCount(); n != before {
		t.Fatalf("%d actions stored by refused calls", n-before)
	}

	// The server stops: the action fails, the integration's status is
	// error, integration.error is emitted once.
	srv.Stop()
	for range 2 {
		r = f.do("POST", actions, `{"type": "everything__get-sum", "input": {"a": 1, "b": 1}}`)
		act = r.json(t)
		e, _ := act["error"].(map[string]any)
		if r.status != 201 || act["status"] != "failed" || e["code"] != "mcp_server_unavailable" || !strings.Contains(e["message"].(string), "everything") {
			t.Fatalf("call to a stopped server: %d %s", r.status, r.body)
		}
	}
	got := f.do("GET", "/v1/integrations/"+id, "").json(t)
	if got["status"] != "error" || got["last_error"] == nil {
		t.Fatalf("integration after failures: %v", got)
	}
	if got := f.eventTypes("integration."); !slices.Equal(got, []string{"integration.connected", "integration.error"}) {
		t.Fatalf("events (oldest first): %v", got)
	}

	// Started again: the next good call sets it connected.
	srv.Restart()
	r = f.do("POST", actions, `{"type": "everything__get-sum", "input": {"a": 20, "b": 22}}`)
	if r.status != 201 || r.json(t)["status"] != "succeeded" || !strings.Contains(string(r.body), "42") {
		t.Fatalf("after restart: %d %s", r.status, r.body)
	}
	if got := f.eventTypes("integration."); !slices.Equal(got, []string{"integration.connected", "integration.error", "integration.connected"}) {
		t.Fatalf("events (oldest first): %v", got)
	}

	// Sync lists the tools again.
	r = f.do("POST", "/v1/integrations/"+id+"/sync", "")
	if r.status != 200 || r.json(t)["status"] != "connected" || !slices.Contains(toolNames(r.json(t)), "echo") {
		t.Fatalf("sync: %d %s", r.status, r.body)
	}
	// Sync of a stopped server: status error (it was connected).
	srv.Stop()
	r = f.do("POST", "/v1/integrations/"+id+"/sync", "")
	if r.status != 200 || r.json(t)["status"] != "error" {
		t.Fatalf("sync of a stopped server: %d %s", r.status, r.body)
	}
	srv.Restart()
	if r = f.do("POST", "/v1/integrations/"+id+"/sync", ""); r.json(t)["status"] != "connected" {
		t.Fatalf("sync again: %s", r.body)
	}

	// Disconnect: the tools are gone, the name is free again.
	if r = f.do("DELETE", "/v1/integrations/"+id, ""); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if got := f.eventTypes("integration."); got[len(got)-1] != "integration.disconnected" {
		t.Fatalf("events: %v", got)
	}
	wantError(t, f.do("POST", actions, `{"type": "everything__get-sum", "input": {"a": 1, "b": 1}}`), 400, "invalid_request_error", "parameter_invalid", "type")
	f.connectEverything(srv.URL, "")
}

// TestMCPIntegrationBadInput: invalid or taken names, bad headers,
// unreachable and non-MCP URLs, internal addresses outside --dev: a
// documented 400 and nothing stored.
func TestMCPIntegrationBadInput(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t)
	f := setup(t)
	f.connectEverything(srv.URL, "")
	before, events := f.integrationCount(), f.counts()

	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	// A server that is not an MCP server.
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html>hello</html>"))
	}))
	defer web.Close()

	body := func(name, url, extra string) string {
		return `{"provider": "mcp", "name": "` + name + `", "url": "` + url + `"` + extra + `}`
	}
	for _, c := range []struct {
		body, code, param string
	}{
		{body("Everything", srv.URL, ""), "parameter_invalid", "name"},
		{body("a b", srv.URL, ""), "parameter_invalid", "name"},
		{body("", srv.URL, ""), "parameter_invalid", "name"},
		{body("a__b", srv.URL, ""), "parameter_invalid", "name"},
		{body(strings.Repeat("x", 33), srv.URL, ""), "parameter_invalid", "name"},
		{body("everything", srv.URL, ""), "parameter_invalid", "name"},
		{`{"provider": "mcp", "url": "` + srv.URL + `"}`, "parameter_missing", "name"},
		{`{"provider": "mcp", "name": "x"}`, "parameter_missing", "url"},
		{body("other", closed, ""), "url_unreachable", "url"},
		{body("other", web.URL, ""), "url_unreachable", "url"},
		{body("other", "ftp://example.com/mcp", ""), "url_invalid", "url"},
		{body("other", srv.URL, `, "headers": {"Content-Type": "text/plain"}`), "parameter_invalid", "headers.Content-Type"},
		{body("other", srv.URL, `, "headers": {"X-Bad": "a\nb"}`), "parameter_invalid", "headers.X-Bad"},
		{body("other", srv.URL, `, "allowed_tools": ["no spaces"]`), "parameter_invalid", "allowed_tools[0]"},
		{body("other", srv.URL, `, "require_approval": ["echo", "?"]`), "parameter_invalid", "require_approval[1]"},
		{body("other", srv.URL, `, "config": {}`), "parameter_invalid", "config"},
		{`{"provider": "caldav", "name": "x", "config": {}}`, "parameter_invalid", "name"},
	} {
		wantError(t, f.do("POST", "/v1/integrations", c.body), 400, "invalid_request_error", c.code, c.param)
	}

	// Outside --dev, the guard refuses internal addresses.
	f.App.World.MCP = mcp.New(mcp.Options{})
	wantError(t, f.do("POST", "/v1/integrations", body("other", srv.URL, "")), 400, "invalid_request_error", "url_invalid", "url")
	wantError(t, f.do("POST", "/v1/integrations", body("other", strings.Replace(srv.URL, "http:", "https:", 1), "")), 400, "invalid_request_error", "url_invalid", "url")

	if n := f.integrationCount(); n != before {
		t.Fatalf("%d integrations stored by refused requests", n-before)
	}
	if got := f.counts(); got != events {
		t.Fatalf("counts %v, want %v", got, events)
	}

	// The guard holds at every call too: the integration connected in
	// --dev mode is refused now, its action failed, its status error.
	r := f.do("POST", "/v1/assistants/"+f.Assistant.ID+"/actions", `{"type": "everything__echo", "input": {"message": "x"}}`)
	act := r.json(t)
	e, _ := act["error"].(map[string]any)
	if r.status != 201 || act["status"] != "failed" || e["code"] != "mcp_server_unavailable" || !strings.Contains(e["message"].(string), "https") {
		t.Fatalf("a call outside --dev: %d %s", r.status, r.body)
	}
}

// TestMCPAllowedTools: allowed_tools narrows the tools the assistant
// gets.
func TestMCPAllowedTools(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t)
	f := setup(t)
	in := f.connectEverything(srv.URL, `, "allowed_tools": ["echo"]`)
	if names := toolNames(in); !slices.Equal(names, []string{"echo"}) {
		t.Fatalf("tools: %v", names)
	}
	wantError(t, f.do("POST", "/v1/assistants/"+f.Assistant.ID+"/actions", `{"type": "everything__get-sum", "input": {"a": 1, "b": 1}}`),
		400, "invalid_request_error", "parameter_invalid", "type")
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
