package oauth_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/oauth"
	"golang.org/x/oauth2"
)

// TestTokenResponse checks the token response field by field.
func TestTokenResponse(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)
	r := h.exchange(t, h.code(t, h.Client, "scope", "read+messages"))
	if r.Status != http.StatusOK {
		t.Fatalf("exchange: %d %s", r.Status, r.Raw)
	}
	var keys []string
	for k := range r.JSON {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"access_token", "expires_in", "refresh_token", "scope", "token_type"}; !slices.Equal(keys, want) {
		t.Errorf("fields %v, want %v", keys, want)
	}
	if r.JSON["token_type"] != "Bearer" || r.JSON["expires_in"] != float64(3600) || r.JSON["scope"] != "read messages" {
		t.Errorf("token response %s", r.Raw)
	}
	if !strings.HasPrefix(r.JSON["access_token"].(string), ams.PrefixAccessToken) || !strings.HasPrefix(r.JSON["refresh_token"].(string), ams.PrefixRefreshToken) {
		t.Errorf("prefixes: %s", r.Raw)
	}
	if r.Header.Get("Cache-Control") != "no-store" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("headers %v", r.Header)
	}
}

// TestTokenErrors provokes every RFC 6749 section 5.2 error the token
// endpoint gives. (unauthorized_client is not among them: every ams client
// may use both grant types, and a code or refresh token presented by a
// client it was not issued to is invalid_grant, as RFC 6749 4.1.3 says.
// The revocation endpoint answers unauthorized_client for another
// client's token: TestRevokeAccessToken.)
func TestTokenErrors(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)
	tok := func(form url.Values) *tokenResponse { return h.tokenRequest(t, "", form, h.Client.ID, h.Secret) }

	t.Run("invalid_request", func(t *testing.T) {
		wantTokenError(t, tok(url.Values{"code": {"x"}}), 400, "invalid_request")                                                // no grant_type
		wantTokenError(t, tok(url.Values{"grant_type": {"authorization_code"}}), 400, "invalid_request")                         // no code
		wantTokenError(t, tok(url.Values{"grant_type": {"refresh_token"}}), 400, "invalid_request")                              // no refresh_token
		wantTokenError(t, tok(url.Values{}), 400, "invalid_request")                                                             // empty body
		req, _ := http.NewRequest("POST", h.Server.URL+"/oauth/token", strings.NewReader(`{"grant_type":"authorization_code"}`)) // not a form
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(h.Client.ID, h.Secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("JSON body: %d, want 400", resp.StatusCode)
		}
	})

	t.Run("invalid_client", func(t *testing.T) {
		code := h.code(t, h.Client)
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
		for name, r := range map[string]*tokenResponse{
			"wrong secret (basic)": h.tokenRequest(t, "", form, h.Client.ID, "ams_cs_wrong"),
			"unknown client":       h.tokenRequest(t, "", form, "cli_unknown", h.Secret),
			"wrong secret (post)":  h.tokenRequest(t, "", with(form, "client_id", h.Client.ID, "client_secret", "ams_cs_wrong"), "", ""),
			"no secret":            h.tokenRequest(t, "", with(form, "client_id", h.Client.ID), "", ""),
			"no client at all":     h.tokenRequest(t, "", form, "", ""),
		} {
			t.Run(name, func(t *testing.T) {
				wantTokenError(t, r, http.StatusUnauthorized, "invalid_client")
				if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic") {
					t.Errorf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
				}
			})
		}
		// The code survived the failed attempts; client_secret_post works.
		r := h.tokenRequest(t, "", with(form, "client_id", h.Client.ID, "client_secret", h.Secret), "", "")
		if r.Status != http.StatusOK {
			t.Errorf("client_secret_post: %d %s", r.Status, r.Raw)
		}
	})

	t.Run("invalid_grant", func(t *testing.T) {
		wantTokenError(t, h.exchange(t, "ams_ac_not.acode"), 400, "invalid_grant")
		wantTokenError(t, h.exchange(t, "garbage"), 400, "invalid_grant")

		// A code used twice: refused, and the tokens of its first use are
		// revoked.
		code := h.code(t, h.Client)
		first := h.exchange(t, code)
		if first.Status != 200 {
			t.Fatalf("first use: %d %s", first.Status, first.Raw)
		}
		wantTokenError(t, h.exchange(t, code), 400, "invalid_grant")
		if st, _ := h.apiStatus(t, first.JSON["access_token"].(string)); st != 401 {
			t.Errorf("token of a reused code: %d, want 401", st)
		}

		// Another redirect URI than the authorization request's (even one
		// registered), or none.
		code = h.code(t, h.Client)
		wantTokenError(t, h.exchange(t, code, "redirect_uri", otherURI), 400, "invalid_grant")
		wantTokenError(t, h.exchange(t, code, "redirect_uri", ""), 400, "invalid_grant")

		// A code of another client.
		other, otherSecret := h.newClient(t)
		code = h.code(t, h.Client)
		r := h.tokenRequest(t, "", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}, other.ID, otherSecret)
		wantTokenError(t, r, 400, "invalid_grant")

		// PKCE: a wrong verifier, or none, is refused; the code stays bound
		// to its challenge (no downgrade), and the right verifier works.
		verifier := oauth2.GenerateVerifier()
		code = h.code(t, h.Client, "code_challenge", oauth2.S256ChallengeFromVerifier(verifier), "code_challenge_method", "S256")
		wantTokenError(t, h.exchange(t, code, "code_verifier", oauth2.GenerateVerifier()), 400, "invalid_grant")
		wantTokenError(t, h.exchange(t, code), 400, "invalid_grant")
		if r := h.exchange(t, code, "code_verifier", verifier); r.Status != 200 {
			t.Errorf("right verifier: %d %s", r.Status, r.Raw)
		}
		// A verifier for a code issued without a challenge.
		wantTokenError(t, h.exchange(t, h.code(t, h.Client), "code_verifier", verifier), 400, "invalid_grant")

		// Expiry on the injected clock: a code lives 10 minutes.
		code = h.code(t, h.Client)
		late := h.code(t, h.Client)
		h.Clock.Add(9*time.Minute + 59*time.Second)
		if r := h.exchange(t, code); r.Status != 200 {
			t.Errorf("code at 9:59: %d %s", r.Status, r.Raw)
		}
		h.Clock.Add(2 * time.Second)
		wantTokenError(t, h.exchange(t, late), 400, "invalid_grant")

		// A refresh token that is unknown, or presented as the wrong kind.
		r = tok(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"ams_rt_un.known"}})
		wantTokenError(t, r, 400, "invalid_grant")
		at := h.exchange(t, h.code(t, h.Client)).JSON["access_token"].(string)
		r = tok(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {at}})
		wantTokenError(t, r, 400, "invalid_grant")
	})

	t.Run("unsupported_grant_type", func(t *testing.T) {
		for _, gt := range []string{"password", "client_credentials", "implicit", "urn:ietf:params:oauth:grant-type:jwt-bearer"} {
			r := tok(url.Values{"grant_type": {gt}, "username": {"ann@example.com"}, "password": {testPassword}, "scope": {"read"}})
			wantTokenError(t, r, 400, "unsupported_grant_type")
		}
	})

	t.Run("invalid_scope", func(t *testing.T) {
		r := h.exchange(t, h.code(t, h.Client, "scope", "read"))
		rt := r.JSON["refresh_token"].(string)
		// More than the grant holds: refused, and the refresh token still
		// works.
		for _, scope := range []string{"read write", "read+admin", "bogus"} {
			wantTokenError(t, tok(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "scope": {scope}}), 400, "invalid_scope")
		}
		r = tok(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "scope": {"read"}})
		if r.Status != 200 || r.JSON["scope"] != "read" {
			t.Errorf("refresh with the granted scope: %d %s", r.Status, r.Raw)
		}
		// Refresh token expiry: 30 days on the injected clock.
		rt = r.JSON["refresh_token"].(string)
		h.Clock.Add(ams.RefreshTokenLifetime + time.Second)
		wantTokenError(t, tok(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}), 400, "invalid_grant")
	})
}

// TestConcurrentRefresh: two simultaneous refreshes with one token; one
// wins, the other is reuse.
func TestConcurrentRefresh(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)
	rt := h.exchange(t, h.code(t, h.Client)).JSON["refresh_token"].(string)
	var wg sync.WaitGroup
	status := make([]int, 2)
	for i := range status {
		wg.Go(func() {
			status[i] = h.tokenRequest(t, "", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, h.Client.ID, h.Secret).Status
		})
	}
	wg.Wait()
	slices.Sort(status)
	if status[0] != 200 || status[1] != 400 {
		t.Errorf("statuses %v, want one 200 and one 400", status)
	}
}

// TestMetadata checks the RFC 8414 document.
func TestMetadata(t *testing.T) {
	t.Parallel()
	h := setup(t)
	r := h.Do("GET", "/.well-known/oauth-authorization-server", "", "")
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	base := h.Server.URL
	for k, want := range map[string]any{
		"issuer": base, "authorization_endpoint": base + "/oauth/authorize", "token_endpoint": base + "/oauth/token",
		"revocation_endpoint": base + "/oauth/revoke",
	} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	list := func(k string) []string {
		var out []string
		for _, v := range m[k].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	for k, want := range map[string][]string{
		"response_types_supported":              {"code"},
		"grant_types_supported":                 {"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      {"S256"},
		"token_endpoint_auth_methods_supported": {"client_secret_basic", "client_secret_post", "none"},
		"scopes_supported":                      {"read", "write", "admin", "messages", "integrations"},
	} {
		if got := list(k); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
}

// with returns a copy of v with the kv pairs set.
func with(v url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// TestConcurrentRefreshAcrossProcesses: two authorization servers on one
// store stand for two `ams serve` processes (each has its own in-process
// lock); the same refresh token presented to both at once is honoured
// once. The store's credential lease is what serializes them.
func TestConcurrentRefreshAcrossProcesses(t *testing.T) {
	t.Parallel()
	h := setup(t)
	other, err := oauth.New(oauth.Config{Store: h.Store, Clock: h.Clock.Now, BaseURL: h.Server.URL, Secret: h.secret,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	other.Register(mux)
	second := httptest.NewServer(mux)
	defer second.Close()
	h.login(t, h.Browser, "ann@example.com", testPassword)
	post := func(base, rt string) int {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
		req, _ := http.NewRequest("POST", base+"/oauth/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(h.Client.ID), url.QueryEscape(h.Secret))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// Several rounds, each with a new grant: a race that slipped through
	// would show as two 200s in one of them.
	for round := range 10 {
		rt := h.exchange(t, h.code(t, h.Client)).JSON["refresh_token"].(string)
		var wg sync.WaitGroup
		status := make([]int, 4)
		for i := range status {
			base := h.Server.URL
			if i%2 == 1 {
				base = second.URL
			}
			wg.Go(func() { status[i] = post(base, rt) })
		}
		wg.Wait()
		slices.Sort(status)
		if status[0] != 200 || status[1] != 400 || status[3] != 400 {
			t.Fatalf("round %d: statuses %v, want one 200 and three 400", round, status)
		}
	}
}
