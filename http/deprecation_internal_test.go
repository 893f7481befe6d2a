package http

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestDeprecationHeaders marks two operations deprecated on a server of
// its own: every answer of theirs, an error before authentication
// included, carries Deprecation (RFC 9745) and, when a date is set,
// Sunset (RFC 8594) and the Link relations; other operations carry none.
func TestDeprecationHeaders(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	sunset := time.Date(2027, 5, 1, 0, 0, 0, 0, time.UTC)
	s := &Server{
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		OpenAPI: []byte(`{"openapi":"3.1.0"}`),
		Deprecated: map[string]Deprecation{
			"GET /v1/openapi.json":    {Since: since, Sunset: sunset, Link: "https://docs.example/migrate"},
			"GET /v1/assistants/{id}": {Since: since},
		},
	}
	h := s.Handler()
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}

	r := get("/v1/openapi.json")
	if r.Code != 200 {
		t.Fatalf("status %d", r.Code)
	}
	if got := r.Header().Get("Deprecation"); got != "@1793491200" {
		t.Errorf("Deprecation %q, want @1793491200", got)
	}
	if got := r.Header().Get("Sunset"); got != "Sat, 01 May 2027 00:00:00 GMT" {
		t.Errorf("Sunset %q", got)
	}
	if got := r.Header().Get("Link"); got != `<https://docs.example/migrate>; rel="deprecation", <https://docs.example/migrate>; rel="sunset"` {
		t.Errorf("Link %q", got)
	}

	// Refused before authentication: the headers are there all the same.
	r = get("/v1/assistants/ast_1")
	if r.Code != http.StatusUnauthorized || r.Header().Get("Deprecation") != "@1793491200" ||
		r.Header().Get("Sunset") != "" || r.Header().Get("Link") != "" {
		t.Errorf("deprecated route without sunset: %d Deprecation %q Sunset %q Link %q",
			r.Code, r.Header().Get("Deprecation"), r.Header().Get("Sunset"), r.Header().Get("Link"))
	}

	r = get("/v1/assistants")
	if r.Code != http.StatusUnauthorized || r.Header().Get("Deprecation") != "" || r.Header().Get("Sunset") != "" {
		t.Errorf("a route not deprecated: %d Deprecation %q Sunset %q", r.Code, r.Header().Get("Deprecation"), r.Header().Get("Sunset"))
	}
}

// TestDeprecatedRoutesExist: every key of the package's table names a
// route, so that a renamed route cannot silently lose its headers.
func TestDeprecatedRoutesExist(t *testing.T) {
	t.Parallel()
	routes := map[string]bool{}
	for _, rt := range (&Server{}).Routes() {
		routes[rt.Method+" "+rt.Pattern] = true
	}
	for key := range deprecatedRoutes {
		if !routes[key] {
			t.Errorf("deprecatedRoutes names %s, which is not a route", key)
		}
	}
}

func TestETagMatches(t *testing.T) {
	t.Parallel()
	tag := etagOf([]byte(`{"id":"task_1"}`))
	for _, c := range []struct {
		header []string
		want   bool
	}{
		{nil, false},
		{[]string{tag}, true},
		{[]string{tag[2:]}, true}, // the strong form compares weakly
		{[]string{`"other", ` + tag}, true},
		{[]string{`"other"`, tag}, true},
		{[]string{"*"}, true},
		{[]string{`"other"`}, false},
		{[]string{`W/"other"`}, false},
	} {
		if got := etagMatches(c.header, tag); got != c.want {
			t.Errorf("etagMatches(%q, %s) = %v, want %v", c.header, tag, got, c.want)
		}
	}
}
