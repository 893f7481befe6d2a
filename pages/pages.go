// Package pages serves the account pages of ams: sign-up, the account
// overview, API keys, password change, password reset and e-mail
// verification by e-mailed links, the waitlist admin page, OAuth
// apps, webhooks, usage and assistants (the route list is in routes.go).
// The pages are server-rendered with html/template; the templates, one
// stylesheet and one small script (the copy button, which the pages do
// without) are embedded, so nothing is fetched at run time.
//
// Sign-in, sign-out and the session are the OAuth server's (package
// oauth): the pages read the same session cookie, and "sign in" is
// /login?return_to=/account.
//
// # Adding a page
//
// A page is a Go file in this package with its handlers, one template file
// under templates/, and its routes in the one route list, Server.routes in
// routes.go:
//
//	s.Page("GET /account/webhooks", "webhooks.html", s.webhooks)
//	s.Form("POST /account/webhooks", "webhooks.html", "GET /account/webhooks", s.createWebhook)
//
// A handler returns the data its template renders:
//
//	func (s *Server) webhooks(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
//		hooks, err := s.Store.ListWebhooks(r.Context(), c.User.ID, ams.ListParams{Limit: 100})
//		if err != nil {
//			return nil, err
//		}
//		return hooks, nil // rendered with webhooks.html as .Data
//	}
//
// Page routes require a signed-in user (others are sent to the sign-in
// page and back); every POST route also requires the form's CSRF token
// (the hidden field {{template "csrf" .}}) and a same-origin request, and
// answers 403 without running the handler otherwise. A handler returns
// the data of its template, or ends with c.Redirect (after a POST: flash
// a message with c.Flash, then redirect: POST → 303 → GET), or returns an
// error: an *ams.Error is shown on the error page with its status and
// message, any other error is logged and shown as a generic 500 page.
// Form errors are c.Fail(field, message): the page is rendered again
// (status 422) with an error summary on top; templates show a field's
// message with {{$.ErrorFor "field"}}.
//
// The template file defines "title" and "content":
//
//	{{define "title"}}Webhooks{{end}}
//	{{define "content"}}<h1>Webhooks</h1> … {{range .Data}} … {{end}}{{end}}
//
// Inside it, . is the *View: .Data is the handler's data, .User the
// signed-in user, .Now the request time, and .Time/.Date/.Ago format
// times in the user's time zone ({{num .N}} writes a count; both go
// through internal/format, the one number and date format). The
// templates of templates/_*.html are
// shared partials, included in every page. The header's navigation (nav
// below) shows an entry once a GET page is registered at its path. Every
// page is sent with Cache-Control: no-store.
//
// PublicPage registers a page that needs no session (sign-up, forgot
// password, the links e-mailed: reset and verification); its POST
// routes are protected by the CSRF token of the login form instead.
package pages

import (
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/account"
	"github.com/amsdev/ams/messaging"
	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/webhook"
	"github.com/amsdev/ams/world"
)

// Server serves the account pages. Set its fields, then call Register.
type Server struct {
	// Store holds the accounts and their records. Handlers read it
	// (Reader, reads only); they change records through the services
	// (Accounts, Webhooks, Messages, OAuthClients).
	Store Reader
	// OAuthClients registers and changes the user's OAuth clients and
	// revokes what the user authorized them to do.
	OAuthClients *oauth.Clients
	// Clock is the service clock (nil: the wall clock).
	Clock ams.Clock
	// Logger receives internal errors (nil: slog.Default()).
	Logger *slog.Logger
	// BaseURL is the public URL of the service, without a trailing slash
	// (shown in examples such as the curl line of a new key).
	BaseURL string
	// OAuth is the authorization server, whose session, sign-in and CSRF
	// tokens the pages share.
	OAuth *oauth.Server
	// Accounts signs up, changes passwords, approves accounts and creates
	// and revokes API keys: the service of `ams users` and `ams keys`.
	Accounts *account.Service
	// Messages sends the messages of the assistants pages: the service
	// of the API's POST /v1/messages (nil: the pages only read).
	Messages *messaging.Service
	// World changes assistants (their approval and double-texting
	// settings) and connects, syncs and disconnects integrations: give it
	// the API's, so that the pages accept exactly what PATCH
	// /v1/assistants/{id} and POST /v1/integrations accept (nil: the
	// settings are only shown and the integrations pages only read).
	World *world.Service
	// Webhooks changes webhooks: give it the API's (http.Server.Webhooks),
	// so that the pages accept exactly the webhooks the API accepts (in
	// --dev mode, loopback and plain http URLs).
	Webhooks *webhook.Service
	// Limiter counts the actions of the pages that make ams send
	// something (a message to an assistant; a webhook's ping, recovery or
	// redelivery) against the account's rate limits, as API requests are
	// counted (ratelimit.Gate; nil: not counted).
	Limiter ams.RateLimiter
	// Usage, when set, meters those actions with the API's requests.
	Usage ratelimit.UsageRecorder

	once      sync.Once
	mux       *http.ServeMux
	cop       *http.CrossOriginProtection
	available map[string]bool // GET paths with a registered page (for the nav)
	pages     map[string]page // by pattern

	flashKey  []byte
	secretKey []byte
}

// page is a registered page: its template and handler, and for a form
// the pattern of the page it is on.
type page struct {
	tmpl string
	h    Handler
	on   string
}

// Handler is a page handler: it returns the data its template renders as
// .Data, or has already answered (c.Redirect), or fails.
type Handler func(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error)

// NavItem is an entry of the header's navigation.
type NavItem struct {
	Label   string
	Path    string
	Current bool // the page shown is this entry's (or below it)
}

// nav is the header's navigation, in order. An entry appears once a GET
// page is registered at its path. Sign out is a form in the header.
var nav = []NavItem{
	{Label: "Overview", Path: "/account"},
	{Label: "API keys", Path: "/account/keys"},
	{Label: "OAuth apps", Path: "/account/apps"},
	{Label: "Webhooks", Path: "/account/webhooks"},
	{Label: "Integrations", Path: "/account/integrations"},
	{Label: "Usage", Path: "/account/usage"},
	{Label: "Assistants", Path: "/account/assistants"},
}

// Register adds the account pages to mux: /account and below, /signup,
// the stylesheet and script under /account/static/, and / redirecting to
// /account. The routes are listed in routes.go.
func (s *Server) Register(mux *http.ServeMux) {
	s.init()
	s.mux = mux
	s.routes()
}

func (s *Server) init() {
	s.once.Do(func() {
		if s.Logger == nil {
			s.Logger = slog.Default()
		}
		s.available = map[string]bool{}
		s.pages = map[string]page{}
		s.cop = http.NewCrossOriginProtection()
		s.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.renderError(w, r, nil, http.StatusForbidden, "Request refused",
				"This form was sent from another site, so it was refused. Go back to the page, reload it, and try again.")
		}))
		if s.OAuth != nil {
			s.flashKey = s.OAuth.DeriveKey("web flash")
			s.secretKey = s.OAuth.DeriveKey("web shown-once secret")
		}
		s.BaseURL = strings.TrimRight(s.BaseURL, "/")
	})
}

// Page registers a page that needs a signed-in user. pattern is a
// ServeMux pattern with the method GET ("GET /account/keys"). tmpl is the
// template file under templates/ that renders what h returns.
func (s *Server) Page(pattern, tmpl string, h Handler) {
	s.handle(pattern, tmpl, "", h, false)
}

// PublicPage registers a page that needs no session; c.User is the
// signed-in user or nil.
func (s *Server) PublicPage(pattern, tmpl string, h Handler) {
	s.handle(pattern, tmpl, "", h, true)
}

// Form registers a form that needs a signed-in user: pattern is a POST
// ServeMux pattern, checked for CSRF before h runs, and on is the page
// the form is on (a GET pattern with the form's path values), rendered
// with a form error for a field that cannot be stored (refuseForm).
func (s *Server) Form(pattern, tmpl, on string, h Handler) {
	s.handle(pattern, tmpl, on, h, false)
}

// PublicForm registers a form that needs no session (Form); it checks the
// CSRF token of the browser's login cookie (or of the session, when
// signed in).
func (s *Server) PublicForm(pattern, tmpl, on string, h Handler) {
	s.handle(pattern, tmpl, on, h, true)
}

func (s *Server) handle(pattern, tmpl, on string, h Handler, public bool) {
	s.init()
	if s.mux == nil {
		panic("pages: Page called outside Register")
	}
	mustTemplate(tmpl)
	method, path, _ := strings.Cut(pattern, " ")
	if form := method != http.MethodGet && method != http.MethodHead; form != (on != "") {
		panic("pages: " + pattern + ": a form (POST) is registered with Form, naming its page; a page with Page")
	}
	s.pages[pattern] = page{tmpl, h, on}
	var hh http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, tmpl, h, public)
	})
	if method != http.MethodGet && method != http.MethodHead {
		hh = s.cop.Handler(hh)
	} else if !strings.Contains(path, "{") {
		s.available[path] = true
	}
	s.mux.Handle(pattern, hh)
}

// maxFormBytes bounds the body of every form.
const maxFormBytes = 64 << 10

// serve runs one page request: session, CSRF, flash, handler, render.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, tmpl string, h Handler, public bool) {
	user, sid, err := s.OAuth.SessionUser(r)
	if err != nil {
		s.fail(w, r, nil, err)
		return
	}
	post := r.Method != http.MethodGet && r.Method != http.MethodHead
	if user == nil && !public {
		ret := r.URL.RequestURI()
		if post {
			ret = r.URL.Path
		}
		http.Redirect(w, r, "/login?return_to="+urlQueryEscape(ret), http.StatusSeeOther)
		return
	}
	c := &Ctx{s: s, w: w, r: r, User: user, SessionID: sid, Now: s.Clock.Now(), tmpl: tmpl}
	c.loc = time.UTC
	if user != nil {
		if loc, err := time.LoadLocation(user.Timezone); err == nil {
			c.loc = loc
		}
	}
	// Every path, query and form value is checked here, once, to be text
	// that every engine stores (UTF-8 without NUL): a page id that is not
	// is a page that does not exist; a query value, a bad request; a form
	// field, a form error on the form's page (refuseForm).
	if _, bad := ams.InvalidPathValue(r.Pattern, r.PathValue); bad {
		s.fail(w, r, c, &ams.Error{Kind: ams.ENOTFOUND, Code: "resource_missing", Message: "There is no such page."})
		return
	}
	if _, bad := ams.InvalidValue(r.URL.Query()); bad {
		s.renderError(w, r, c, http.StatusBadRequest, "Bad request", "This link is not valid: go back and follow the page's links.")
		return
	}
	if post {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			s.renderError(w, r, c, http.StatusBadRequest, "Bad request", "The form could not be read. Go back, reload the page and try again.")
			return
		}
		if !s.OAuth.CheckCSRF(r, sid, r.PostForm.Get("csrf_token")) {
			s.renderError(w, r, c, http.StatusForbidden, "Request refused",
				"This form has expired or was not sent from this site, so nothing was changed. Go back, reload the page and try again.")
			return
		}
		if bad := invalidFields(r.PostForm); len(bad) > 0 {
			c.CSRF = s.OAuth.CSRFToken(w, r, sid)
			s.refuseForm(w, r, c, bad)
			return
		}
	}
	c.CSRF = s.OAuth.CSRFToken(w, r, sid)
	if !post {
		c.Flashes = s.takeFlashes(w, r, sid)
	}
	data, err := h(w, r, c)
	s.finish(w, r, c, data, err)
}

// invalidFields returns the names of the form's fields whose value is not
// text every engine stores (ams.ValidText), sorted, with "" for a field
// name that is not.
func invalidFields(form url.Values) []string {
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(form)) {
		if !ams.ValidText(k) {
			if !slices.Contains(bad, "") {
				bad = append(bad, "")
			}
			continue
		}
		for _, v := range form[k] {
			if !ams.ValidText(v) {
				bad = append(bad, k)
				break
			}
		}
	}
	return bad
}

// refuseForm answers a form with the fields bad (invalidFields): its
// handler does not run, so nothing is stored; the page the form is on
// (the one its route names) is rendered with status 400 and a form error naming each
// field. A form without such a page gets the 400 error page.
func (s *Server) refuseForm(w http.ResponseWriter, r *http.Request, c *Ctx, bad []string) {
	const why = "holds a character that cannot be stored (a NUL character or invalid UTF-8), so nothing was changed. Correct it and send the form again."
	fp, ok := s.pages[s.pages[r.Pattern].on]
	if !ok {
		s.renderError(w, r, c, http.StatusBadRequest, "Bad request", "The form "+why)
		return
	}
	for _, f := range bad {
		if f == "" {
			c.Fail("", "The name of a field of the form "+why)
		} else {
			c.Fail(f, "The field “"+ams.Clip(f)+"” "+why)
		}
	}
	c.Status = http.StatusBadRequest
	c.tmpl = fp.tmpl
	data, err := fp.h(w, r, c)
	s.finish(w, r, c, data, err)
}

// finish answers what a page handler returned.
func (s *Server) finish(w http.ResponseWriter, r *http.Request, c *Ctx, data any, err error) {
	if err != nil {
		s.fail(w, r, c, err)
		return
	}
	if c.done {
		return
	}
	status := c.Status
	if status == 0 {
		status = http.StatusOK
		if len(c.Errors) > 0 {
			status = http.StatusUnprocessableEntity
		}
	}
	s.render(w, r, c, status, c.tmpl, data)
}
