package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"golang.org/x/crypto/bcrypt"
)

// TestAuthorizeErrors: RFC 6749 section 4.1.2.1. With an unknown client or
// a redirect URI that is not registered exactly, an error page and no
// redirect; otherwise a redirect with error and state.
func TestAuthorizeErrors(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)

	t.Run("error page", func(t *testing.T) {
		for name, u := range map[string]string{
			"unknown client":                  h.authorizeURL(h.Client, "client_id", "cli_unknown"),
			"no client":                       h.authorizeURL(h.Client, "client_id", ""),
			"unregistered redirect_uri":       h.authorizeURL(h.Client, "redirect_uri", "https://evil.example/callback"),
			"redirect_uri with another path":  h.authorizeURL(h.Client, "redirect_uri", redirectURI+"/x"),
			"loopback on another port":        h.authorizeURL(h.Client, "redirect_uri", "http://127.0.0.1:10000/cb"),
			"no redirect_uri, two registered": h.authorizeURL(h.Client, "redirect_uri", ""),
		} {
			t.Run(name, func(t *testing.T) {
				// Also without a session: the error comes before login.
				for _, b := range []*http.Client{h.Browser, h.newBrowser()} {
					p := h.get(t, b, u)
					if p.StatusCode != http.StatusBadRequest || p.Header.Get("Location") != "" {
						t.Fatalf("%d Location %q, want 400 without redirect", p.StatusCode, p.Header.Get("Location"))
					}
					if !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") || !strings.Contains(p.Body, "Invalid authorization request") {
						t.Errorf("not the error page: %s", p.Body)
					}
				}
			})
		}
	})

	t.Run("redirect with error", func(t *testing.T) {
		for _, c := range []struct {
			name, err string
			kv        []string
		}{
			{"unknown scope", "invalid_scope", []string{"scope", "read+bogus"}},
			{"no scope", "invalid_scope", []string{"scope", ""}},
			{"response_type token", "unsupported_response_type", []string{"response_type", "token"}},
			{"no response_type", "unsupported_response_type", []string{"response_type", ""}},
			{"short state", "invalid_request", []string{"state", "abc"}},
			{"PKCE plain", "invalid_request", []string{"code_challenge", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopq", "code_challenge_method", "plain"}},
			{"PKCE bad challenge", "invalid_request", []string{"code_challenge", "short", "code_challenge_method", "S256"}},
			{"response_mode fragment", "invalid_request", []string{"response_mode", "fragment"}},
			{"response_mode form_post", "invalid_request", []string{"response_mode", "form_post"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				kv := append([]string{"state", "state-for-" + strings.ReplaceAll(c.name, " ", "-")}, c.kv...)
				q := redirected(t, h.get(t, h.Browser, h.authorizeURL(h.Client, kv...)))
				want := "state-for-" + strings.ReplaceAll(c.name, " ", "-")
				if c.name == "short state" {
					want = "abc"
				}
				if q.Get("error") != c.err || q.Get("state") != want || q.Get("error_description") == "" || q.Get("code") != "" {
					t.Errorf("redirect query %v, want error %s and state %s", q, c.err, want)
				}
			})
		}
	})

	t.Run("deny", func(t *testing.T) {
		p := h.get(t, h.Browser, h.authorizeURL(h.Client, "state", "deny-state-123"))
		q := redirected(t, h.consent(t, h.Browser, p, "deny"))
		if q.Get("error") != "access_denied" || q.Get("state") != "deny-state-123" || q.Get("code") != "" {
			t.Errorf("deny: %v", q)
		}
		// Allow with every scope unchecked is a denial too.
		p = h.get(t, h.Browser, h.authorizeURL(h.Client, "state", "deny-state-456"))
		q = redirected(t, h.consent(t, h.Browser, p, "allow", "read", "messages"))
		if q.Get("error") != "access_denied" || q.Get("state") != "deny-state-456" {
			t.Errorf("nothing granted: %v", q)
		}
	})

	t.Run("partial consent", func(t *testing.T) {
		// Scopes joined by spaces, '+' or an encoded '+' all parse; the
		// grant is what was asked and left checked.
		for _, scope := range []string{"read messages", "read+messages"} {
			p := h.get(t, h.Browser, h.authorizeURL(h.Client, "scope", scope))
			q := redirected(t, h.consent(t, h.Browser, p, "allow", "messages"))
			r := h.exchange(t, q.Get("code"))
			if r.Status != http.StatusOK || r.JSON["scope"] != "read" {
				t.Errorf("scope %q, messages unchecked: %d %s", scope, r.Status, r.Raw)
			}
		}
		// A checkbox added for a scope that was not requested grants nothing.
		p := h.get(t, h.Browser, h.authorizeURL(h.Client, "scope", "read"))
		f := findForm(t, p, "/oauth/authorize")
		f.Values.Add("grant", "admin")
		f.Values.Set("action", "allow")
		r := h.exchange(t, redirected(t, h.post(t, h.Browser, "/oauth/authorize", f.Values)).Get("code"))
		if r.JSON["scope"] != "read" {
			t.Errorf("granted %v, want read", r.JSON["scope"])
		}
	})
}

// TestCrossSitePosts: the form posts refuse other origins (Sec-Fetch-Site
// or Origin) and posts without the form's CSRF token, with 403.
func TestCrossSitePosts(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)
	p := h.get(t, h.Browser, h.authorizeURL(h.Client))
	consent := findForm(t, p, "/oauth/authorize")
	consent.Values.Set("action", "allow")
	lb := h.newBrowser()
	login := findForm(t, h.get(t, lb, "/login"), "/login")
	login.Values.Set("email", "ann@example.com")
	login.Values.Set("password", testPassword)
	logout := findForm(t, p, "/logout")

	cases := []struct {
		name   string
		b      *http.Client
		path   string
		form   url.Values
		header []string
	}{
		{"consent, Sec-Fetch-Site cross-site", h.Browser, "/oauth/authorize", consent.Values, []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
		{"consent, Sec-Fetch-Site same-site", h.Browser, "/oauth/authorize", consent.Values, []string{"Sec-Fetch-Site", "same-site", "Origin", "https://sub.example"}},
		{"consent, foreign Origin (old browser)", h.Browser, "/oauth/authorize", consent.Values, []string{"Sec-Fetch-Site", "", "Origin", "https://evil.example"}},
		{"consent, no CSRF token", h.Browser, "/oauth/authorize", with(consent.Values, "csrf_token", ""), nil},
		{"consent, another session's token", h.Browser, "/oauth/authorize", with(consent.Values, "csrf_token", login.Values.Get("csrf_token")), nil},
		{"login, cross-site", lb, "/login", login.Values, []string{"Sec-Fetch-Site", "cross-site"}},
		{"login, foreign Origin", lb, "/login", login.Values, []string{"Sec-Fetch-Site", "", "Origin", "https://evil.example"}},
		{"login, no CSRF token", lb, "/login", with(login.Values, "csrf_token", ""), nil},
		{"login, no login cookie", h.newBrowser(), "/login", login.Values, nil},
		{"logout, cross-site", h.Browser, "/logout", logout.Values, []string{"Sec-Fetch-Site", "cross-site"}},
		{"logout, no CSRF token", h.Browser, "/logout", with(logout.Values, "csrf_token", "x"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.post(t, c.b, c.path, c.form, c.header...)
			if r.StatusCode != http.StatusForbidden || r.Header.Get("Location") != "" {
				t.Errorf("%d (Location %q), want 403", r.StatusCode, r.Header.Get("Location"))
			}
		})
	}
	// Nothing happened: the session is still there and the consent form
	// still works from the same origin.
	redirected(t, h.post(t, h.Browser, "/oauth/authorize", consent.Values))
}

// TestWaitlistedUserCannotAuthorize: an account on the early-access
// waitlist has no API access, so it cannot authorize an application
// either: the consent page explains, and a forged consent POST is refused.
func TestWaitlistedUserCannotAuthorize(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ctx := context.Background()
	hash, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	now := h.Clock.Now()
	waiting := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "waiting@example.com", PasswordHash: string(hash), Plan: ams.PlanStandard,
		Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := h.Store.CreateUser(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	b := h.newBrowser()
	h.login(t, b, waiting.Email, testPassword)
	p := h.get(t, b, h.authorizeURL(h.Client))
	if p.StatusCode != http.StatusForbidden || !strings.Contains(p.Body, "waitlist") || strings.Contains(p.Body, `value="allow"`) {
		t.Fatalf("consent page for a waitlisted user: %d\n%s", p.StatusCode, p.Body)
	}
	// Approved, the same user sees the consent page.
	if _, err := h.Store.UpdateUser(ctx, waiting.ID, ams.UserUpdate{ApprovedAt: &now}, now); err != nil {
		t.Fatal(err)
	}
	if p := h.get(t, b, h.authorizeURL(h.Client)); p.StatusCode != http.StatusOK || !strings.Contains(p.Body, `value="allow"`) {
		t.Fatalf("consent page after approval: %d", p.StatusCode)
	}
}
