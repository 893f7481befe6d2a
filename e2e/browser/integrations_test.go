package browser

import (
	"net/http"
	"strings"
	"testing"

	"github.com/amsdev/ams/internal/testing/mcptest"
)

// TestMCPIntegrationPages: the user connects the reference MCP server on
// /account/integrations with a name, its URL and one header, sees its
// status and tools, syncs it (it fails while the server is stopped, and
// works again once it is back) and disconnects it; an assistant runs one
// of its tools through the API in between.
func TestMCPIntegrationPages(t *testing.T) {
	srv := mcptest.Start(t)
	p := newPage(t)
	e := p.e
	e.needPage(t, "/account/integrations")
	p.signIn("dev@example.com", e.devPass, "/account/integrations")
	p.waitText("Connect an MCP server")

	// A bad name is refused, with the form kept.
	p.fill("Name", "Not Valid")
	p.fill("Server URL", srv.URL)
	p.submit("Connect")
	p.waitText("must match")

	p.fill("Name", "everything")
	p.fill("Server URL", srv.URL)
	p.fill("Header name", "Authorization")
	p.fill("Header value", "Bearer browser-secret-1")
	p.shot("integrations-connect")
	p.submit("Connect")
	p.waitText("Connected. The assistants can use its tools now.")
	p.waitText("everything__get-sum")
	if strings.Contains(p.bodyText(), "browser-secret-1") {
		t.Fatal("the header's value is shown")
	}
	p.shot("integration")
	id := p.location()[strings.LastIndex(p.location(), "/")+1:]

	// An assistant runs one of its tools.
	var ast string
	if st, body := e.api(t, "GET", "/v1/assistants", e.devKey, ""); st == http.StatusOK {
		if i := strings.Index(body, `"id":"ast_`); i >= 0 {
			ast = body[i+6 : i+6+strings.Index(body[i+6:], `"`)]
		}
	}
	if st, body := e.api(t, "POST", "/v1/assistants/"+ast+"/actions", e.devKey, `{"type": "everything__get-sum", "input": {"a": 1, "b": 2}}`); st != http.StatusCreated || !strings.Contains(body, `"status":"succeeded"`) {
		t.Fatalf("run everything__get-sum: %d %s", st, body)
	}

	// The server stops: a sync fails and says why; back, it works.
	srv.Stop()
	p.submit("Sync now")
	p.waitText("The sync failed: see the last error.")
	p.waitText("Last error:")
	p.shot("integration-error")
	srv.Restart()
	p.submit("Sync now")
	p.waitText("Synced.")

	// The list shows it.
	p.open("/account/integrations")
	p.waitText("everything")
	p.waitText("Connected")

	// Disconnect.
	p.open("/account/integrations/" + id)
	p.click("Disconnect…")
	p.submit("Yes, disconnect")
	p.waitText("Disconnected.")
	if st, body := e.api(t, "POST", "/v1/assistants/"+ast+"/actions", e.devKey, `{"type": "everything__get-sum", "input": {"a": 1, "b": 2}}`); st != http.StatusBadRequest {
		t.Fatalf("a tool of a disconnected server: %d %s", st, body)
	}
}
