package oauth_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
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
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/net/html"
	"golang.org/x/oauth2"
)

const (
	redirectURI  = "https://client.example/callback"
	otherURI     = "http://127.0.0.1:9999/cb" // registered too
	testPassword = "correct horse battery staple"
)

// harness is a running ams server with the OAuth server mounted, a
// confidential and a public client of the fixture's user, and a browser
// (cookie jar, stops at the client's redirect URI).
type harness struct {
	*amstest.Fixture
	OAuth   *oauth.Server
	Client  *ams.OAuthClient
	Secret  string
	Public  *ams.OAuthClient
	Browser *http.Client
	secret  []byte // the server's token secret, for a second server (process)
}

func setup(t *testing.T, opts ...amstest.Option) *harness {
	t.Helper()
	f := amstest.New(t, opts...)
	ctx := context.Background()
	// bcrypt at its minimum cost keeps the tests fast; password.Check
	// accepts any cost.
	hash, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	hs := string(hash)
	if _, err := f.Data.UpdateUser(ctx, f.User.ID, ams.UserUpdate{PasswordHash: &hs}, f.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	h := &harness{Fixture: f, OAuth: f.OAuth, secret: f.OAuthSecret}
	h.Client, h.Secret, err = oauth.CreateClient(ctx, f.Data, oauth.ClientParams{
		UserID: f.User.ID, Name: "Test App", RedirectURIs: []string{redirectURI, otherURI}}, f.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.Public, _, err = oauth.CreateClient(ctx, f.Data, oauth.ClientParams{
		UserID: f.User.ID, Name: "Phone App", RedirectURIs: []string{redirectURI}, Public: true}, f.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.Browser = h.newBrowser()
	return h
}

// newClient registers another confidential client of the fixture's user.
func (h *harness) newClient(t *testing.T) (*ams.OAuthClient, string) {
	t.Helper()
	c, secret, err := oauth.CreateClient(context.Background(), h.Data, oauth.ClientParams{
		UserID: h.User.ID, Name: "Other App", RedirectURIs: []string{redirectURI}}, h.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c, secret
}

// newBrowser returns a client with its own cookies that follows redirects
// within the server and stops at any other host (the client's redirect
// URI), like a browser whose next page we do not load.
func (h *harness) newBrowser() *http.Client {
	jar, _ := cookiejar.New(nil)
	srv, _ := url.Parse(h.Server.URL)
	return &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != srv.Host || len(via) > 10 {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// config is the golang.org/x/oauth2 configuration of the confidential client.
func (h *harness) config(scopes ...string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: h.Client.ID, ClientSecret: h.Secret, RedirectURL: redirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: h.Server.URL + "/oauth/authorize", TokenURL: h.Server.URL + "/oauth/token",
			AuthStyle: oauth2.AuthStyleInHeader},
	}
}

// page is an answer read whole.
type page struct {
	*http.Response
	Body string
}

func (h *harness) do(t *testing.T, b *http.Client, req *http.Request) *page {
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
	return &page{resp, string(body)}
}

// get loads a URL (absolute, or a path on the server) in the browser.
func (h *harness) get(t *testing.T, b *http.Client, u string) *page {
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

// post sends a form as a browser would from a page of the server:
// Origin and Sec-Fetch-Site say same-origin. header adds or overrides
// name/value pairs ("" value removes).
func (h *harness) post(t *testing.T, b *http.Client, path string, form url.Values, header ...string) *page {
	t.Helper()
	req, err := http.NewRequest("POST", h.Server.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", h.Server.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	return h.do(t, b, req)
}

// form is an HTML form as a browser would submit it.
type form struct {
	Action  string
	Values  url.Values          // inputs with a value; checked checkboxes only
	Boxes   map[string][]string // every checkbox name -> values (checked or not)
	Buttons []string            // name=value of the submit buttons
	Labels  map[string]string   // input id -> label text
}

// findForm returns the form of the page whose action is action.
func findForm(t *testing.T, p *page, action string) *form {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(p.Body))
	if err != nil {
		t.Fatal(err)
	}
	var forms []*form
	labels := map[string]string{}
	var cur *form
	attr := func(n *html.Node, k string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == k {
				return a.Val, true
			}
		}
		return "", false
	}
	var text func(n *html.Node) string
	text = func(n *html.Node) string {
		if n.Type == html.TextNode {
			return n.Data
		}
		var b strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			b.WriteString(text(c))
		}
		return b.String()
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "form":
				a, _ := attr(n, "action")
				cur = &form{Action: a, Values: url.Values{}, Boxes: map[string][]string{}, Labels: labels}
				forms = append(forms, cur)
			case "input":
				name, _ := attr(n, "name")
				val, _ := attr(n, "value")
				typ, _ := attr(n, "type")
				_, checked := attr(n, "checked")
				switch {
				case cur == nil || name == "":
				case typ == "checkbox":
					cur.Boxes[name] = append(cur.Boxes[name], val)
					if checked {
						cur.Values.Add(name, val)
					}
				default:
					cur.Values.Add(name, val)
				}
			case "button":
				name, _ := attr(n, "name")
				val, _ := attr(n, "value")
				if cur != nil {
					cur.Buttons = append(cur.Buttons, name+"="+val)
				}
			case "label":
				if id, ok := attr(n, "for"); ok {
					labels[id] = strings.Join(strings.Fields(text(n)), " ")
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	for _, f := range forms {
		if f.Action == action {
			return f
		}
	}
	t.Fatalf("no form with action %q on the page (status %d):\n%s", action, p.StatusCode, p.Body)
	return nil
}

// login signs the browser in through the login form.
func (h *harness) login(t *testing.T, b *http.Client, email, pw string) *page {
	t.Helper()
	p := h.get(t, b, "/login")
	f := findForm(t, p, "/login")
	f.Values.Set("email", email)
	f.Values.Set("password", pw)
	return h.post(t, b, "/login", f.Values)
}

// authorizeURL returns an authorization URL of the confidential client
// with the parameters, overridden by kv pairs ("" removes one).
func (h *harness) authorizeURL(c *ams.OAuthClient, kv ...string) string {
	q := url.Values{"client_id": {c.ID}, "redirect_uri": {redirectURI}, "response_type": {"code"},
		"scope": {"read messages"}, "state": {"state-" + randomString()}}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			q.Del(kv[i])
		} else {
			q.Set(kv[i], kv[i+1])
		}
	}
	return h.Server.URL + "/oauth/authorize?" + q.Encode()
}

// consent answers the consent page p with the button action ("allow" or
// "deny"), unchecking the scopes in uncheck.
func (h *harness) consent(t *testing.T, b *http.Client, p *page, action string, uncheck ...string) *page {
	t.Helper()
	f := findForm(t, p, "/oauth/authorize")
	for _, s := range uncheck {
		vs := f.Values["grant"]
		f.Values.Del("grant")
		for _, v := range vs {
			if v != s {
				f.Values.Add("grant", v)
			}
		}
	}
	f.Values.Set("action", action)
	return h.post(t, b, "/oauth/authorize", f.Values)
}

// redirected returns the query of the redirect to the client's redirect
// URI that p must be.
func redirected(t *testing.T, p *page) url.Values {
	t.Helper()
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d, want 303 to the client:\n%s", p.StatusCode, p.Body)
	}
	loc, err := url.Parse(p.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirectURI {
		t.Fatalf("redirected to %s, want %s", loc, redirectURI)
	}
	return loc.Query()
}

// code runs authorize and consent (the browser is signed in) and returns
// the code. kv overrides authorization parameters as in authorizeURL.
func (h *harness) code(t *testing.T, c *ams.OAuthClient, kv ...string) string {
	t.Helper()
	p := h.get(t, h.Browser, h.authorizeURL(c, kv...))
	q := redirected(t, h.consent(t, h.Browser, p, "allow"))
	if !strings.HasPrefix(q.Get("code"), oauth.PrefixAuthorizeCode) {
		t.Fatalf("no code in the redirect: %v", q)
	}
	return q.Get("code")
}

// tokenResponse is a raw answer of the token or revocation endpoint.
type tokenResponse struct {
	Status int
	Header http.Header
	JSON   map[string]any
	Raw    string
}

// tokenRequest posts form to path (default /oauth/token) with HTTP Basic
// client authentication when user is not "".
func (h *harness) tokenRequest(t *testing.T, path string, form url.Values, user, pass string) *tokenResponse {
	t.Helper()
	if path == "" {
		path = "/oauth/token"
	}
	req, err := http.NewRequest("POST", h.Server.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	tr := &tokenResponse{Status: resp.StatusCode, Header: resp.Header, Raw: string(body)}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &tr.JSON); err != nil {
			t.Fatalf("token endpoint answered %d with non-JSON: %s", resp.StatusCode, body)
		}
	}
	return tr
}

// exchange trades a code of the confidential client for tokens, with the
// given redirect URI and extra form fields.
func (h *harness) exchange(t *testing.T, code string, kv ...string) *tokenResponse {
	t.Helper()
	f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			f.Del(kv[i])
		} else {
			f.Set(kv[i], kv[i+1])
		}
	}
	return h.tokenRequest(t, "", f, h.Client.ID, h.Secret)
}

// wantTokenError checks an RFC 6749 5.2 error answer.
func wantTokenError(t *testing.T, r *tokenResponse, status int, code string) {
	t.Helper()
	if r.Status != status || r.JSON["error"] != code {
		t.Fatalf("got %d %s, want %d error %q", r.Status, r.Raw, status, code)
	}
	if d, _ := r.JSON["error_description"].(string); d == "" {
		t.Errorf("no error_description: %s", r.Raw)
	}
	if len(r.JSON) != 2 {
		t.Errorf("error body has other fields than error and error_description: %s", r.Raw)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
}

// apiStatus calls GET /v1/assistants with the token and returns the status
// and the error code, if any.
func (h *harness) apiStatus(t *testing.T, token string) (int, string) {
	t.Helper()
	r := h.Do("GET", "/v1/assistants", token, "")
	if r.Status == http.StatusOK {
		return r.Status, ""
	}
	e, _ := r.JSON(t)["error"].(map[string]any)
	code, _ := e["code"].(string)
	return r.Status, code
}

func randomString() string {
	b := make([]byte, 12)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
