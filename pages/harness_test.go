package pages_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"

	"github.com/amsdev/ams/pages"
	"golang.org/x/net/html"
)

// env is the fixture's server (amstest): the API with the OAuth server and
// the account pages on its mux, as ams serve builds it.
type env struct {
	t *testing.T
	f *amstest.Fixture
}

func newEnv(t *testing.T, opts ...amstest.Option) *env {
	t.Helper()
	f := amstest.New(t, opts...)
	return &env{t: t, f: f}
}

// user creates an account with a password (approved or on the waitlist).
func (e *env) user(email, pw string, approved, admin bool) *ams.User {
	e.t.Helper()
	hash, err := pages.HashPassword(pw)
	if err != nil {
		e.t.Fatal(err)
	}
	now := e.f.Clock.Now()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: email, PasswordHash: hash, Plan: ams.PlanStandard,
		Timezone: "UTC", CreatedAt: now, UpdatedAt: now, Admin: admin}
	if approved {
		u.ApprovedAt = &now
	}
	if err := e.f.Store.CreateUser(e.t.Context(), u); err != nil {
		e.t.Fatal(err)
	}
	return u
}

// browser is a client with a cookie jar that sends forms like a browser
// (same-origin fetch metadata) and follows redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	// origin, when set, is sent as the Origin of form posts (with
	// Sec-Fetch-Site: cross-site), as a page of another site would.
	origin string
	// header is added to every request (such as the X-Forwarded-For a
	// load balancer sets).
	header http.Header
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: e.t, base: e.f.Server.URL, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// page is a response, with its parsed HTML.
type page struct {
	t      *testing.T
	status int
	url    *url.URL // after redirects
	header http.Header
	body   string
	doc    *html.Node
	// redirects are the Location headers followed to get here.
	redirects []string
}

func (b *browser) do(req *http.Request) *page {
	b.t.Helper()
	var redirects []string
	for k, v := range b.header {
		req.Header[k] = v
	}
	c := *b.c
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		redirects = append(redirects, r.URL.RequestURI())
		if len(via) > 10 {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	p := &page{t: b.t, status: resp.StatusCode, url: resp.Request.URL, header: resp.Header, body: string(body), redirects: redirects}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		if p.doc, err = html.Parse(strings.NewReader(p.body)); err != nil {
			b.t.Fatal(err)
		}
	}
	return p
}

// get loads a page, following redirects.
func (b *browser) get(path string) *page {
	b.t.Helper()
	req, err := http.NewRequest("GET", b.base+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Sec-Fetch-Site", "none")
	return b.do(req)
}

// post sends a form to path as it is.
func (b *browser) post(path string, form url.Values) *page {
	b.t.Helper()
	req, err := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if b.origin != "" {
		req.Header.Set("Origin", b.origin)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
	} else {
		req.Header.Set("Origin", b.base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	return b.do(req)
}

// submit fills the form of p whose action is action (its hidden fields,
// prefilled values, checked boxes and selected options) with set, which
// replaces the values of the names it has, and posts it.
func (b *browser) submit(p *page, action string, set url.Values) *page {
	b.t.Helper()
	form := p.form(action)
	if form == nil {
		b.t.Fatalf("no form with action %s on %s (status %d):\n%s", action, p.url, p.status, p.text())
	}
	vals := formValues(form)
	for k, v := range set {
		vals[k] = v
	}
	return b.post(action, vals)
}

// form returns the form element whose action is action.
func (p *page) form(action string) *html.Node {
	var found *html.Node
	walk(p.doc, func(n *html.Node) bool {
		if found == nil && n.Type == html.ElementNode && n.Data == "form" && attr(n, "action") == action {
			found = n
		}
		return found == nil
	})
	return found
}

// formValues are the values a browser would send for form (no button).
func formValues(form *html.Node) url.Values {
	v := url.Values{}
	walk(form, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		name := attr(n, "name")
		switch n.Data {
		case "input":
			if name == "" {
				return true
			}
			switch attr(n, "type") {
			case "checkbox", "radio":
				if hasAttr(n, "checked") {
					val := attr(n, "value")
					if val == "" {
						val = "on"
					}
					v.Add(name, val)
				}
			case "submit", "button":
			default:
				v.Add(name, attr(n, "value"))
			}
		case "select":
			first, sel := "", ""
			walk(n, func(o *html.Node) bool {
				if o.Type == html.ElementNode && o.Data == "option" {
					if first == "" {
						first = attr(o, "value")
					}
					if hasAttr(o, "selected") && sel == "" {
						sel = attr(o, "value")
					}
				}
				return true
			})
			if sel == "" {
				sel = first
			}
			if name != "" {
				v.Add(name, sel)
			}
		case "textarea":
			if name != "" {
				v.Add(name, textOf(n))
			}
		}
		return true
	})
	return v
}

// text is the page's visible text with whitespace collapsed.
func (p *page) text() string {
	if p.doc == nil {
		return p.body
	}
	var body *html.Node
	walk(p.doc, func(n *html.Node) bool {
		if body == nil && n.Type == html.ElementNode && n.Data == "body" {
			body = n
		}
		return body == nil
	})
	if body == nil {
		body = p.doc
	}
	return strings.Join(strings.Fields(textOf(body)), " ")
}

// byID returns the element with id, or nil.
func (p *page) byID(id string) *html.Node {
	var found *html.Node
	walk(p.doc, func(n *html.Node) bool {
		if found == nil && n.Type == html.ElementNode && attr(n, "id") == id {
			found = n
		}
		return found == nil
	})
	return found
}

// mustContain fails unless the page's text has each of want.
func (p *page) mustContain(want ...string) {
	p.t.Helper()
	txt := p.text()
	for _, w := range want {
		if !strings.Contains(txt, w) {
			p.t.Fatalf("page %s (status %d) does not say %q:\n%s", p.url.Path, p.status, w, txt)
		}
	}
}

// mustNotContain fails if the page's text has any of bad.
func (p *page) mustNotContain(bad ...string) {
	p.t.Helper()
	txt := p.text()
	for _, w := range bad {
		if strings.Contains(txt, w) {
			p.t.Fatalf("page %s (status %d) says %q:\n%s", p.url.Path, p.status, w, txt)
		}
	}
}

func (p *page) mustStatus(want int) {
	p.t.Helper()
	if p.status != want {
		p.t.Fatalf("%s: status %d, want %d:\n%s", p.url.Path, p.status, want, p.text())
	}
}

// walk calls f on n and its descendants, depth first; f returns whether
// to look inside its node.
func walk(n *html.Node, f func(*html.Node) bool) {
	if !f(n) {
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.ElementNode && (c.Data == "script" || c.Data == "style") {
			return false
		}
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
			b.WriteString(" ")
		}
		return true
	})
	return b.String()
}

// signIn signs b in through the login page and ends on /account.
func (b *browser) signIn(email, pw string) *page {
	b.t.Helper()
	p := b.get("/account")
	p = b.submit(p, "/login", url.Values{"email": {email}, "password": {pw}})
	if p.url.Path != "/account" || p.status != http.StatusOK {
		b.t.Fatalf("sign-in ended on %s with %d:\n%s", p.url, p.status, p.text())
	}
	return p
}
