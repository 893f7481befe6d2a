package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"golang.org/x/oauth2"
)

// TestAuthorizationCodeFlow drives the whole flow with a real OAuth client
// (golang.org/x/oauth2, PKCE S256) through the HTML login and consent
// forms: authorize, exchange, call /v1, refresh, reuse detection, revoke.
func TestAuthorizationCodeFlow(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ctx := context.Background()
	conf := h.config("read", "messages")
	verifier := oauth2.GenerateVerifier()
	state := "state-" + randomString()

	// No session: the authorize URL leads to the login page, which returns
	// to the authorize URL.
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))
	if !strings.Contains(authURL, "scope=read+messages") {
		t.Fatalf("x/oauth2 joins scopes with '+': %s", authURL)
	}
	p := h.get(t, h.Browser, authURL)
	if p.StatusCode != http.StatusOK || p.Request.URL.Path != "/login" {
		t.Fatalf("authorize without session: %d %s, want the login page", p.StatusCode, p.Request.URL)
	}
	if got := p.Request.URL.Query().Get("return_to"); !strings.HasPrefix(got, "/oauth/authorize?") {
		t.Fatalf("return_to %q", got)
	}
	lf := findForm(t, p, "/login")
	if lf.Values.Get("csrf_token") == "" || lf.Values.Get("return_to") == "" {
		t.Fatalf("login form lacks csrf_token or return_to: %v", lf.Values)
	}
	if !strings.Contains(p.Body, `<html lang="en">`) || lf.Labels["email"] == "" || lf.Labels["password"] == "" {
		t.Errorf("login page lacks lang or labels:\n%s", p.Body)
	}
	lf.Values.Set("email", "ann@example.com")
	lf.Values.Set("password", testPassword)
	p = h.post(t, h.Browser, "/login", lf.Values)

	// Signed in: back at authorize, which shows the consent page.
	if p.StatusCode != http.StatusOK || p.Request.URL.Path != "/oauth/authorize" {
		t.Fatalf("after login: %d %s\n%s", p.StatusCode, p.Request.URL, p.Body)
	}
	for _, want := range []string{"Test App", "ann@example.com", "Send and receive messages.", "Read-only access"} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}
	cf := findForm(t, p, "/oauth/authorize")
	if got := cf.Boxes["grant"]; !slices.Equal(got, []string{"read", "messages"}) {
		t.Errorf("scope checkboxes %v, want read, messages", got)
	}
	if got := cf.Values["grant"]; !slices.Equal(got, []string{"read", "messages"}) {
		t.Errorf("checked by default: %v", got)
	}
	if !strings.HasPrefix(cf.Labels["scope-read"], "read") {
		t.Errorf("checkbox without label: %v", cf.Labels)
	}
	if !slices.Contains(cf.Buttons, "action=allow") || !slices.Contains(cf.Buttons, "action=deny") {
		t.Errorf("buttons %v, want allow and deny", cf.Buttons)
	}
	for _, k := range []string{"client_id", "redirect_uri", "response_type", "scope", "state", "code_challenge", "code_challenge_method", "csrf_token"} {
		if cf.Values.Get(k) == "" {
			t.Errorf("consent form lacks hidden field %s", k)
		}
	}
	if p.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(p.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("consent page may be framed: %v", p.Header)
	}
	q := redirected(t, h.consent(t, h.Browser, p, "allow"))
	if q.Get("state") != state {
		t.Fatalf("state %q, want %q", q.Get("state"), state)
	}

	// Exchange the code (with the PKCE verifier).
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.AccessToken, ams.PrefixAccessToken) || !strings.HasPrefix(tok.RefreshToken, ams.PrefixRefreshToken) {
		t.Fatalf("tokens without the ams prefixes: %q %q", tok.AccessToken, tok.RefreshToken)
	}
	if tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 || tok.Extra("scope") != "read messages" {
		t.Errorf("token_type %q expires_in %d scope %v", tok.TokenType, tok.ExpiresIn, tok.Extra("scope"))
	}
	if st, code := h.apiStatus(t, tok.AccessToken); st != http.StatusOK {
		t.Fatalf("GET /v1/assistants with the access token: %d %s", st, code)
	}

	// Refresh: a new pair; the old access token is retired with it.
	tok2, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	if tok2.AccessToken == tok.AccessToken || tok2.RefreshToken == tok.RefreshToken || tok2.RefreshToken == "" {
		t.Fatal("refresh did not rotate the tokens")
	}
	if tok2.ExpiresIn != 3600 || tok2.Extra("scope") != "read messages" {
		t.Errorf("refreshed: expires_in %d scope %v", tok2.ExpiresIn, tok2.Extra("scope"))
	}
	if st, _ := h.apiStatus(t, tok2.AccessToken); st != http.StatusOK {
		t.Fatalf("new access token: %d", st)
	}
	if st, code := h.apiStatus(t, tok.AccessToken); st != http.StatusUnauthorized || code != "invalid_token" {
		t.Errorf("old access token after refresh: %d %s, want 401 invalid_token", st, code)
	}

	// Reuse of the old refresh token: invalid_grant, and the whole grant,
	// the new tokens included, is revoked.
	_, err = conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("reused refresh token: %v, want invalid_grant", err)
	}
	if st, code := h.apiStatus(t, tok2.AccessToken); st != http.StatusUnauthorized || code != "invalid_token" {
		t.Errorf("access token of a grant revoked by reuse: %d %s, want 401", st, code)
	}
	_, err = conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok2.RefreshToken}).Token()
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Errorf("refresh token of a revoked grant: %v, want invalid_grant", err)
	}

	// A fresh grant (the login session is still there: straight to
	// consent), then revocation of its refresh token (RFC 7009) takes its
	// access token with it.
	verifier = oauth2.GenerateVerifier()
	p = h.get(t, h.Browser, conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
	q = redirected(t, h.consent(t, h.Browser, p, "allow"))
	tok3, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := h.apiStatus(t, tok3.AccessToken); st != http.StatusOK {
		t.Fatalf("fresh grant: %d", st)
	}
	r := h.tokenRequest(t, "/oauth/revoke", url.Values{"token": {tok3.RefreshToken}, "token_type_hint": {"refresh_token"}}, h.Client.ID, h.Secret)
	if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("revoke: %d %v %s", r.Status, r.Header, r.Raw)
	}
	if st, code := h.apiStatus(t, tok3.AccessToken); st != http.StatusUnauthorized || code != "invalid_token" {
		t.Errorf("access token after its refresh token was revoked: %d %s, want 401 invalid_token", st, code)
	}
	_, err = conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok3.RefreshToken}).Token()
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Errorf("revoked refresh token: %v, want invalid_grant", err)
	}
	// Revoking again, or revoking a token that never existed: 200 too.
	for _, tk := range []string{tok3.RefreshToken, "ams_rt_unknown.token", "nonsense"} {
		if r := h.tokenRequest(t, "/oauth/revoke", url.Values{"token": {tk}}, h.Client.ID, h.Secret); r.Status != http.StatusOK {
			t.Errorf("revoke %q: %d %s, want 200", tk, r.Status, r.Raw)
		}
	}
}

// TestRevokeAccessToken revokes an access token with client_secret_post:
// the grant's refresh token goes with it.
func TestRevokeAccessToken(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)
	tok := h.exchange(t, h.code(t, h.Client)).JSON
	at, rt := tok["access_token"].(string), tok["refresh_token"].(string)
	r := h.tokenRequest(t, "/oauth/revoke", url.Values{"token": {at}, "token_type_hint": {"access_token"},
		"client_id": {h.Client.ID}, "client_secret": {h.Secret}}, "", "")
	if r.Status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.Status, r.Raw)
	}
	if st, _ := h.apiStatus(t, at); st != http.StatusUnauthorized {
		t.Errorf("revoked access token: %d", st)
	}
	r = h.tokenRequest(t, "", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, h.Client.ID, h.Secret)
	wantTokenError(t, r, http.StatusBadRequest, "invalid_grant")

	// Errors of the revocation endpoint: no token; bad client; a token of
	// another client (RFC 7009 2.1: refused).
	wantTokenError(t, h.tokenRequest(t, "/oauth/revoke", url.Values{"token_type_hint": {"access_token"}}, h.Client.ID, h.Secret),
		http.StatusBadRequest, "invalid_request")
	r = h.tokenRequest(t, "/oauth/revoke", url.Values{"token": {at}}, h.Client.ID, "ams_cs_wrong")
	wantTokenError(t, r, http.StatusUnauthorized, "invalid_client")
	other, otherSecret := h.newClient(t)
	tok = h.exchange(t, h.code(t, h.Client)).JSON
	r = h.tokenRequest(t, "/oauth/revoke", url.Values{"token": {tok["refresh_token"].(string)}}, other.ID, otherSecret)
	wantTokenError(t, r, http.StatusBadRequest, "unauthorized_client")
	if st, _ := h.apiStatus(t, tok["access_token"].(string)); st != http.StatusOK {
		t.Errorf("another client's revocation revoked the token: %d", st)
	}
}

// TestPublicClient: a public client must use PKCE (S256) and authenticates
// with its client_id alone.
func TestPublicClient(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)
	verifier := oauth2.GenerateVerifier()

	// Without PKCE, or with plain: refused at once, to the redirect URI.
	for _, kv := range [][]string{
		{},
		{"code_challenge", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopq", "code_challenge_method", "plain"},
		{"code_challenge", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopq"},
		{"code_challenge_method", "S256"},
	} {
		p := h.get(t, h.Browser, h.authorizeURL(h.Public, append(kv, "state", "public-state-1")...))
		q := redirected(t, p)
		if q.Get("error") != "invalid_request" || q.Get("state") != "public-state-1" || q.Get("code") != "" {
			t.Errorf("public client with %v: %v, want invalid_request with state", kv, q)
		}
	}

	conf := &oauth2.Config{ClientID: h.Public.ID, RedirectURL: redirectURI, Scopes: []string{"read"},
		Endpoint: oauth2.Endpoint{AuthURL: h.Server.URL + "/oauth/authorize", TokenURL: h.Server.URL + "/oauth/token",
			AuthStyle: oauth2.AuthStyleInParams}}
	p := h.get(t, h.Browser, conf.AuthCodeURL("public-state-2", oauth2.S256ChallengeOption(verifier)))
	q := redirected(t, h.consent(t, h.Browser, p, "allow"))
	// Without the verifier the code is refused; with it, tokens.
	r := h.tokenRequest(t, "", url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")},
		"redirect_uri": {redirectURI}, "client_id": {h.Public.ID}}, "", "")
	wantTokenError(t, r, http.StatusBadRequest, "invalid_grant")
	tok, err := conf.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := h.apiStatus(t, tok.AccessToken); st != http.StatusOK {
		t.Errorf("public client's token: %d", st)
	}
	if _, err := conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err != nil {
		t.Errorf("public client refresh: %v", err)
	}
}
