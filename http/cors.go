package http

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amsdev/ams"
)

// CORS (DESIGN.md, Browsers). A page of another origin may call the API
// (/v1 and the MCP endpoint, /mcp) and the OAuth token, revocation and
// registration endpoints from a browser when
// its origin is one of Server.CORSOrigins (--cors-allowed-origins), or
// when it is the origin of a redirect URI of a registered public OAuth
// client (a browser app) and the request uses that client's credentials:
// an API request authenticated by an access token of the client, a token
// or revocation request naming the client (client_id). Such an origin may
// also read the answers that hold no account's data (a request without
// valid credentials, the authorization server's and the protected
// resources' metadata, a client registration), so that the app sees its
// 401s and a browser-based MCP client can discover and register; never an answer to a request authenticated by an API
// key or another client's token (issue 26, L7: registering a public
// client does not widen the CORS policy of every account). A preflight,
// which carries no credentials, is allowed for all these origins. The
// allowed origins are an explicit list, never "*": the API's
// credentials are bearer tokens, never cookies, so a page can only use a
// token it already holds, but a list keeps the browser's same-origin
// policy for every other page. Access-Control-Allow-Credentials is never
// sent.
//
// Answers, per the Fetch standard:
//   - a preflight (OPTIONS with Origin and Access-Control-Request-Method)
//     from an allowed origin: 204 with Access-Control-Allow-Origin (the
//     origin), -Allow-Methods, -Allow-Headers and -Max-Age; from another
//     origin 403 origin_not_allowed without Access-Control-* (the browser
//     then refuses the request). A preflight never reaches the routes.
//   - any other request from an allowed origin: the route's answer with
//     Access-Control-Allow-Origin and Access-Control-Expose-Headers.
//   - /mcp also allows and exposes the headers of the MCP Streamable HTTP
//     transport (Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID).
//   - every answer of these paths carries Vary: Origin (preflights also
//     Vary: Access-Control-Request-Method, Access-Control-Request-Headers).
//
// Other paths (the account pages, /healthz, ...) get nothing.

// The CORS answer headers.
const (
	corsAllowMethods = "GET, POST, PATCH, DELETE"
	// The request headers the SDKs send beyond the CORS-safelisted ones.
	corsAllowHeaders = "Authorization, Content-Type, Idempotency-Key, Accept, If-None-Match"
	// The answer headers the SDKs and API clients read beyond the
	// CORS-safelisted ones (Content-Type, ...).
	corsExposeHeaders = "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, RateLimit-Policy, " +
		"Retry-After, Location, Idempotent-Replayed, WWW-Authenticate, Allow, ETag, Deprecation, Sunset, Link"
	// What /mcp allows and exposes besides: the headers of the MCP
	// Streamable HTTP transport an MCP client sends and reads
	// (WWW-Authenticate, with its resource_metadata, is exposed above).
	mcpAllowHeaders  = "Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID"
	mcpExposeHeaders = "Mcp-Session-Id"
	// How long a browser may keep a preflight's answer (browsers cap it:
	// Chromium at 2 h).
	corsMaxAge = "7200"
)

// How long the origins of public OAuth clients are kept (see
// publicOrigins).
const (
	// PublicOriginsMaxAge: the set is reloaded by the first request with
	// an Origin after it is this old, so a deleted client's origin is
	// refused within it.
	PublicOriginsMaxAge = 30 * time.Second
	// PublicOriginsMinAge: an origin not in the set reloads it when the
	// set is at least this old, so a client just registered (by the
	// account pages or `ams oauth-clients create` in another process) is
	// allowed within seconds, while unknown origins cost at most one query
	// per PublicOriginsMinAge.
	PublicOriginsMinAge = 2 * time.Second
)

// ParseOrigins parses the comma-separated origins of
// --cors-allowed-origins: each scheme://host[:port] with scheme http or
// https, no path, query, fragment or user information. They are returned
// in the form browsers send in the Origin header (lower case, no default
// port). "*" is refused: allowed origins are listed explicitly.
func ParseOrigins(list string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(list, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if o == "*" || o == "null" {
			return nil, fmt.Errorf("%q is not allowed: list each origin explicitly, like https://app.example.com", o)
		}
		norm, ok := OriginOf(o)
		u, err := url.Parse(o)
		if !ok || err != nil || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("%q is not an origin: want scheme://host[:port] with scheme http or https and nothing after the host or port, like https://app.example.com", o)
		}
		out = append(out, norm)
	}
	return out, nil
}

// OriginOf returns the origin of an http or https URL, as browsers send
// it in the Origin header: scheme://host[:port] in lower case, without
// the scheme's default port. Other URLs (a mobile app's custom scheme)
// have no web origin: ok is false.
func OriginOf(raw string) (origin string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" || strings.ContainsAny(host, "*") {
		return "", false
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}

// corsPath reports whether the path's answers follow the CORS policy: the
// API, the MCP endpoint and the OAuth endpoints a public client (an MCP
// client among them) calls from a browser.
func corsPath(p string) bool {
	return strings.HasPrefix(p, "/v1/") || p == MCPPath || p == "/oauth/token" || p == "/oauth/revoke" || openCORSPath(p)
}

// openCORSPath reports whether the path's answers hold no account's data
// whatever the request (the metadata documents, a client registration,
// which takes no credentials): every allowed origin may read them, a
// public client's included.
func openCORSPath(p string) bool {
	return p == "/.well-known/oauth-authorization-server" || p == protectedResourcePath || p == protectedResourcePath+MCPPath || p == "/oauth/register"
}

// corsAllowed returns the request headers a preflight of path p allows
// and the answer headers its answers expose.
func corsAllowed(p string) (allow, expose string) {
	if p == MCPPath {
		return corsAllowHeaders + ", " + mcpAllowHeaders, corsExposeHeaders + ", " + mcpExposeHeaders
	}
	return corsAllowHeaders, corsExposeHeaders
}

// withCORS applies the CORS policy (see above) to next.
func (s *Server) withCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !corsPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		preflight := r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != ""
		if preflight {
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
		}
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		allowed, clients := s.originAllowed(r.Context(), origin)
		allowHeaders, exposeHeaders := corsAllowed(r.URL.Path)
		if preflight {
			if !allowed && clients == nil {
				s.writeError(w, r, ams.Errorf(ams.EFORBIDDEN, "origin_not_allowed",
					"The origin %s may not call this API from a browser. Allowed are the origins of --cors-allowed-origins and of the redirect URIs of public OAuth clients.", origin))
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", allowHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		switch {
		case allowed:
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", exposeHeaders)
		case clients == nil:
		case openCORSPath(r.URL.Path):
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", exposeHeaders)
		case strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == MCPPath:
			// Decided when the answer starts: by then the request is
			// authenticated (or refused).
			w = &clientCORSWriter{ResponseWriter: w, r: r, origin: origin, clients: clients, expose: exposeHeaders}
		default: // /oauth/token, /oauth/revoke
			if clients[formClientID(r)] {
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Expose-Headers", exposeHeaders)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// clientCORSWriter allows a public client's origin to read an API answer
// when the request was authenticated by one of the clients (an access
// token of theirs) or by nothing; the decision is taken when the answer
// starts.
type clientCORSWriter struct {
	http.ResponseWriter
	r       *http.Request
	origin  string
	clients map[string]bool
	expose  string // Access-Control-Expose-Headers
	decided bool
}

func (w *clientCORSWriter) decide() {
	if w.decided {
		return
	}
	w.decided = true
	a := auth(w.r)
	if a == nil || a.ClientID != "" && w.clients[a.ClientID] {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", w.origin)
		h.Set("Access-Control-Expose-Headers", w.expose)
	}
}

func (w *clientCORSWriter) WriteHeader(code int) {
	w.decide()
	w.ResponseWriter.WriteHeader(code)
}

func (w *clientCORSWriter) Write(b []byte) (int, error) {
	w.decide()
	return w.ResponseWriter.Write(b)
}

// Flush flushes a stream, once the decision is taken.
func (w *clientCORSWriter) Flush() {
	w.decide()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *clientCORSWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// maxPeekForm is how much of a token or revocation request's form
// formClientID reads to find its client_id: more than any such request
// needs.
const maxPeekForm = 16 << 10

// formClientID returns the client_id of a form-encoded POST (the OAuth
// token and revocation requests of a public client, which has no secret
// and so names itself there), reading at most maxPeekForm bytes of the
// body and putting them back for the handler; "" when there is none.
func formClientID(r *http.Request) string {
	if r.Method != http.MethodPost || r.Body == nil {
		return ""
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return ""
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, maxPeekForm+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || len(head) > maxPeekForm {
		return ""
	}
	v, err := url.ParseQuery(string(head))
	if err != nil || len(v["client_id"]) != 1 {
		return ""
	}
	return v.Get("client_id")
}

// originAllowed reports whether origin (an Origin header) may call the
// API from a browser whatever the credentials (one of CORSOrigins), and
// else the public clients whose redirect URIs have that origin (nil:
// none), whose credentials it may use.
func (s *Server) originAllowed(ctx context.Context, origin string) (bool, map[string]bool) {
	for _, o := range s.CORSOrigins {
		if o == origin {
			return true, nil
		}
	}
	return false, s.public.clients(ctx, s, origin)
}

// publicOrigins caches the origins of the public OAuth clients' redirect
// URIs, so that a request with an Origin costs a map lookup: the set is
// reloaded from the store when it is older than PublicOriginsMaxAge, or
// when an origin is not in it and it is older than PublicOriginsMinAge.
// One request reloads it at a time; a failed reload keeps the last set
// (and is logged).
type publicOrigins struct {
	cur atomic.Pointer[originSet]
	mu  sync.Mutex // held while reloading
}

type originSet struct {
	loaded time.Time
	set    map[string]map[string]bool // origin -> ids of the public clients with it
}

// clients returns the public clients whose redirect URIs have origin
// (nil: none).
func (p *publicOrigins) clients(ctx context.Context, s *Server, origin string) map[string]bool {
	now := s.now()
	cur := p.cur.Load()
	if cur != nil {
		age := now.Sub(cur.loaded)
		if age < PublicOriginsMaxAge && (cur.set[origin] != nil || age < PublicOriginsMinAge) {
			return cur.set[origin]
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.cur.Load(); c != cur && c != nil { // reloaded while waiting
		return c.set[origin]
	}
	next := &originSet{loaded: now, set: map[string]map[string]bool{}}
	uris, err := s.Store.PublicRedirectURIs(context.WithoutCancel(ctx))
	if err != nil {
		s.Logger.Error("load the origins of public OAuth clients for CORS", "err", err)
		if cur != nil {
			next.set = cur.set
		}
	}
	for id, list := range uris {
		for _, u := range list {
			if o, ok := OriginOf(u); ok {
				if next.set[o] == nil {
					next.set[o] = map[string]bool{}
				}
				next.set[o][id] = true
			}
		}
	}
	p.cur.Store(next)
	return next.set[origin]
}
