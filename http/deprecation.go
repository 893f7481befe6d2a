package http

import (
	"net/http"
	"strconv"
	"time"
)

// Deprecation marks an API operation deprecated (docs/versioning.md):
// every answer of its route, errors included, carries the Deprecation
// header (RFC 9745), and the Sunset header (RFC 8594) once a date for its
// removal is set. The operation is marked "deprecated": true in
// openapi.json as well (a test holds the two together).
type Deprecation struct {
	// Since is when the operation was deprecated: the Deprecation header,
	// "@" and its Unix time (RFC 9745, a Structured Field Date).
	Since time.Time
	// Sunset, when not zero, is when the operation may stop answering:
	// the Sunset header, an HTTP date (RFC 8594). Within v1 an operation
	// is answered until at least 6 months after Since.
	Sunset time.Time
	// Link, when not empty, is the URL of the page that tells what
	// replaces the operation: Link: <URL>; rel="deprecation" (RFC 9745,
	// section 3), and rel="sunset" (RFC 8594, section 6) when Sunset is
	// set.
	Link string
}

// deprecatedRoutes are the deprecated operations of the API, keyed
// "METHOD pattern" as the route table writes them. None is deprecated
// today; to deprecate one, add it here and set "deprecated": true on its
// operation in openapi.json, then note it in CHANGELOG.md.
var deprecatedRoutes = map[string]Deprecation{}

// deprecationOf returns the deprecation of rt: Server.Deprecated's entry,
// else deprecatedRoutes'.
func (s *Server) deprecationOf(rt Route) (Deprecation, bool) {
	key := rt.Method + " " + rt.Pattern
	if d, ok := s.Deprecated[key]; ok {
		return d, true
	}
	d, ok := deprecatedRoutes[key]
	return d, ok
}

// withDeprecation sets the deprecation headers of rt, if it is
// deprecated, on every answer of next: before authentication, so that
// a client sees them whatever its request's fate.
func (s *Server) withDeprecation(rt Route, next http.Handler) http.Handler {
	d, ok := s.deprecationOf(rt)
	if !ok {
		return next
	}
	deprecation := "@" + strconv.FormatInt(d.Since.Unix(), 10)
	var sunset, link string
	if !d.Sunset.IsZero() {
		sunset = d.Sunset.UTC().Format(http.TimeFormat)
	}
	if d.Link != "" {
		link = "<" + d.Link + `>; rel="deprecation"`
		if sunset != "" {
			link += ", <" + d.Link + `>; rel="sunset"`
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Deprecation", deprecation)
		if sunset != "" {
			h.Set("Sunset", sunset)
		}
		if link != "" {
			h.Add("Link", link)
		}
		next.ServeHTTP(w, r)
	})
}
