package caldav

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams/ssrf"
	"github.com/emersion/go-ical"
	"github.com/emersion/go-webdav"
	"github.com/emersion/go-webdav/caldav"
)

// Timeout bounds one request to a CalDAV server, from connecting to the
// last byte of its answer.
const Timeout = 30 * time.Second

// MaxResponseBytes bounds the body of one answer of a CalDAV server (a
// PROPFIND multistatus listing the collection, some 15,000 objects; a
// calendar-multiget REPORT of 50 objects; one object): a larger answer
// fails the request, and the sync with it, rather than filling the
// memory (decoding a multistatus allocates some 20 times its size).
const MaxResponseBytes = 4 << 20

// NewHTTPClient returns the HTTP client CalDAV requests use: connections
// through the SSRF guard (the server's address is checked at every
// connection, as for webhooks), at most Timeout per request, answers
// bounded (headers to ssrf.DefaultMaxHeaderBytes, bodies to
// MaxResponseBytes), and at most three redirects.
func NewHTTPClient(g *ssrf.Guard) *http.Client {
	return NewHTTPClientWith(g, ssrf.Limits{Timeout: Timeout, MaxBodyBytes: MaxResponseBytes})
}

// NewHTTPClientWith is NewHTTPClient with other limits (tests make them
// small).
func NewHTTPClientWith(g *ssrf.Guard, l ssrf.Limits) *http.Client {
	c := g.Client(l)
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 3 {
			return errors.New("too many redirects")
		}
		return nil
	}
	return c
}

// remote is one calendar collection on a CalDAV server.
type remote struct {
	http   webdav.HTTPClient // adds the credentials
	dav    *caldav.Client
	base   *url.URL // the collection's URL, ending in /
	path   string   // base.Path
	header string   // User-Agent
}

// object is a calendar object resource of the collection.
type object struct {
	Path, ETag string
	Data       *ical.Calendar
}

func newRemote(c *http.Client, rawURL, username, password string) (*remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	var hc webdav.HTTPClient = uaClient{c}
	if username != "" || password != "" {
		hc = webdav.HTTPClientWithBasicAuth(hc, username, password)
	}
	dav, err := caldav.NewClient(hc, u.String())
	if err != nil {
		return nil, err
	}
	return &remote{http: hc, dav: dav, base: u, path: u.Path}, nil
}

// uaClient names ams in User-Agent.
type uaClient struct{ c *http.Client }

func (u uaClient) Do(req *http.Request) (*http.Response, error) {
	req.Header.Set("User-Agent", "ams-caldav/"+ProdVersion)
	return u.c.Do(req)
}

// ProdVersion is the version in User-Agent.
var ProdVersion = strings.Fields(ProdID)[0]

// statusError is an HTTP answer other than the one expected.
type statusError struct {
	Method string
	Code   int
}

func (e *statusError) Error() string { return fmt.Sprintf("%s: HTTP %d", e.Method, e.Code) }

// do sends a request to href (a path on the server, or "" for the
// collection) and returns the response if its status is one of want.
func (r *remote) do(ctx context.Context, method, href string, body []byte, header map[string]string, want ...int) (*http.Response, error) {
	u := *r.base
	if href != "" {
		u.Path = href
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, err
	}
	for _, c := range want {
		if resp.StatusCode == c {
			return resp, nil
		}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return nil, &statusError{Method: method, Code: resp.StatusCode}
}

// check asks the collection's resource type (PROPFIND, Depth 0) and
// refuses a URL that is not a calendar collection.
func (r *remote) check(ctx context.Context) error {
	body := []byte(`<?xml version="1.0" encoding="utf-8"?>` +
		`<d:propfind xmlns:d="DAV:"><d:prop><d:resourcetype/></d:prop></d:propfind>`)
	resp, err := r.do(ctx, "PROPFIND", "", body, map[string]string{"Depth": "0", "Content-Type": `application/xml; charset="utf-8"`}, http.StatusMultiStatus)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var ms struct {
		Responses []struct {
			Propstat []struct {
				Prop struct {
					ResourceType struct {
						Calendar *struct{} `xml:"urn:ietf:params:xml:ns:caldav calendar"`
					} `xml:"DAV: resourcetype"`
				} `xml:"DAV: prop"`
			} `xml:"DAV: propstat"`
		} `xml:"DAV: response"`
	}
	if err := xml.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ms); err != nil {
		return fmt.Errorf("%w: PROPFIND answer: %v", errBadAnswer, err)
	}
	for _, rs := range ms.Responses {
		for _, ps := range rs.Propstat {
			if ps.Prop.ResourceType.Calendar != nil {
				return nil
			}
		}
	}
	return errNotCalendar
}

var (
	errNotCalendar = errors.New("caldav: the URL is not a calendar collection")
	errBadAnswer   = errors.New("caldav: unreadable answer")
)

// list returns the ETag of every calendar object of the collection
// (PROPFIND, Depth 1), by path.
func (r *remote) list(ctx context.Context) (map[string]string, error) {
	infos, err := r.dav.ReadDir(ctx, r.path, false)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(infos))
	for _, fi := range infos {
		if fi.IsDir || fi.Path == r.path || strings.TrimSuffix(fi.Path, "/") == strings.TrimSuffix(r.path, "/") {
			continue
		}
		out[fi.Path] = fi.ETag
	}
	return out, nil
}

// fetch returns the objects at paths (calendar-multiget REPORTs of 50).
// An object that is gone by now is left out.
func (r *remote) fetch(ctx context.Context, paths []string) ([]object, error) {
	var out []object
	for len(paths) > 0 {
		n := min(len(paths), 50)
		batch := paths[:n]
		paths = paths[n:]
		objs, err := decodeSafely(func() ([]caldav.CalendarObject, error) {
			return r.dav.MultiGetCalendar(ctx, r.path, &caldav.CalendarMultiGet{
				Paths:       batch,
				CompRequest: caldav.CalendarCompRequest{Name: ical.CompCalendar, AllProps: true, AllComps: true},
			})
		})
		if err != nil {
			// One missing (or unreadable) object fails the whole REPORT
			// in go-webdav: fetch them one by one.
			for _, p := range batch {
				o, err := r.get(ctx, p)
				if err != nil {
					if isStatus(err, http.StatusNotFound) || unreadable(err) {
						continue // gone, or not iCalendar ams can read: left alone
					}
					return nil, err
				}
				out = append(out, *o)
			}
			continue
		}
		for _, o := range objs {
			out = append(out, object{Path: o.Path, ETag: o.ETag, Data: o.Data})
		}
	}
	return out, nil
}

// get fetches one object.
func (r *remote) get(ctx context.Context, path string) (*object, error) {
	o, err := decodeSafely(func() (*caldav.CalendarObject, error) { return r.dav.GetCalendarObject(ctx, path) })
	if err != nil {
		return nil, err
	}
	return &object{Path: path, ETag: o.ETag, Data: o.Data}, nil
}

// errUnwritable marks a calendar object go-ical refuses to encode (a
// remote object whose properties break its rules, such as two SUMMARYs).
var errUnwritable = errors.New("caldav: the object cannot be written as iCalendar")

// errUnreadable marks a calendar object whose iCalendar cannot be read.
var errUnreadable = errors.New("ical: unreadable calendar object")

// decodeSafely runs fn, a go-webdav call that decodes iCalendar: go-ical
// panics on some malformed content lines (a parameter's quoted value
// followed by other characters, or by the end of the line), which an
// object on a remote server must not turn into a crash of ams.
func decodeSafely[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errUnreadable, p)
		}
	}()
	return fn()
}

// unreadable reports whether err is the failure to read an object's
// iCalendar (go-ical's errors start "ical: "), not of the server.
func unreadable(err error) bool {
	return errors.Is(err, errUnreadable) || strings.HasPrefix(err.Error(), "ical: ")
}

// put writes cal at path: only if no object is there (etag "") or only if
// the object is still the one with etag. It returns the new ETag ("" if
// the server did not say), or a *statusError 412 when the condition
// failed.
func (r *remote) put(ctx context.Context, path, etag string, cal *ical.Calendar) (string, error) {
	var b bytes.Buffer
	if err := encodeCalendar(&b, cal); err != nil {
		return "", fmt.Errorf("%w: %v", errUnwritable, err)
	}
	h := map[string]string{"Content-Type": ical.MIMEType + "; charset=utf-8"}
	if etag == "" {
		h["If-None-Match"] = "*"
	} else {
		h["If-Match"] = quoteETag(etag)
	}
	resp, err := r.do(ctx, http.MethodPut, path, b.Bytes(), h, http.StatusCreated, http.StatusNoContent, http.StatusOK)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return unquoteETag(resp.Header.Get("ETag")), nil
}

// remove deletes the object at path if it is still the one with etag.
// An object already gone is no error.
func (r *remote) remove(ctx context.Context, path, etag string) error {
	h := map[string]string{}
	if etag != "" {
		h["If-Match"] = quoteETag(etag)
	}
	resp, err := r.do(ctx, http.MethodDelete, path, nil, h, http.StatusNoContent, http.StatusOK, http.StatusAccepted, http.StatusNotFound)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func quoteETag(s string) string {
	if strings.HasPrefix(s, `"`) || strings.HasPrefix(s, `W/"`) {
		return s
	}
	return strconv.Quote(s)
}

func unquoteETag(s string) string {
	s = strings.TrimPrefix(s, "W/")
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// objectPath is where a new object of uid goes in the collection.
func (r *remote) objectPath(uid string) string {
	safe := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			return c
		}
		return '_'
	}, uid)
	return r.path + safe + ".ics"
}

// isStatus reports whether err is an HTTP answer with code, from our own
// requests or from go-webdav's.
func isStatus(err error, code int) bool {
	return statusOf(err) == code
}

// statusOf returns the HTTP status of err, 0 if it is not an HTTP answer.
func statusOf(err error) int {
	if err == nil {
		return 0
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.Code
	}
	// go-webdav's HTTPError is an internal type; its text is
	// "<code> <reason>[: detail]".
	msg := err.Error()
	if i := strings.IndexByte(msg, ' '); i == 3 {
		if code, err := strconv.Atoi(msg[:3]); err == nil && code >= 100 && code < 600 && strings.HasPrefix(msg[4:], http.StatusText(code)) {
			return code
		}
	}
	return 0
}

// describe turns a sync or connection failure into a sentence safe to
// show the account's owner: what went wrong, without the server's answer
// or internal addresses.
func describe(err error) string {
	var ne net.Error
	var dnsErr *net.DNSError
	var urlErr *url.Error
	var tl *ssrf.TooLargeError
	switch code := statusOf(err); {
	case errors.As(err, &tl):
		return fmt.Sprintf("The CalDAV server's answer was too large: its %s %s the limit of %s.", tl.Part, tl.Verb(), ssrf.Size(tl.Limit))
	case errors.Is(err, errNotCalendar):
		return "The URL is not a CalDAV calendar collection."
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Sprintf("The CalDAV server refused the credentials (HTTP %d).", code)
	case code == http.StatusNotFound:
		return "The calendar was not found at the URL (HTTP 404)."
	case code != 0:
		return fmt.Sprintf("The CalDAV server answered HTTP %d.", code)
	case errors.Is(err, ssrf.ErrBlocked):
		return "The CalDAV server's address is not allowed (an internal network address)."
	case errors.As(err, &dnsErr):
		return "The CalDAV server's host name does not resolve."
	case errors.As(err, &ne) && ne.Timeout():
		return "The CalDAV server did not answer in time."
	case errors.Is(err, errBadAnswer), errors.Is(err, io.ErrUnexpectedEOF):
		return "The CalDAV server's answer could not be read."
	case errors.As(err, &urlErr):
		return "Could not connect to the CalDAV server."
	}
	return "The calendar could not be synchronized."
}
