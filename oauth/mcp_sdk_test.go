package oauth_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The official MCP TypeScript SDK (@modelcontextprotocol/sdk, installed
// by `npm ci --prefix oauth/testdata/mcpsdk`) as the client of ams's
// /mcp: tools listed and called with API keys, and the whole OAuth path
// with the SDK's own discovery, registration, PKCE and token functions,
// through ams's login and consent pages. CI sets AMS_REQUIRE_NODE_TESTS,
// so these run there rather than skip.

// needMCPSDK skips the test (fails it in CI) unless node and the SDK are
// installed; it returns the script's path.
func needMCPSDK(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("testdata", "mcpsdk")
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk"))
	if nodeErr != nil || modErr != nil {
		msg := "node or @modelcontextprotocol/sdk is missing: run `npm ci --prefix oauth/testdata/mcpsdk`"
		if os.Getenv("AMS_REQUIRE_NODE_TESTS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return filepath.Join(dir, "client.mjs")
}

// sdkTools are the tools ams's /mcp lists.
var sdkTools = []string{"complete_task", "create_calendar_event", "create_task", "list_assistants", "list_calendar_events",
	"list_conversations", "list_messages", "list_tasks", "send_message"}

// sdkResult is what client.mjs's exercise reports.
type sdkResult struct {
	Tools      []string        `json:"tools"`
	ReadOnly   map[string]bool `json:"read_only"`
	Assistants struct {
		Object string           `json:"object"`
		Data   []map[string]any `json:"data"`
	} `json:"assistants"`
	Created struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	} `json:"created"`
	Tasks struct {
		Data []map[string]any `json:"data"`
	} `json:"tasks"`
}

func nodeContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestMCPSDKWithAPIKeys: the SDK connects with an API key, lists the
// tools and calls them; the answers are the REST records; a read-only
// key is refused by create_task, which then stores nothing.
func TestMCPSDKWithAPIKeys(t *testing.T) {
	t.Parallel()
	script := needMCPSDK(t)
	h := setup(t)
	readKey := h.NewKey(h.User, "read")
	out, err := exec.CommandContext(nodeContext(t), "node", script, "apikey", h.Server.URL+"/mcp", h.Key, readKey).Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderrOf(err))
	}
	var got struct{ Full, Read sdkResult }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("answer %s: %v", out, err)
	}
	full, read := got.Full, got.Read
	if !slices.Equal(full.Tools, sdkTools) || !full.ReadOnly["list_tasks"] || full.ReadOnly["create_task"] {
		t.Fatalf("tools %v, read-only %v", full.Tools, full.ReadOnly)
	}
	if full.Assistants.Object != "list" || len(full.Assistants.Data) != 1 || full.Assistants.Data[0]["id"] != h.Assistant.ID {
		t.Fatalf("list_assistants: %+v", full.Assistants)
	}
	task := full.Created.StructuredContent
	if full.Created.IsError || task["object"] != "task" || task["title"] != "From the TypeScript SDK" {
		t.Fatalf("create_task: %+v", full.Created)
	}
	// The record is the API's.
	rest := h.Do("GET", "/v1/tasks/"+task["id"].(string), h.Key, "").JSON(t)
	if rest["created_at"] != task["created_at"] || rest["assistant_id"] != h.Assistant.ID {
		t.Fatalf("GET /v1/tasks/{id} %v, the tool's %v", rest, task)
	}
	// The read-only key lists but cannot create.
	e, _ := read.Created.StructuredContent["error"].(map[string]any)
	if !read.Created.IsError || e["code"] != "insufficient_scope" || !strings.Contains(e["message"].(string), "write") {
		t.Fatalf("create_task with a read-only key: %+v", read.Created)
	}
	if len(read.Tasks.Data) != 1 {
		t.Fatalf("tasks after the refused call: %v", read.Tasks.Data)
	}
}

// TestMCPSDKOAuth: the SDK, knowing only the /mcp URL, is refused 401,
// follows resource_metadata to ams's authorization server, registers
// itself (RFC 7591), sends the user to the authorization URL (PKCE S256,
// resource) where the Go test signs in and consents without "write",
// exchanges the code, and calls the tools with the token: reading works,
// create_task is refused.
func TestMCPSDKOAuth(t *testing.T) {
	t.Parallel()
	script := needMCPSDK(t)
	h := setup(t)
	cmd := exec.CommandContext(nodeContext(t), "node", script, "oauth", h.Server.URL+"/mcp", otherURI)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func(v any) {
		t.Helper()
		if !lines.Scan() {
			cmd.Wait()
			t.Fatalf("node ended early: %s", stderr.String())
		}
		if err := json.Unmarshal(lines.Bytes(), v); err != nil {
			t.Fatalf("node said %s: %v", lines.Bytes(), err)
		}
	}
	var start struct {
		ProtectedResource   map[string]any `json:"protected_resource"`
		AuthorizationServer map[string]any `json:"authorization_server"`
		Client              map[string]any `json:"client"`
		AuthorizationURL    string         `json:"authorization_url"`
	}
	next(&start)
	if start.ProtectedResource["resource"] != h.Server.URL+"/mcp" || start.AuthorizationServer["registration_endpoint"] != h.Server.URL+"/oauth/register" {
		t.Fatalf("discovery: %+v", start)
	}
	clientID, _ := start.Client["client_id"].(string)
	c, err := h.Data.FindOAuthClient(context.Background(), clientID)
	if err != nil || !c.Public || c.Name != "TypeScript SDK test" {
		t.Fatalf("registered client %+v %v", c, err)
	}
	au, err := url.Parse(start.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	q := au.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != h.Server.URL+"/mcp" || q.Get("client_id") != clientID {
		t.Fatalf("authorization URL %s", au)
	}

	// The user: signs in, sees the consent page, allows without write.
	h.login(t, h.Browser, h.User.Email, testPassword)
	p := h.get(t, h.Browser, start.AuthorizationURL)
	if !strings.Contains(p.Body, "TypeScript SDK test") {
		t.Fatalf("consent page: %d %s %s\n%s", p.StatusCode, p.Request.URL, p.Header.Get("Location"), p.Body)
	}
	p = h.consent(t, h.Browser, p, "allow", "write")
	loc, err := url.Parse(p.Header.Get("Location"))
	if err != nil || p.StatusCode != 303 || loc.Scheme+"://"+loc.Host+loc.Path != otherURI || loc.Query().Get("code") == "" {
		t.Fatalf("consent answer %d %s", p.StatusCode, p.Header.Get("Location"))
	}
	if _, err := io.WriteString(stdin, loc.Query().Get("code")+"\n"); err != nil {
		t.Fatal(err)
	}

	var end struct {
		Tokens struct {
			TokenType  string `json:"token_type"`
			Scope      string `json:"scope"`
			HasRefresh bool   `json:"has_refresh"`
		} `json:"tokens"`
		sdkResult
	}
	next(&end)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	if end.Tokens.TokenType != "Bearer" || end.Tokens.Scope != "read messages" || !end.Tokens.HasRefresh {
		t.Fatalf("tokens %+v", end.Tokens)
	}
	if !slices.Equal(end.Tools, sdkTools) || len(end.Assistants.Data) != 1 {
		t.Fatalf("with the token: tools %v, assistants %+v", end.Tools, end.Assistants)
	}
	e, _ := end.Created.StructuredContent["error"].(map[string]any)
	if !end.Created.IsError || e["code"] != "insufficient_scope" || len(end.Tasks.Data) != 0 {
		t.Fatalf("create_task with a token without write: %+v, tasks %v", end.Created, end.Tasks.Data)
	}
	// The app is now on the user's OAuth apps page.
	if apps := h.get(t, h.Browser, "/account/apps"); !strings.Contains(apps.Body, "TypeScript SDK test") {
		t.Fatalf("OAuth apps page:\n%s", apps.Body)
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
