package http_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/internal/testing/amstest"
)

const appOrigin = "https://app.example.com"

func corsSetup(t *testing.T) *fixture {
	return &fixture{amstest.New(t, amstest.WithCORSOrigins(appOrigin))}
}

// preflight sends what a browser sends before a cross-origin POST with a
// bearer token and a JSON body.
func (f *fixture) preflight(path, origin string) *response {
	f.T.Helper()
	r := f.Do("OPTIONS", path, "", "", "Origin", origin, "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization,content-type,idempotency-key")
	return &response{r.Status, r.Header, r.Body}
}

// vary returns the header names of the answer's Vary headers.
func vary(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Vary") {
		for _, n := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(n))
		}
	}
	return out
}

// corsHeaders returns the Access-Control-* headers of an answer.
func corsHeaders(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out = append(out, k)
		}
	}
	return out
}

// listed reports whether every name is in the comma-separated header
// value (case-insensitive, as browsers compare).
func listed(value string, names ...string) bool {
	var have []string
	for _, n := range strings.Split(value, ",") {
		have = append(have, strings.ToLower(strings.TrimSpace(n)))
	}
	for _, n := range names {
		if !slices.Contains(have, strings.ToLower(n)) {
			return false
		}
	}
	return true
}

// TestCORSPreflight: a preflight from an allowed origin is answered 204
// with what the browser needs, before any route (no 405); from another
// origin 403 without any Access-Control-* header; an OPTIONS that is
// not a preflight still gets the route's 405.
func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	f := corsSetup(t)

	for _, path := range []string{"/v1/assistants", "/v1/assistants/" + "ast_x", "/oauth/token", "/oauth/revoke"} {
		r := f.preflight(path, appOrigin)
		if r.status != 204 || len(r.body) != 0 {
			t.Fatalf("preflight of %s: %d %s", path, r.status, r.body)
		}
		h := r.header
		if h.Get("Access-Control-Allow-Origin") != appOrigin || !listed(h.Get("Access-Control-Allow-Methods"), "GET", "POST", "PATCH", "DELETE") ||
			!listed(h.Get("Access-Control-Allow-Headers"), "Authorization", "Content-Type", "Idempotency-Key") || h.Get("Access-Control-Max-Age") == "" {
			t.Fatalf("preflight of %s: %v", path, h)
		}
		if h.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatalf("preflight of %s allows credentials", path)
		}
		if v := vary(h); !slices.Contains(v, "Origin") || !slices.Contains(v, "Access-Control-Request-Method") || !slices.Contains(v, "Access-Control-Request-Headers") {
			t.Fatalf("preflight of %s: Vary %v", path, v)
		}
	}

	// Another origin: refused, and nothing the browser could take for a
	// permission. The same origin on another scheme or port is another
	// origin.
	for _, origin := range []string{"https://evil.example", "http://app.example.com", "https://app.example.com:8443", "null"} {
		r := f.preflight("/v1/assistants", origin)
		wantError(t, r, 403, "permission_error", "origin_not_allowed", "")
		if c := corsHeaders(r.header); len(c) > 0 {
			t.Fatalf("preflight from %s: CORS headers %v", origin, c)
		}
		if !slices.Contains(vary(r.header), "Origin") {
			t.Fatalf("preflight from %s: Vary %v", origin, r.header.Values("Vary"))
		}
	}

	// A plain OPTIONS (no Origin) is what it was: 405 with Allow.
	r := f.do("OPTIONS", "/v1/assistants", "")
	wantError(t, r, 405, "invalid_request_error", "method_not_allowed", "")
	if r.header.Get("Allow") != "GET, POST" || len(corsHeaders(r.header)) > 0 || !slices.Contains(vary(r.header), "Origin") {
		t.Fatalf("plain OPTIONS: %v", r.header)
	}
	// With an Origin but no Access-Control-Request-Method it is no
	// preflight either: the route answers, with the CORS headers so that
	// the page can read the answer.
	r = f.do("OPTIONS", "/v1/assistants", "", "Origin", appOrigin)
	if r.status != 405 || r.header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Fatalf("OPTIONS with Origin only: %d %v", r.status, r.header)
	}
}

// TestCORSRequests: the answers to an allowed origin carry
// Access-Control-Allow-Origin and expose the headers the SDKs read,
// errors included; another origin's carry none; every /v1 answer varies
// on Origin; the account pages and operations endpoints get nothing.
func TestCORSRequests(t *testing.T) {
	t.Parallel()
	f := corsSetup(t)

	r := f.do("GET", "/v1/assistants", "", "Origin", appOrigin)
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Fatalf("GET from the allowed origin: %d %v", r.status, r.header)
	}
	if !listed(r.header.Get("Access-Control-Expose-Headers"), "X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
		"RateLimit", "RateLimit-Policy", "Retry-After", "Location", "Idempotent-Replayed") {
		t.Fatalf("exposed: %q", r.header.Get("Access-Control-Expose-Headers"))
	}
	if r.header.Get("Access-Control-Allow-Credentials") != "" || !slices.Contains(vary(r.header), "Origin") {
		t.Fatalf("GET from the allowed origin: %v", r.header)
	}
	// A POST (what the preflight allowed) and an error: both readable.
	p := f.do("POST", "/v1/tasks", `{"assistant_id":"`+f.Assistant.ID+`","title":"From the browser"}`, "Origin", appOrigin, "Idempotency-Key", "k1")
	if p.status != 201 || p.header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Fatalf("POST from the allowed origin: %d %v %s", p.status, p.header, p.body)
	}
	e := f.Do("GET", "/v1/assistants", "", "", "Origin", appOrigin)
	if e.Status != 401 || e.Header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Fatalf("401 to the allowed origin: %d %v", e.Status, e.Header)
	}

	// Another origin: the answer (a server cannot stop a request) has no
	// CORS header, so the browser hides it from the page.
	r = f.do("GET", "/v1/assistants", "", "Origin", "https://evil.example")
	if r.status != 200 || len(corsHeaders(r.header)) > 0 || !slices.Contains(vary(r.header), "Origin") {
		t.Fatalf("GET from another origin: %d %v", r.status, r.header)
	}
	// No Origin (curl, a server): unchanged but for Vary.
	r = f.do("GET", "/v1/assistants", "")
	if r.status != 200 || len(corsHeaders(r.header)) > 0 || !slices.Contains(vary(r.header), "Origin") {
		t.Fatalf("GET without Origin: %d %v", r.status, r.header)
	}
	// Not the API: nothing.
	for _, path := range []string{"/login", "/healthz", "/account"} {
		r := f.Do("GET", path, "", "", "Origin", appOrigin)
		if len(corsHeaders(r.Header)) > 0 || slices.Contains(vary(r.Header), "Origin") {
			t.Fatalf("%s: %v", path, r.Header)
		}
		pf := f.Do("OPTIONS", path, "", "", "Origin", appOrigin, "Access-Control-Request-Method", "POST")
		if pf.Status == 204 || len(corsHeaders(pf.Header)) > 0 {
			t.Fatalf("preflight of %s: %d %v", path, pf.Status, pf.Header)
		}
	}
}

// TestCORSPublicClients: the origins of a public client's redirect URIs
// are allowed, a confidential client's are not; a client registered
// later is allowed once the cached set is PublicOriginsMinAge old, a
// deleted one refused once it is PublicOriginsMaxAge old.
func TestCORSPublicClients(t *testing.T) {
	t.Parallel()
	f := setup(t) // no --cors-allowed-origins
	ctx := context.Background()
	client := func(public bool, uris ...string) *ams.OAuthClient {
		t.Helper()
		c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), UserID: f.User.ID, Name: "App", RedirectURIs: uris, Public: public,
			CreatedAt: f.Clock.Now(), UpdatedAt: f.Clock.Now()}
		if !public {
			c.SecretHash = ams.HashSecret("s")
		}
		if err := f.Store.CreateOAuthClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	spa := client(true, "https://SPA.example:443/callback", "http://localhost:5173/cb", "com.example.app:/cb")
	client(false, "https://server.example/cb")

	for origin, want := range map[string]int{
		"https://spa.example": 204, "http://localhost:5173": 204, // default port dropped, host lower case
		"https://server.example": 403, "http://localhost:5174": 403, appOrigin: 403,
	} {
		if r := f.preflight("/v1/assistants", origin); r.status != want {
			t.Fatalf("preflight from %s: %d, want %d", origin, r.status, want)
		}
	}
	// An answer to a request with an API key is not the public client's
	// to read (issue 26, L7; oauth's TestCORSOnlyWithTheClientsCredentials
	// shows its own tokens' answers are); an answer without credentials is.
	if r := f.do("GET", "/v1/assistants", "", "Origin", "http://localhost:5173"); r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("GET with an API key from a public client's origin: %v", r.header)
	}
	if r := f.do("GET", "/v1/assistants", "", "Origin", "http://localhost:5173", "Authorization", ""); r.status != 401 ||
		r.header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
		t.Fatalf("GET without credentials from a public client's origin: %d %v", r.status, r.header)
	}

	// Registered now: allowed once the set may be reloaded for an origin
	// it lacks.
	client(true, "https://new.example/cb")
	if r := f.preflight("/v1/assistants", "https://new.example"); r.status != 403 {
		t.Fatalf("new client, set just loaded: %d", r.status)
	}
	f.Clock.Add(amshttp.PublicOriginsMinAge)
	if r := f.preflight("/v1/assistants", "https://new.example"); r.status != 204 {
		t.Fatalf("new client, set %s old: %d", amshttp.PublicOriginsMinAge, r.status)
	}

	// Deleted: refused once the set is reloaded.
	if err := f.Store.DeleteOAuthClient(ctx, f.User.ID, spa.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if r := f.preflight("/v1/assistants", "https://spa.example"); r.status != 204 {
		t.Fatalf("deleted client, set fresh: %d", r.status)
	}
	f.Clock.Add(amshttp.PublicOriginsMaxAge)
	if r := f.preflight("/v1/assistants", "https://spa.example"); r.status != 403 {
		t.Fatalf("deleted client, set %s old: %d", amshttp.PublicOriginsMaxAge, r.status)
	}
}

// TestParseOrigins: --cors-allowed-origins takes origins only, in the
// form browsers send them; "*" and anything with a path are refused.
func TestParseOrigins(t *testing.T) {
	t.Parallel()
	got, err := amshttp.ParseOrigins(" https://App.example.com , http://localhost:3000,https://x.example:443/,http://[::1]:8080")
	if want := []string{"https://app.example.com", "http://localhost:3000", "https://x.example", "http://[::1]:8080"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("ParseOrigins: %v %v, want %v", got, err, want)
	}
	if got, err := amshttp.ParseOrigins(""); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"*", "null", "app.example.com", "https://app.example.com/app", "ftp://app.example.com", "https://u:p@app.example.com",
		"https://app.example.com?x=1", "https://*.example.com", "https://app.example.com:port", "https://"} {
		if _, err := amshttp.ParseOrigins("https://ok.example," + bad); err == nil || !strings.Contains(err.Error(), "origin") && !strings.Contains(err.Error(), "explicitly") {
			t.Fatalf("%q accepted or unclear: %v", bad, err)
		}
	}
}

// TestCORSMCP: /mcp, the RFC 9728 metadata and POST /oauth/register
// follow the API's policy for the browser-based MCP clients that call
// them: a preflight of /mcp from an allowed origin allows the headers of
// the MCP transport (Mcp-Session-Id, MCP-Protocol-Version,
// Last-Event-ID) besides Authorization and Content-Type; its answers,
// 401s included, expose WWW-Authenticate and Mcp-Session-Id; the metadata
// and a registration are readable; another origin gets a 403 preflight
// and answers without any Access-Control-* header.
func TestCORSMCP(t *testing.T) {
	t.Parallel()
	f := corsSetup(t)
	mcpHeaders := "authorization,content-type,mcp-protocol-version,mcp-session-id,last-event-id"
	r := f.Do("OPTIONS", "/mcp", "", "", "Origin", appOrigin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", mcpHeaders)
	h := r.Header
	if r.Status != 204 || h.Get("Access-Control-Allow-Origin") != appOrigin || !listed(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!listed(h.Get("Access-Control-Allow-Headers"), strings.Split(mcpHeaders, ",")...) || h.Get("Access-Control-Max-Age") == "" ||
		h.Get("Access-Control-Allow-Credentials") != "" || !slices.Contains(vary(h), "Access-Control-Request-Headers") {
		t.Fatalf("preflight of /mcp: %d %v", r.Status, h)
	}
	for _, path := range []string{"/oauth/register", "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		if r := f.preflight(path, appOrigin); r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != appOrigin ||
			!listed(r.header.Get("Access-Control-Allow-Headers"), "Content-Type", "Authorization") {
			t.Fatalf("preflight of %s: %d %v", path, r.status, r.header)
		}
	}

	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	mcpReq := []string{"Origin", appOrigin, "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-06-18"}
	exposed := func(name string, h http.Header) {
		t.Helper()
		if h.Get("Access-Control-Allow-Origin") != appOrigin || !listed(h.Get("Access-Control-Expose-Headers"), "WWW-Authenticate", "Mcp-Session-Id", "X-Request-Id") ||
			!slices.Contains(vary(h), "Origin") {
			t.Fatalf("%s: %v", name, h)
		}
	}
	// Without credentials: the 401 and its RFC 9728 hint are readable, so
	// that the client can discover the authorization server.
	u := f.Do("POST", "/mcp", "", list, mcpReq...)
	if u.Status != 401 || !strings.Contains(u.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("/mcp without credentials: %d %v", u.Status, u.Header)
	}
	exposed("401 of /mcp", u.Header)
	a := f.do("POST", "/mcp", list, mcpReq...)
	if a.status != 200 || !strings.Contains(string(a.body), "list_assistants") {
		t.Fatalf("tools/list: %d %s", a.status, a.body)
	}
	exposed("tools/list", a.header)
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server"} {
		r := f.Do("GET", path, "", "", "Origin", appOrigin)
		if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != appOrigin {
			t.Fatalf("%s: %d %v", path, r.Status, r.Header)
		}
	}
	reg := f.Do("POST", "/oauth/register", "", `{"redirect_uris": ["`+appOrigin+`/callback"], "client_name": "Browser MCP client", "token_endpoint_auth_method": "none"}`,
		"Origin", appOrigin)
	if reg.Status != 201 || reg.Header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Fatalf("registration: %d %v %s", reg.Status, reg.Header, reg.Body)
	}

	// Another origin: refused preflights, unreadable answers.
	const evil = "https://evil.example"
	for _, path := range []string{"/mcp", "/oauth/register", "/.well-known/oauth-protected-resource/mcp"} {
		r := f.preflight(path, evil)
		wantError(t, r, 403, "permission_error", "origin_not_allowed", "")
		if c := corsHeaders(r.header); len(c) > 0 {
			t.Fatalf("preflight of %s from %s: %v", path, evil, c)
		}
	}
	if r := f.do("POST", "/mcp", list, "Origin", evil, "Accept", "application/json, text/event-stream"); r.status != 200 || len(corsHeaders(r.header)) > 0 {
		t.Fatalf("/mcp from %s: %d %v", evil, r.status, r.header)
	}
	if r := f.Do("GET", "/.well-known/oauth-protected-resource/mcp", "", "", "Origin", evil); r.Status != 200 || len(corsHeaders(r.Header)) > 0 {
		t.Fatalf("metadata from %s: %d %v", evil, r.Status, r.Header)
	}
	// The /v1 preflight allows only the API's headers.
	if r := f.preflight("/v1/assistants", appOrigin); listed(r.header.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") {
		t.Fatalf("/v1 preflight allows the MCP headers: %v", r.header)
	}
}
