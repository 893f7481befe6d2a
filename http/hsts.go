package http

import (
	"net/http"
	"strings"
)

// HSTS is the Strict-Transport-Security value every answer carries when
// the base URL (Server.BaseURL, --base-url) is https: browsers then use
// https for the host for a year, even when a link or a typed address says
// http. No includeSubDomains and no preload: other hosts of the
// operator's domain are not ams's to decide. Browsers ignore the header
// on answers that came over plain http (RFC 6797, 8.1), so it is sent
// whether TLS ends at ams or at a proxy in front of it.
const HSTS = "max-age=31536000"

// withHSTS sets Strict-Transport-Security on every answer when the base
// URL is https; otherwise it returns next unchanged.
func (s *Server) withHSTS(next http.Handler) http.Handler {
	if !strings.HasPrefix(strings.ToLower(s.BaseURL), "https://") {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", HSTS)
		next.ServeHTTP(w, r)
	})
}
