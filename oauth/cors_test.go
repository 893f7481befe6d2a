package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/amsdev/ams/oauth"
	"golang.org/x/oauth2"
)

// TestCORSOnlyWithTheClientsCredentials (issue 26, L7): the origin of a
// public client's redirect URI may read the API's answers to requests
// authenticated by that client's access tokens, and answers that hold no
// account's data (a 401); not answers to requests made with an API key or
// another client's token. Its token requests are readable when they name
// the client. A preflight, which carries no credentials, is allowed.
func TestCORSOnlyWithTheClientsCredentials(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)
	const origin = "https://client.example" // h.Public's redirect URI's
	other, _, err := oauth.CreateClient(context.Background(), h.Data, oauth.ClientParams{
		UserID: h.User.ID, Name: "Other SPA", RedirectURIs: []string{"https://other-spa.example/cb"}, Public: true}, h.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	verifier := oauth2.GenerateVerifier()
	conf := &oauth2.Config{ClientID: h.Public.ID, RedirectURL: redirectURI, Scopes: []string{"read"},
		Endpoint: oauth2.Endpoint{AuthURL: h.Server.URL + "/oauth/authorize", TokenURL: h.Server.URL + "/oauth/token",
			AuthStyle: oauth2.AuthStyleInParams}}
	q := redirected(t, h.consent(t, h.Browser, h.get(t, h.Browser, conf.AuthCodeURL("cors-state-1", oauth2.S256ChallengeOption(verifier))), "allow"))
	public, err := conf.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	confidential := h.exchange(t, h.code(t, h.Client)).JSON["access_token"].(string)

	for _, c := range []struct {
		name, origin, token string
		status              int
		allowed             bool
	}{
		{"the client's token", origin, public.AccessToken, 200, true},
		{"an API key", origin, h.Key, 200, false},
		{"another client's token", origin, confidential, 200, false},
		{"the token from another public client's origin", "https://other-spa.example", public.AccessToken, 200, false},
		{"no credentials", origin, "", 401, true},
	} {
		r := h.Do("GET", "/v1/assistants", c.token, "", "Origin", c.origin)
		got := r.Header.Get("Access-Control-Allow-Origin")
		if r.Status != c.status || (got == c.origin) != c.allowed || (got != "" && got != c.origin) {
			t.Errorf("%s: %d, Access-Control-Allow-Origin %q; want %d, allowed %v", c.name, r.Status, got, c.status, c.allowed)
		}
		// The MCP endpoint follows the same rule (a browser-based MCP
		// client is a public client).
		r = h.Do("POST", "/mcp", c.token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Origin", c.origin, "Accept", "application/json, text/event-stream")
		got = r.Header.Get("Access-Control-Allow-Origin")
		if r.Status != c.status || (got == c.origin) != c.allowed || (got != "" && got != c.origin) ||
			(c.allowed && !strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id")) {
			t.Errorf("/mcp, %s: %d, %v; want %d, allowed %v", c.name, r.Status, r.Header, c.status, c.allowed)
		}
	}
	// Answers that hold no account's data: readable from a public
	// client's origin, so that a browser-based MCP client can discover
	// the authorization server and register itself.
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"} {
		if r := h.Do("GET", path, "", "", "Origin", origin); r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("%s from %s: %d %v", path, origin, r.Status, r.Header)
		}
	}
	if r := h.Do("POST", "/oauth/register", "", `{"redirect_uris": ["https://client.example/cb2"], "token_endpoint_auth_method": "none"}`, "Origin", origin); r.Status != 201 ||
		r.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("registration from %s: %d %v %s", origin, r.Status, r.Header, r.Body)
	}
	for _, o := range []string{origin, "https://other-spa.example"} {
		for _, path := range []string{"/v1/assistants", "/mcp", "/oauth/register"} {
			r := h.Do("OPTIONS", path, "", "", "Origin", o, "Access-Control-Request-Method", "POST",
				"Access-Control-Request-Headers", "authorization")
			if r.Status != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Origin") != o {
				t.Errorf("preflight of %s from %s: %d %v", path, o, r.Status, r.Header)
			}
		}
	}

	// The token endpoint: a refresh naming the client, from its origin.
	refresh := func(from, clientID string) *http.Response {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {public.RefreshToken}, "client_id": {clientID}}
		req, _ := http.NewRequest("POST", h.Server.URL+"/oauth/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", from)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := refresh(origin, h.Public.ID); r.StatusCode != 200 || r.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("refresh of the client from its origin: %d %v", r.StatusCode, r.Header)
	}
	if r := refresh("https://other-spa.example", h.Public.ID); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("refresh of the client from another client's origin: %v", r.Header)
	}
	if r := refresh(origin, other.ID); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("refresh naming another client: %v", r.Header)
	}
}
