package pages_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/pages"
	"github.com/amsdev/ams/ssrf"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/net/html"
)

// accountHarness is a running ams (API, OAuth server and account pages on
// one mux, SQLite, hand-moved clock) with a browser signed in as the
// fixture's user (ann@example.com).
type accountHarness struct {
	*amstest.Fixture
	OAuth   *oauth.Server
	Pages   *pages.Server
	Browser *http.Client
}

const (
	accountPassword = "correct horse battery staple"
	appRedirect     = "https://client.example/callback"
)

// newAccountHarness starts the harness; guard checks webhook URLs on the
// pages and the API (nil: the fixture's, which allows loopback and http,
// as --dev).
func newAccountHarness(t *testing.T, guard *ssrf.Guard) *accountHarness {
	t.Helper()
	f := amstest.New(t)
	if guard != nil {
		f.Webhooks.Guard = guard
	}
	h := &accountHarness{Fixture: f, OAuth: f.OAuth, Pages: f.Pages}
	h.setPassword(f.User)
	h.Browser = h.signIn(t, f.User.Email)
	return h
}

// setPassword gives u the test password (bcrypt at its minimum cost keeps
// the tests fast).
func (h *accountHarness) setPassword(u *ams.User) {
	h.T.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(accountPassword), bcrypt.MinCost)
	if err != nil {
		h.T.Fatal(err)
	}
	hs := string(hash)
	if _, err := h.Store.UpdateUser(context.Background(), u.ID, ams.UserUpdate{PasswordHash: &hs}, h.Clock.Now()); err != nil {
		h.T.Fatal(err)
	}
}

// newBrowser returns a client with its own cookies that follows redirects
// within the server and stops at any other host (an OAuth client's
// redirect URI).
func (h *accountHarness) newBrowser() *http.Client {
	jar, _ := cookiejar.New(nil)
	srv, _ := url.Parse(h.Server.URL)
	return &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != srv.Host || len(via) > 10 {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// signIn returns a browser signed in as email through the login form.
func (h *accountHarness) signIn(t *testing.T, email string) *http.Client {
	t.Helper()
	b := h.newBrowser()
	p := h.get(t, b, "/login?return_to=%2Faccount")
	f := h.form(t, p, "/login")
	f.Set("email", email)
	f.Set("password", accountPassword)
	p = h.post(t, b, "/login", f)
	if p.StatusCode != http.StatusOK || p.Request.URL.Path != "/account" {
		t.Fatalf("sign in as %s: %d at %s\n%s", email, p.StatusCode, p.Request.URL, p.Body)
	}
	return b
}

// webPage is an answer read whole.
type webPage struct {
	*http.Response
	Body string
}

func (h *accountHarness) do(t *testing.T, b *http.Client, req *http.Request) *webPage {
	t.Helper()
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &webPage{resp, string(body)}
}

// get loads a path of the server (or an absolute URL) in the browser.
func (h *accountHarness) get(t *testing.T, b *http.Client, u string) *webPage {
	t.Helper()
	if strings.HasPrefix(u, "/") {
		u = h.Server.URL + u
	}
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h.do(t, b, req)
}

// post sends a form as a browser does from a page of the server (Origin
// and Sec-Fetch-Site same-origin); header adds name/value pairs.
func (h *accountHarness) post(t *testing.T, b *http.Client, path string, form url.Values, header ...string) *webPage {
	t.Helper()
	req, err := http.NewRequest("POST", h.Server.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", h.Server.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return h.do(t, b, req)
}

// form returns the values the form of p whose action is action would
// send as it stands: its hidden and text fields, checked boxes and
// radios, and the value of its submit button if it has a name.
func (h *accountHarness) form(t *testing.T, p *webPage, action string) url.Values {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(p.Body))
	if err != nil {
		t.Fatal(err)
	}
	attr := func(n *html.Node, k string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == k {
				return a.Val, true
			}
		}
		return "", false
	}
	var found url.Values
	var walk func(n *html.Node, cur url.Values)
	walk = func(n *html.Node, cur url.Values) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "form":
				if a, _ := attr(n, "action"); a == action && found == nil {
					found = url.Values{}
					cur = found
				} else {
					cur = nil
				}
			case "input", "button":
				name, _ := attr(n, "name")
				val, _ := attr(n, "value")
				typ, _ := attr(n, "type")
				_, checked := attr(n, "checked")
				if cur != nil && name != "" && ((typ != "checkbox" && typ != "radio") || checked) {
					cur.Add(name, val)
				}
			case "textarea":
				name, _ := attr(n, "name")
				if cur != nil && name != "" {
					var b strings.Builder
					for c := n.FirstChild; c != nil; c = c.NextSibling {
						b.WriteString(c.Data)
					}
					cur.Add(name, b.String())
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, cur)
		}
	}
	walk(doc, nil)
	if found == nil {
		t.Fatalf("no form with action %q on %s (status %d):\n%s", action, p.Request.URL.Path, p.StatusCode, p.Body)
	}
	return found
}

// wantPage checks p's status and that its body holds each of want.
func wantPage(t *testing.T, p *webPage, status int, want ...string) {
	t.Helper()
	if p.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d\n%s", p.Request.Method, p.Request.URL.Path, p.StatusCode, status, p.Body)
	}
	for _, w := range want {
		if !strings.Contains(p.Body, w) {
			t.Fatalf("%s %s lacks %q:\n%s", p.Request.Method, p.Request.URL.Path, w, p.Body)
		}
	}
}

// secretOnPage returns the value of the read-only input id on p ("" if
// there is none).
func secretOnPage(p *webPage, id string) string {
	i := strings.Index(p.Body, `id="`+id+`" value="`)
	if i < 0 {
		return ""
	}
	rest := p.Body[i+len(`id="`+id+`" value="`):]
	return html.UnescapeString(rest[:strings.IndexByte(rest, '"')])
}

// consent runs the authorization-code flow for client in browser b (signed
// in) with the scopes allowed, and returns the code.
func (h *accountHarness) consent(t *testing.T, b *http.Client, client *ams.OAuthClient, scope string) string {
	t.Helper()
	q := url.Values{"client_id": {client.ID}, "redirect_uri": {appRedirect}, "response_type": {"code"},
		"scope": {scope}, "state": {"state-0123456789"}}
	p := h.get(t, b, "/oauth/authorize?"+q.Encode())
	wantPage(t, p, http.StatusOK, html.EscapeString(client.Name))
	f := h.form(t, p, "/oauth/authorize")
	f.Set("action", "allow")
	p = h.post(t, b, "/oauth/authorize", f)
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("consent: %d\n%s", p.StatusCode, p.Body)
	}
	loc, err := url.Parse(p.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("consent redirected to %q", p.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

// token posts a token request with HTTP Basic client authentication and
// returns the status and the JSON answer.
func (h *accountHarness) token(t *testing.T, clientID, secret string, form url.Values) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", h.Server.URL+"/oauth/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("token answer %d: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, m
}

// exchange trades a code for tokens and returns the access and refresh
// tokens.
func (h *accountHarness) exchange(t *testing.T, clientID, secret, code string) (string, string) {
	t.Helper()
	st, m := h.token(t, clientID, secret, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {appRedirect}})
	if st != http.StatusOK {
		t.Fatalf("exchange: %d %v", st, m)
	}
	return m["access_token"].(string), m["refresh_token"].(string)
}

// apiStatus is the status of GET /v1/assistants with the bearer token.
func (h *accountHarness) apiStatus(token string) int {
	return h.Do("GET", "/v1/assistants", token, "").Status
}

// registerApp registers an app through the page and returns the page it
// lands on.
func (h *accountHarness) registerApp(t *testing.T, b *http.Client, name, uris, typ string) *webPage {
	t.Helper()
	f := h.form(t, h.get(t, b, "/account/apps"), "/account/apps")
	f.Set("name", name)
	f.Set("redirect_uris", uris)
	f.Set("type", typ)
	return h.post(t, b, "/account/apps", f)
}

func (h *accountHarness) clients(t *testing.T, u *ams.User) []*ams.OAuthClient {
	t.Helper()
	l, err := h.Store.ListOAuthClients(context.Background(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestOAuthAppRegisterRotateDelete: a confidential app registered on the
// page gets a secret shown once, which works at /oauth/token; rotating
// (after a confirmation step) makes the old secret refused and the new one
// work; deleting it (after a confirmation step) stops its tokens at once.
func TestOAuthAppRegisterRotateDelete(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	b := h.Browser

	p := h.get(t, b, "/account/apps")
	wantPage(t, p, http.StatusOK, "Register an app", "Authorized apps", `href="/account/apps" aria-current="page"`, `href="/account/webhooks"`)

	// Invalid input is shown on the form, which keeps what was typed, and
	// nothing is stored: the rules are oauth.CreateClient's.
	p = h.registerApp(t, b, "My app", "http://app.example/cb", "confidential")
	wantPage(t, p, http.StatusUnprocessableEntity, "There is a problem", "must use https", `id="redirect-error"`, "http://app.example/cb", `value="My app"`)
	p = h.registerApp(t, b, "   ", appRedirect, "confidential")
	wantPage(t, p, http.StatusUnprocessableEntity, "The client name must be 1 to 100 characters.")
	p = h.registerApp(t, b, "My app", "", "confidential")
	wantPage(t, p, http.StatusUnprocessableEntity, "Give 1 to 10 redirect URIs.")
	p = h.registerApp(t, b, "My app", appRedirect, "other")
	wantPage(t, p, http.StatusUnprocessableEntity, "Choose whether the app can keep a secret")
	if l := h.clients(t, h.User); len(l) != 0 {
		t.Fatalf("invalid registrations stored clients: %+v", l)
	}

	// Registered: the app's page shows the secret, once, uncached.
	p = h.registerApp(t, b, "My app", appRedirect+"\r\n\r\n  http://127.0.0.1:9999/cb  \n", "confidential")
	wantPage(t, p, http.StatusOK, "App registered. Copy its client secret now", "My app")
	if cc := p.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("page with the secret: Cache-Control %q", cc)
	}
	l := h.clients(t, h.User)
	if len(l) != 1 || l[0].Name != "My app" || l[0].Public || len(l[0].RedirectURIs) != 2 || l[0].RedirectURIs[1] != "http://127.0.0.1:9999/cb" {
		t.Fatalf("stored clients: %+v", l)
	}
	app := l[0]
	if p.Request.URL.Path != "/account/apps/"+app.ID {
		t.Fatalf("after registering: at %s", p.Request.URL.Path)
	}
	secret := secretOnPage(p, "client-secret")
	if !strings.HasPrefix(secret, oauth.PrefixClientSecret) || ams.HashSecret(secret) != app.SecretHash {
		t.Fatalf("secret on the page %q does not match the stored hash", secret)
	}
	p = h.get(t, b, "/account/apps/"+app.ID)
	wantPage(t, p, http.StatusOK, app.ID, "http://127.0.0.1:9999/cb")
	if secretOnPage(p, "client-secret") != "" || strings.Contains(p.Body, secret) {
		t.Fatal("the secret is shown again on reload")
	}
	p = h.get(t, b, "/account/apps")
	wantPage(t, p, http.StatusOK, "My app", app.ID, "Confidential")

	// The secret works: the user authorizes the app, which exchanges the
	// code with it.
	access, refresh := h.exchange(t, app.ID, secret, h.consent(t, b, app, "read messages"))
	if st := h.apiStatus(access); st != http.StatusOK {
		t.Fatalf("access token of the new app: %d", st)
	}

	// Rotate: the first post asks for confirmation and changes nothing.
	f := h.form(t, h.get(t, b, "/account/apps/"+app.ID), "/account/apps/"+app.ID+"/rotate")
	if f.Get("confirm") != "yes" {
		t.Fatalf("the rotate form of the app's page: %v", f)
	}
	f.Del("confirm") // as a post from elsewhere, or a form that lost it
	p = h.post(t, b, "/account/apps/"+app.ID+"/rotate", f)
	wantPage(t, p, http.StatusOK, "Rotate the secret of My app?")
	if c, _ := h.Store.FindOAuthClient(context.Background(), app.ID); c.SecretHash != app.SecretHash {
		t.Fatal("the secret changed before confirmation")
	}
	h.Clock.Add(ams.AccessTokenLifetime / 2)
	p = h.post(t, b, "/account/apps/"+app.ID+"/rotate", h.form(t, p, "/account/apps/"+app.ID+"/rotate"))
	wantPage(t, p, http.StatusOK, "New client secret made", "Secret last rotated")
	newSecret := secretOnPage(p, "client-secret")
	if !strings.HasPrefix(newSecret, oauth.PrefixClientSecret) || newSecret == secret {
		t.Fatalf("rotated secret %q", newSecret)
	}
	if secretOnPage(h.get(t, b, "/account/apps/"+app.ID), "client-secret") != "" {
		t.Fatal("the rotated secret is shown again on reload")
	}
	// The old secret is refused at the token endpoint, the new one works.
	st, m := h.token(t, app.ID, secret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
	if st != http.StatusUnauthorized || m["error"] != "invalid_client" {
		t.Fatalf("refresh with the old secret: %d %v", st, m)
	}
	st, m = h.token(t, app.ID, newSecret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
	if st != http.StatusOK {
		t.Fatalf("refresh with the new secret: %d %v", st, m)
	}
	access, refresh = m["access_token"].(string), m["refresh_token"].(string)
	if st := h.apiStatus(access); st != http.StatusOK {
		t.Fatalf("access token after rotation: %d", st)
	}

	// Delete: confirmation first, then the app and its tokens are gone.
	p = h.post(t, b, "/account/apps/"+app.ID+"/delete", url.Values{"csrf_token": {h.form(t, p, "/account/apps/"+app.ID+"/delete").Get("csrf_token")}})
	wantPage(t, p, http.StatusOK, "Delete My app?")
	if _, err := h.Store.FindOAuthClient(context.Background(), app.ID); err != nil {
		t.Fatalf("deleted before confirmation: %v", err)
	}
	p = h.post(t, b, "/account/apps/"+app.ID+"/delete", h.form(t, p, "/account/apps/"+app.ID+"/delete"))
	wantPage(t, p, http.StatusOK, "My app deleted.")
	if p.Request.URL.Path != "/account/apps" {
		t.Fatalf("after delete: at %s", p.Request.URL.Path)
	}
	if l := h.clients(t, h.User); len(l) != 0 {
		t.Fatalf("clients after delete: %+v", l)
	}
	if st := h.apiStatus(access); st != http.StatusUnauthorized {
		t.Fatalf("access token of a deleted app: %d, want 401", st)
	}
	if st, m := h.token(t, app.ID, newSecret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}); st == http.StatusOK {
		t.Fatalf("refresh token of a deleted app: %d %v", st, m)
	}
	wantPage(t, h.get(t, b, "/account/apps/"+app.ID), http.StatusNotFound)
}

// TestOAuthAppPublic: a public app has no secret, shown or stored, and no
// rotation.
func TestOAuthAppPublic(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	p := h.registerApp(t, h.Browser, "Phone app", appRedirect, "public")
	wantPage(t, p, http.StatusOK, "App registered. It is public", "Public", "PKCE")
	if secretOnPage(p, "client-secret") != "" || strings.Contains(p.Body, oauth.PrefixClientSecret) {
		t.Fatal("a public app's page shows a secret")
	}
	l := h.clients(t, h.User)
	if len(l) != 1 || !l[0].Public || l[0].SecretHash != "" {
		t.Fatalf("stored: %+v", l)
	}
	if strings.Contains(p.Body, "/rotate") {
		t.Error("a public app's page offers rotation")
	}
	csrf := h.form(t, p, "/account/apps/"+l[0].ID+"/delete").Get("csrf_token")
	p = h.post(t, h.Browser, "/account/apps/"+l[0].ID+"/rotate", url.Values{"csrf_token": {csrf}, "confirm": {"yes"}})
	wantPage(t, p, http.StatusConflict, "no secret to rotate")
	if c, _ := h.Store.FindOAuthClient(context.Background(), l[0].ID); c.SecretHash != "" {
		t.Fatal("a public app got a secret")
	}
}

// TestAuthorizedAppsRevoke: an app of another account that the user
// authorized through the consent page is listed with the scopes granted;
// revoking it (after a confirmation step) stops its access and refresh
// tokens at once.
func TestAuthorizedAppsRevoke(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	ctx := context.Background()
	bob := h.NewUser("bob@example.com", ams.PlanStandard)
	app, secret, err := oauth.CreateClient(ctx, h.Store, oauth.ClientParams{UserID: bob.ID, Name: "Bob's Planner", RedirectURIs: []string{appRedirect}}, h.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := h.get(t, h.Browser, "/account/apps")
	wantPage(t, p, http.StatusOK, "You have not authorized any app.")

	access, refresh := h.exchange(t, app.ID, secret, h.consent(t, h.Browser, app, "read messages"))
	if st := h.apiStatus(access); st != http.StatusOK {
		t.Fatalf("access token: %d", st)
	}
	p = h.get(t, h.Browser, "/account/apps")
	wantPage(t, p, http.StatusOK, "Bob&#39;s Planner", app.ID, "<code>read</code>", "<code>messages</code>", "/account/apps/authorized/"+app.ID+"/revoke")
	if strings.Contains(p.Body, "<code>write</code>") {
		t.Error("a scope that was not granted is listed")
	}
	// Bob's own page does not list Ann's grant, nor Ann's page Bob's app
	// among her own.
	h.setPassword(bob)
	bp := h.get(t, h.signIn(t, bob.Email), "/account/apps")
	wantPage(t, bp, http.StatusOK, "You have not authorized any app.", "Bob&#39;s Planner")

	// Revoke: confirmation first.
	action := "/account/apps/authorized/" + app.ID + "/revoke"
	f := h.form(t, p, action)
	p = h.post(t, h.Browser, action, url.Values{"csrf_token": {f.Get("csrf_token")}})
	wantPage(t, p, http.StatusOK, "Revoke the access of Bob&#39;s Planner?")
	if st := h.apiStatus(access); st != http.StatusOK {
		t.Fatalf("access token before confirmation: %d", st)
	}
	p = h.post(t, h.Browser, action, h.form(t, p, action))
	wantPage(t, p, http.StatusOK, "no longer has access to your account", "You have not authorized any app.")
	if st := h.apiStatus(access); st != http.StatusUnauthorized {
		t.Fatalf("access token after revoke: %d, want 401", st)
	}
	if st, m := h.token(t, app.ID, secret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}); st == http.StatusOK {
		t.Fatalf("refresh token after revoke: %d %v", st, m)
	}
	// The app itself is Bob's and stays.
	if _, err := h.Store.FindOAuthClient(ctx, app.ID); err != nil {
		t.Fatal(err)
	}
	// Revoking again: nothing to revoke.
	wantPage(t, h.post(t, h.Browser, action, f), http.StatusNotFound)
}

// TestOAuthAppsOtherAccountAndCSRF: another account's app is 404 for
// every page and action, and changes nothing; a form without a valid CSRF
// token, or sent from another site, is refused and changes nothing.
func TestOAuthAppsOtherAccountAndCSRF(t *testing.T) {
	t.Parallel()
	h := newAccountHarness(t, nil)
	ctx := context.Background()
	bob := h.NewUser("bob@example.com", ams.PlanStandard)
	theirs, theirSecret, err := oauth.CreateClient(ctx, h.Store, oauth.ClientParams{UserID: bob.ID, Name: "Bob's app", RedirectURIs: []string{appRedirect}}, h.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Bob authorized his own app: Ann cannot revoke his grant.
	bobBrowser := func() *http.Client { h.setPassword(bob); return h.signIn(t, bob.Email) }()
	bobAccess, _ := h.exchange(t, theirs.ID, theirSecret, h.consent(t, bobBrowser, theirs, "read"))

	csrf := h.form(t, h.get(t, h.Browser, "/account/apps"), "/account/apps").Get("csrf_token")
	wantPage(t, h.get(t, h.Browser, "/account/apps/"+theirs.ID), http.StatusNotFound)
	wantPage(t, h.get(t, h.Browser, "/account/apps/cli_nonexistent"), http.StatusNotFound)
	wantPage(t, h.get(t, h.Browser, "/account/apps/not-an-id"), http.StatusNotFound)
	for _, path := range []string{"/account/apps/" + theirs.ID + "/rotate", "/account/apps/" + theirs.ID + "/delete",
		"/account/apps/authorized/" + theirs.ID + "/revoke"} {
		p := h.post(t, h.Browser, path, url.Values{"csrf_token": {csrf}, "confirm": {"yes"}})
		wantPage(t, p, http.StatusNotFound)
		if strings.Contains(p.Body, "Bob&#39;s app") {
			t.Errorf("%s: the 404 page names the app", path)
		}
	}
	if c, err := h.Store.FindOAuthClient(ctx, theirs.ID); err != nil || c.SecretHash != ams.HashSecret(theirSecret) {
		t.Fatalf("another account's app changed: %+v %v", c, err)
	}
	if st := h.apiStatus(bobAccess); st != http.StatusOK {
		t.Fatalf("another account's grant was revoked: %d", st)
	}

	// CSRF: a wrong token, no token, or another site's post.
	f := url.Values{"name": {"Sneaky"}, "redirect_uris": {appRedirect}, "type": {"confidential"}}
	wantPage(t, h.post(t, h.Browser, "/account/apps", f), http.StatusForbidden)
	f.Set("csrf_token", "forged")
	wantPage(t, h.post(t, h.Browser, "/account/apps", f), http.StatusForbidden)
	f.Set("csrf_token", csrf)
	wantPage(t, h.post(t, h.Browser, "/account/apps", f, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"), http.StatusForbidden)
	// Bob's token is bound to Bob's session.
	bobCSRF := h.form(t, h.get(t, bobBrowser, "/account/apps"), "/account/apps").Get("csrf_token")
	f.Set("csrf_token", bobCSRF)
	wantPage(t, h.post(t, h.Browser, "/account/apps", f), http.StatusForbidden)
	if l := h.clients(t, h.User); len(l) != 0 {
		t.Fatalf("refused posts stored clients: %+v", l)
	}
	// Not signed in: sent to the sign-in page, nothing stored.
	p := h.post(t, h.newBrowser(), "/account/apps", f)
	if p.Request.URL.Path != "/login" {
		t.Fatalf("post without a session ended at %s (%d)", p.Request.URL, p.StatusCode)
	}
	if l := h.clients(t, h.User); len(l) != 0 {
		t.Fatalf("a post without a session stored clients: %+v", l)
	}
	// And the real form works.
	f.Set("csrf_token", csrf)
	wantPage(t, h.post(t, h.Browser, "/account/apps", f), http.StatusOK, "App registered.")
}
