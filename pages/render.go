package pages

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/format"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// funcs are the template functions every page may use.
var funcs = template.FuncMap{
	"join": func(sep string, v any) string {
		switch v := v.(type) {
		case []string:
			return strings.Join(v, sep)
		case ams.Permissions:
			s := make([]string, len(v))
			for i, p := range v {
				s[i] = string(p)
			}
			return strings.Join(s, sep)
		}
		return fmt.Sprint(v)
	},
	// num writes a count with thousands separators ("1,234"): every
	// number a page shows goes through it (format.Number).
	"num": num,
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return format.Number(n) + " " + many
	},
	"contains": func(list any, v string) bool {
		switch l := list.(type) {
		case []string:
			for _, x := range l {
				if x == v {
					return true
				}
			}
		case ams.Permissions:
			for _, x := range l {
				if string(x) == v {
					return true
				}
			}
		}
		return false
	},
	"static": staticURL,
}

var (
	templatesMu sync.Mutex
	templates   = map[string]*template.Template{}
)

// mustTemplate returns the page template file name (under templates/),
// parsed with the layout and the partials; it panics if it does not parse,
// so that a broken template stops the server at start and fails the tests.
func mustTemplate(name string) *template.Template {
	templatesMu.Lock()
	defer templatesMu.Unlock()
	if t, ok := templates[name]; ok {
		return t
	}
	partials, err := fs.Glob(templateFS, "templates/_*.html")
	if err != nil {
		panic(err)
	}
	files := append([]string{"templates/layout.html"}, partials...)
	files = append(files, "templates/"+name)
	t := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, files...))
	templates[name] = t
	return t
}

// View is what every template gets as dot.
type View struct {
	Title   string
	User    *ams.User
	CSRF    string
	Nav     []NavItem
	Flashes []Flash
	Errors  []FieldError
	// Data is what the page's handler returned.
	Data any
	Now  time.Time
	// Path is the path of the request.
	Path string

	loc *time.Location
}

// ErrorFor returns the form error of field, or "".
func (v *View) ErrorFor(field string) string {
	for _, e := range v.Errors {
		if e.Field == field {
			return e.Message
		}
	}
	return ""
}

// Time formats t (a time.Time or *time.Time; nil: "never") as date and
// time in the user's time zone, "24 Nov 2026 18:30 UTC" (format.Time: the
// one date format of the pages).
func (v *View) Time(t any) string {
	tt, ok := timeOf(t)
	if !ok {
		return "never"
	}
	return format.Time(tt, v.loc)
}

// Date formats t as a date in the user's time zone, "24 Nov 2026"
// (format.Date).
func (v *View) Date(t any) string {
	tt, ok := timeOf(t)
	if !ok {
		return "never"
	}
	return format.Date(tt, v.loc)
}

// ISO formats t for a <time datetime> attribute.
func (v *View) ISO(t any) string {
	tt, ok := timeOf(t)
	if !ok {
		return ""
	}
	return tt.UTC().Format(time.RFC3339)
}

// Ago says how long before the request t was ("3 days ago"; nil: "never").
func (v *View) Ago(t any) string {
	tt, ok := timeOf(t)
	if !ok {
		return "never"
	}
	return ago(v.Now.Sub(tt))
}

func ago(d time.Duration) string {
	unit := func(n int, s string) string {
		if n == 1 {
			return "1 " + s + " ago"
		}
		return fmt.Sprintf("%d %ss ago", n, s)
	}
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return unit(int(d/time.Minute), "minute")
	case d < 24*time.Hour:
		return unit(int(d/time.Hour), "hour")
	case d < 60*24*time.Hour:
		return unit(int(d/(24*time.Hour)), "day")
	case d < 2*365*24*time.Hour:
		return unit(int(d/(30*24*time.Hour)), "month")
	}
	return unit(int(d/(365*24*time.Hour)), "year")
}

func timeOf(t any) (time.Time, bool) {
	switch t := t.(type) {
	case time.Time:
		return t, !t.IsZero()
	case *time.Time:
		if t == nil || t.IsZero() {
			return time.Time{}, false
		}
		return *t, true
	}
	return time.Time{}, false
}

// render writes page tmpl with data. Every page is kept out of caches and
// frames.
func (s *Server) render(w http.ResponseWriter, r *http.Request, c *Ctx, status int, tmpl string, data any) {
	v := &View{Data: data, Path: r.URL.Path, loc: time.UTC, Now: s.Clock.Now()}
	if c != nil {
		v.Title, v.User, v.CSRF, v.Flashes, v.Errors, v.loc, v.Now = c.Title, c.User, c.CSRF, c.Flashes, c.Errors, c.loc, c.Now
	}
	if v.User != nil {
		for _, n := range nav {
			if s.available[n.Path] {
				n.Current = r.URL.Path == n.Path || (n.Path != "/account" && strings.HasPrefix(r.URL.Path, n.Path+"/"))
				v.Nav = append(v.Nav, n)
			}
		}
	}
	var buf bytes.Buffer
	if err := mustTemplate(tmpl).ExecuteTemplate(&buf, "layout", v); err != nil {
		s.Logger.Error("render page", "page", tmpl, "err", err)
		if tmpl != "error.html" {
			s.renderError(w, r, c, http.StatusInternalServerError, "Something went wrong", genericError)
			return
		}
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	setPageHeaders(w.Header())
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func setPageHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; script-src 'self'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer, browsers send
	// "Origin: null" on form posts, which the cross-origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
}

const genericError = "Something went wrong on our side. Try again in a moment."

// errorView is the data of the error page.
type errorView struct{ Message string }

// renderError shows the error page with status.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, c *Ctx, status int, title, msg string) {
	if c == nil {
		c = &Ctx{s: s, loc: time.UTC, Now: s.Clock.Now()}
	}
	cc := *c
	cc.Title, cc.Errors, cc.Flashes = title, nil, nil
	s.render(w, r, &cc, status, "error.html", errorView{Message: msg})
}

var pageStatus = map[ams.ErrorKind]int{
	ams.EINVALID:         http.StatusBadRequest,
	ams.EUNAUTHENTICATED: http.StatusUnauthorized,
	ams.EFORBIDDEN:       http.StatusForbidden,
	ams.ENOTFOUND:        http.StatusNotFound,
	ams.ECONFLICT:        http.StatusConflict,
	ams.ETOOLARGE:        http.StatusRequestEntityTooLarge,
	ams.ERATELIMIT:       http.StatusTooManyRequests,
	ams.EUNAVAILABLE:     http.StatusServiceUnavailable,
}

// fail shows err on the error page: an *ams.Error with its status and
// message, anything else logged and shown as a generic 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, c *Ctx, err error) {
	var e *ams.Error
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb):
		e = &ams.Error{Kind: ams.ETOOLARGE, Message: "The form is too large."}
	case !errors.As(err, &e):
		s.Logger.Error("account page", "method", r.Method, "path", r.URL.Path, "err", err)
		e = &ams.Error{Kind: ams.EINTERNAL, Message: genericError}
	}
	status, ok := pageStatus[e.Kind]
	if !ok {
		status = http.StatusInternalServerError
	}
	title := http.StatusText(status)
	switch status {
	case http.StatusForbidden:
		title = "Not allowed"
	case http.StatusNotFound:
		title = "Not found"
	case http.StatusInternalServerError:
		title = "Something went wrong"
	}
	s.renderError(w, r, c, status, title, e.Message)
}

// num formats a count (any integer type, or a string already formatted)
// with thousands separators.
func num(v any) string {
	switch n := v.(type) {
	case int:
		return format.Number(n)
	case int32:
		return format.Number(n)
	case int64:
		return format.Number(n)
	case string:
		return n
	}
	return fmt.Sprint(v)
}

// staticVersion is a hash of the static files, added to their URLs so that
// browsers may cache them and still see a new version at once.
var staticVersion = func() string {
	h := sha256.New()
	fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := staticFS.ReadFile(p)
			h.Write([]byte(p))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

// staticURL is the URL of a static file (style.css, copy.js).
func staticURL(name string) string {
	return "/account/static/" + name + "?v=" + staticVersion
}

// serveStatic serves the embedded stylesheet and script.
func serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := staticFS.ReadFile("static/" + name)
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	ct := "text/plain; charset=utf-8"
	switch path.Ext(name) {
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".svg":
		ct = "image/svg+xml"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("v") == staticVersion {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Write(b)
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
