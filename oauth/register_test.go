package oauth_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/oauth"
	"golang.org/x/oauth2"
)

// register posts body to /oauth/register and returns the status and the
// JSON answer.
func (h *harness) register(t *testing.T, body string, header ...string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", h.Server.URL+"/oauth/register", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("register: answer is not JSON: %v", err)
	}
	return resp.StatusCode, resp.Header, m
}

// clientCount is how many OAuth clients the store holds (of any account
// or none).
func (h *harness) clientCount(t *testing.T) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+h.Store.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM oauth_clients`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRegisterBadInput: invalid metadata is a 400 with RFC 7591's error
// JSON, and nothing is stored.
func TestRegisterBadInput(t *testing.T) {
	t.Parallel()
	h := setup(t)
	before := h.clientCount(t)
	for _, c := range []struct{ name, body, code string }{
		{"no redirect URIs", `{"client_name":"x"}`, "invalid_redirect_uri"},
		{"empty redirect URIs", `{"redirect_uris":[]}`, "invalid_redirect_uri"},
		{"http on a public host", `{"redirect_uris":["http://example.com/cb"]}`, "invalid_redirect_uri"},
		{"a fragment", `{"redirect_uris":["https://example.com/cb#x"]}`, "invalid_redirect_uri"},
		{"not a URL", `{"redirect_uris":["/cb"]}`, "invalid_redirect_uri"},
		{"a user in the URL", `{"redirect_uris":["https://u:p@example.com/cb"]}`, "invalid_redirect_uri"},
		{"one good, one bad", `{"redirect_uris":["https://example.com/cb","javascript:alert(1)"]}`, "invalid_redirect_uri"},
		{"implicit grant", `{"redirect_uris":["https://example.com/cb"],"grant_types":["implicit"]}`, "invalid_client_metadata"},
		{"client credentials", `{"redirect_uris":["https://example.com/cb"],"grant_types":["client_credentials"]}`, "invalid_client_metadata"},
		{"refresh only", `{"redirect_uris":["https://example.com/cb"],"grant_types":["refresh_token"]}`, "invalid_client_metadata"},
		{"token response", `{"redirect_uris":["https://example.com/cb"],"response_types":["token"]}`, "invalid_client_metadata"},
		{"private_key_jwt", `{"redirect_uris":["https://example.com/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, "invalid_client_metadata"},
		{"unknown scope", `{"redirect_uris":["https://example.com/cb"],"scope":"read root"}`, "invalid_client_metadata"},
		{"not JSON", `redirect_uris=https://example.com/cb`, "invalid_client_metadata"},
		{"wrong types", `{"redirect_uris":"https://example.com/cb"}`, "invalid_client_metadata"},
		{"too large", `{"redirect_uris":["https://example.com/cb"],"client_name":"` + strings.Repeat("x", 20<<10) + `"}`, "invalid_client_metadata"},
	} {
		h.Clock.Add(oauth.RegistrationWindow) // each case has the address's whole allowance
		t.Run(c.name, func(t *testing.T) {
			status, hdr, m := h.register(t, c.body)
			if status != 400 || m["error"] != c.code || m["error_description"] == "" || hdr.Get("Cache-Control") != "no-store" {
				t.Fatalf("%d %v, want 400 %s", status, m, c.code)
			}
		})
	}
	if status, _, m := h.register(t, `{"redirect_uris":["https://example.com/cb"]}`, "Content-Type", "text/plain"); status != 400 || m["error"] != "invalid_client_metadata" {
		t.Fatalf("text/plain: %d %v", status, m)
	}
	if n := h.clientCount(t); n != before {
		t.Fatalf("%d clients after refused registrations, want %d", n, before)
	}
}

// TestRegisterAndAuthorize: a public client registers (no secret), must
// use PKCE S256, and after the user's consent appears on the OAuth apps
// page, where revoking it stops its token; a confidential client gets a
// secret once, stored hashed.
func TestRegisterAndAuthorize(t *testing.T) {
	t.Parallel()
	h := setup(t)
	status, _, m := h.register(t, `{"client_name":"Claude","redirect_uris":["`+redirectURI+`"],
		"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"],
		"client_uri":"https://claude.ai","logo_uri":"https://claude.ai/logo.png"}`)
	if status != 201 || m["client_secret"] != nil || m["token_endpoint_auth_method"] != "none" || m["client_name"] != "Claude" ||
		!ams.HasPrefixID(m["client_id"].(string), ams.PrefixClient) || m["client_id_issued_at"] == nil {
		t.Fatalf("public registration: %d %v", status, m)
	}
	pub := &ams.OAuthClient{ID: m["client_id"].(string)}
	h.login(t, h.Browser, h.User.Email, testPassword)

	// Without PKCE: refused (redirected with invalid_request).
	p := h.get(t, h.Browser, h.authorizeURL(pub))
	if q := redirected(t, p); q.Get("error") != "invalid_request" {
		t.Fatalf("public client without PKCE: %v", q)
	}
	// A resource that is not this server's: invalid_target (RFC 8707).
	verifier := oauth2.GenerateVerifier()
	pkce := []string{"code_challenge", oauth2.S256ChallengeFromVerifier(verifier), "code_challenge_method", "S256"}
	p = h.get(t, h.Browser, h.authorizeURL(pub, append(pkce, "resource", "https://elsewhere.example/mcp")...))
	if q := redirected(t, p); q.Get("error") != "invalid_target" {
		t.Fatalf("foreign resource: %v", q)
	}
	// No scope: the MCP scopes are proposed; the page says the name is
	// the app's own claim.
	p = h.get(t, h.Browser, h.authorizeURL(pub, append(pkce, "scope", "", "resource", h.Server.URL+"/mcp")...))
	if !strings.Contains(p.Body, "registered itself") || !strings.Contains(p.Body, `value="write"`) || strings.Contains(p.Body, `value="admin"`) {
		t.Fatalf("consent page of a self-registered client:\n%s", p.Body)
	}
	q := redirected(t, h.consent(t, h.Browser, p, "allow", "write"))
	tok := h.tokenRequest(t, "", url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "client_id": {pub.ID},
		"redirect_uri": {redirectURI}, "code_verifier": {verifier}, "resource": {"https://elsewhere.example/"}}, "", "")
	wantTokenError(t, tok, 400, "invalid_target")
	tok = h.tokenRequest(t, "", url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "client_id": {pub.ID},
		"redirect_uri": {redirectURI}, "code_verifier": {verifier}, "resource": {h.Server.URL + "/mcp"}}, "", "")
	access, _ := tok.JSON["access_token"].(string)
	if tok.Status != 200 || access == "" || tok.JSON["scope"] != "read messages" {
		t.Fatalf("token: %d %s", tok.Status, tok.Raw)
	}
	if st, _ := h.apiStatus(t, access); st != 200 {
		t.Fatalf("/v1 with the registered client's token: %d", st)
	}
	// The OAuth apps page lists it; revoking it there stops the token.
	grants, err := h.Data.ListGrants(context.Background(), h.User.ID, h.Clock.Now())
	if err != nil || len(grants) != 1 || grants[0].ClientName != "Claude" {
		t.Fatalf("grants %v %v", grants, err)
	}
	apps := h.get(t, h.Browser, "/account/apps")
	if !strings.Contains(apps.Body, "Claude") {
		t.Fatalf("the OAuth apps page does not list the registered app:\n%s", apps.Body)
	}
	action := "/account/apps/authorized/" + pub.ID + "/revoke"
	if p := h.post(t, h.Browser, action, findForm(t, apps, action).Values); p.StatusCode != 200 || !strings.Contains(p.Body, "no longer has access") {
		t.Fatalf("revoke on the OAuth apps page: %d\n%s", p.StatusCode, p.Body)
	}
	if st, _ := h.apiStatus(t, access); st != 401 {
		t.Fatalf("/v1 after revocation: %d", st)
	}
	// It belongs to no account: the user's own clients do not list it.
	mine, _ := h.Data.ListOAuthClients(context.Background(), h.User.ID)
	for _, c := range mine {
		if c.ID == pub.ID {
			t.Fatal("a self-registered client is listed among the user's own")
		}
	}

	// A confidential client: its secret once, stored only hashed.
	status, _, m = h.register(t, `{"client_name":"VS Code","redirect_uris":["http://127.0.0.1:33418/cb"],"token_endpoint_auth_method":"client_secret_post"}`)
	secret, _ := m["client_secret"].(string)
	if status != 201 || !strings.HasPrefix(secret, oauth.PrefixClientSecret) || m["token_endpoint_auth_method"] != "client_secret_post" ||
		m["client_secret_expires_at"] != float64(0) {
		t.Fatalf("confidential registration: %d %v", status, m)
	}
	c, err := h.Data.FindOAuthClient(context.Background(), m["client_id"].(string))
	if err != nil || c.Public || c.SecretHash == "" || strings.Contains(c.SecretHash, secret) || c.UserID != "" {
		t.Fatalf("stored client %+v %v", c, err)
	}
}

// TestRegisterRateLimit: registrations are limited per client address;
// past the limit the answer is 429 with Retry-After and nothing is stored.
func TestRegisterRateLimit(t *testing.T) {
	t.Parallel()
	h := setup(t)
	body := `{"redirect_uris":["https://example.com/cb"],"token_endpoint_auth_method":"none"}`
	for i := 0; i < oauth.MaxRegistrations; i++ {
		if status, _, m := h.register(t, body); status != 201 {
			t.Fatalf("registration %d: %d %v", i+1, status, m)
		}
	}
	before := h.clientCount(t)
	status, hdr, m := h.register(t, body)
	if status != 429 || hdr.Get("Retry-After") == "" || m["error"] == nil {
		t.Fatalf("registration past the limit: %d %v %v", status, hdr, m)
	}
	if n := h.clientCount(t); n != before {
		t.Fatalf("%d clients, want %d", n, before)
	}
	// The window passes.
	h.Clock.Add(oauth.RegistrationWindow + 1)
	if status, _, _ := h.register(t, body); status != 201 {
		t.Fatalf("after the window: %d", status)
	}
}
