package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// callbackServer is an OAuth client's redirect endpoint: it records each
// query it receives and answers with a small page.
func callbackServer(t *testing.T) (*httptest.Server, <-chan url.Values) {
	got := make(chan url.Values, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		select {
		case got <- r.URL.Query():
		default:
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Example app</title><h1>Example app: authorization received</h1></html>`)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// TestOAuthConsentFlow: a client registered with the CLI sends the user to
// /oauth/authorize; the user signs in on /login and allows on the consent
// page in the browser; the client exchanges the code (PKCE) with
// golang.org/x/oauth2 and calls the API with the token.
func TestOAuthConsentFlow(t *testing.T) {
	p := newPage(t)
	e := p.e
	cb, got := callbackServer(t)

	out := e.ams(t, "oauth-clients", "create", "--email", "dev@example.com", "--name", "Example Calendar App",
		"--redirect-uri", cb.URL+"/callback")
	m := regexp.MustCompile(`client_id (cli_\w+)\nclient_secret (ams_cs_\w+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("oauth-clients create printed %q", out)
	}
	conf := &oauth2.Config{
		ClientID: m[1], ClientSecret: m[2],
		Endpoint:    oauth2.Endpoint{AuthURL: e.base + "/oauth/authorize", TokenURL: e.base + "/oauth/token"},
		RedirectURL: cb.URL + "/callback",
		Scopes:      []string{"read", "messages"},
	}
	verifier := oauth2.GenerateVerifier()
	state := "st-" + verifier[:12]

	// Not signed in: the authorize URL leads to the login page.
	p.open(conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
	p.waitPath("/login")
	p.waitText("Sign in to ams")
	p.fill("E-mail address", "dev@example.com")
	p.fill("Password", e.devPass)
	p.shot("login")
	p.submit("Sign in")

	// Back at authorize: the consent page names the app, the account and
	// the permissions asked for.
	p.waitPath("/oauth/authorize")
	p.waitText("Allow Example Calendar App to use your ams account?")
	body := p.bodyText()
	for _, want := range []string{"dev@example.com", "read", "messages"} {
		if !strings.Contains(body, want) {
			t.Errorf("consent page lacks %q:\n%s", want, body)
		}
	}
	for _, scope := range []string{"read", "messages"} {
		if on, err := eval[bool](p, `document.querySelector('`+string(p.field(scope))+`').checked`); err != nil || !on {
			t.Errorf("scope %s not checked by default (%v)", scope, err)
		}
	}
	p.shot("oauth-consent")
	p.submit("Allow")

	// Sent back to the client with a code and the state.
	p.waitPath("/callback")
	var q url.Values
	select {
	case q = <-got:
	default:
		t.Fatalf("the callback was not called; the browser is at %s", p.location())
	}
	if q.Get("state") != state || q.Get("code") == "" {
		t.Fatalf("callback query %v, want the state %q and a code", q, state)
	}

	// The client's side: exchange the code, call the API with the token.
	tok, err := conf.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange the code: %v", err)
	}
	if !strings.HasPrefix(tok.AccessToken, "ams_at_") || tok.Extra("scope") != "read messages" {
		t.Fatalf("token %q scope %v", tok.AccessToken, tok.Extra("scope"))
	}
	st, resp := e.api(t, "GET", "/v1/assistants", tok.AccessToken, "")
	if st != http.StatusOK || !strings.Contains(resp, "Dev Assistant") {
		t.Fatalf("GET /v1/assistants with the access token: %d %s", st, resp)
	}
}

// authorizeCode runs an authorization of conf in the browser: it opens the
// authorize URL (PKCE with verifier), signs in as the dev user if the login
// page comes, allows on the consent page, and returns the code that the
// callback received (got is callbackServer's).
func (p *page) authorizeCode(conf *oauth2.Config, got <-chan url.Values, verifier string) string {
	p.t.Helper()
	state := "st-" + oauth2.GenerateVerifier()[:12]
	p.open(conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
	path := p.waitFor("the login or consent page", `document.readyState === "complete" && /^\/(login|oauth\/authorize)$/.test(location.pathname) && location.pathname`)
	if path == "/login" {
		p.fill("E-mail address", "dev@example.com")
		p.fill("Password", p.e.devPass)
		p.submit("Sign in")
	}
	p.waitText("to use your ams account?")
	p.submit("Allow")
	p.waitPath("/callback")
	select {
	case q := <-got:
		if q.Get("state") != state || q.Get("code") == "" {
			p.t.Fatalf("callback query %v, want the state %q and a code", q, state)
		}
		return q.Get("code")
	case <-time.After(stepTimeout):
		p.t.Fatalf("the callback was not called; the browser is at %s", p.location())
	}
	return ""
}

// authorize runs authorizeCode and exchanges the code.
func (p *page) authorize(conf *oauth2.Config, got <-chan url.Values) *oauth2.Token {
	p.t.Helper()
	verifier := oauth2.GenerateVerifier()
	tok, err := conf.Exchange(context.Background(), p.authorizeCode(conf, got, verifier), oauth2.VerifierOption(verifier))
	if err != nil {
		p.t.Fatalf("exchange the code: %v", err)
	}
	return tok
}
