package oauth

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"

	"github.com/amsdev/ams"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages are the HTML pages, each parsed with the shared layout (which
// holds the whole stylesheet: the pages load nothing at run time and need
// no JavaScript).
var pages = func() map[string]*template.Template {
	m := map[string]*template.Template{}
	for _, name := range []string{"login.html", "consent.html", "signedin.html", "error.html"} {
		m[name] = template.Must(template.ParseFS(templateFS, "templates/layout.html", "templates/"+name))
	}
	return m
}()

// view is the data of every page; each page uses the fields it needs.
type view struct {
	Title string
	Error string // shown in an alert above a form
	CSRF  string

	Email    string // login: the address typed
	ReturnTo string // login, logout: where to go next

	UserEmail    string // consent, signed in
	ClientName   string
	SelfNamed    bool // the client registered itself (RFC 7591): its name is unchecked
	RedirectHost string
	Scopes       []scopeView
	Hidden       []field

	Message string // error page
}

type scopeView struct{ Name, Meaning string }

type field struct{ Name, Value string }

// render writes a page with headers that keep it out of caches and frames
// (the consent page must not be clickjacked) and allow no scripts.
func (s *Server) render(w http.ResponseWriter, status int, name string, v view) {
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		s.logger.Error("render page", "page", name, "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer, browsers send
	// "Origin: null" on form posts, which the cross-origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// renderError shows the error page.
func (s *Server) renderError(w http.ResponseWriter, _ *http.Request, status int, title, msg string) {
	s.render(w, status, "error.html", view{Title: title, Message: msg})
}

var pageStatus = map[ams.ErrorKind]int{
	ams.EINVALID:         http.StatusBadRequest,
	ams.EUNAUTHENTICATED: http.StatusUnauthorized,
	ams.EFORBIDDEN:       http.StatusForbidden,
	ams.ENOTFOUND:        http.StatusNotFound,
	ams.ETOOLARGE:        http.StatusRequestEntityTooLarge,
	ams.ERATELIMIT:       http.StatusTooManyRequests,
	ams.EUNAVAILABLE:     http.StatusServiceUnavailable,
}

// page turns an HTML handler that returns an error into an http.Handler.
// An *ams.Error is shown on the error page with its status and message;
// any other error is logged and shown as a generic 500 page.
func (s *Server) page(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		var e *ams.Error
		if !errors.As(err, &e) {
			s.logger.Error("oauth page", "method", r.Method, "path", r.URL.Path, "err", err)
			e = &ams.Error{Kind: ams.EINTERNAL, Message: "Something went wrong on our side. Try again in a moment."}
		}
		status, ok := pageStatus[e.Kind]
		if !ok {
			status = http.StatusInternalServerError
		}
		title := http.StatusText(status)
		if status == http.StatusForbidden {
			title = "Request refused"
		}
		s.renderError(w, r, status, title, e.Message)
	})
}

// forbidden is the error of a form post without a valid CSRF token.
func forbidden(msg string) error {
	return &ams.Error{Kind: ams.EFORBIDDEN, Code: "csrf_token_invalid", Message: msg}
}

func badForm() error {
	return &ams.Error{Kind: ams.EINVALID, Code: "invalid_form", Message: "The form could not be read. Go back, reload the page and try again."}
}

// parseForm parses r's query and form body (r.Form, r.PostForm) and
// refuses any name or value that is not text every engine stores
// (ams.ValidText: UTF-8 without NUL), before a handler or the store sees
// it.
func parseForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return err
	}
	if name, bad := ams.InvalidValue(r.Form); bad {
		return fmt.Errorf("form field %q is not valid UTF-8 or holds a NUL character", name)
	}
	return nil
}
