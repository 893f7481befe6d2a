package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/clientaddr"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/tracing"
	"github.com/amsdev/ams/webhook"
)

// reqState is what the middleware learns about a request: its id and,
// once authenticated, its caller. One value in the context, set once, so
// that authentication does not clone the request again.
type reqState struct {
	id   string
	auth *ams.Auth
	resp *statusWriter   // the answer as written to the connection
	base context.Context // the request's context without its deadline (withDeadline)
	list ams.ListParams  // a list's page, read by the route's prelude (listOf)
}

type reqStateKey struct{}

func stateOf(ctx context.Context) *reqState {
	st, _ := ctx.Value(reqStateKey{}).(*reqState)
	if st == nil {
		return &reqState{}
	}
	return st
}

func requestID(ctx context.Context) string { return stateOf(ctx).id }

// auth returns the authenticated caller of r.
func auth(r *http.Request) *ams.Auth { return stateOf(r.Context()).auth }

// listOf returns the page a list route was asked for: limit, after,
// before and order, read and checked by the route's prelude.
func listOf(r *http.Request) ams.ListParams { return stateOf(r.Context()).list }

// statusWriter records the status code written, for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withRequestID gives every request an id (X-Request-Id on the answer)
// and its client address (clientaddr, by TrustedProxies, kept in the
// context for the throttles and the log), recovers panics into a 500,
// and writes one access-log line.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := ams.NewID(ams.PrefixRequest)
		w.Header().Set("X-Request-Id", id)
		sw := &statusWriter{ResponseWriter: w}
		st := &reqState{id: id, resp: sw}
		client, addrErr := clientaddr.Resolver{Proxies: s.TrustedProxies, Header: s.ClientAddressHeader}.Client(r)
		ctx, span := tracing.Server(r, id) // the request's span (nil while tracing is off)
		r = r.WithContext(context.WithValue(clientaddr.With(ctx, client), reqStateKey{}, st))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.writeError(sw, r, fmt.Errorf("panic: %v", p))
			}
			if s.Metrics != nil {
				s.Metrics.ObserveRequest(r.Pattern, r.Method, sw.status, time.Since(start))
			}
			s.Logger.LogAttrs(r.Context(), levelFor(sw.status), "request",
				slogString("request_id", id), slogString("method", r.Method), slogString("path", r.URL.Path),
				slogInt("status", sw.status), slogDuration("duration", time.Since(start)),
				slogString("account", accountOf(st)), slogString("client", client))
			span.End(r.Pattern, sw.status, accountOf(st))
		}()
		if addrErr != nil {
			s.refuseMixed(sw, r, client)
			return
		}
		next.ServeHTTP(sw, r)
	})
}

func accountOf(st *reqState) string {
	if st.auth != nil {
		return st.auth.User.ID
	}
	return ""
}

// wrap turns an error-returning handler into an http.Handler.
func (s *Server) wrap(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// endpoint wraps a route's handler with authentication, rate limiting, the
// permission check, body checks, idempotency, and the ETag and
// deprecation headers.
//
// The request runs under a deadline (withDeadline).
func (s *Server) endpoint(rt Route) http.Handler {
	// The conventions of docs/versioning.md: an ETag on single records
	// (etag.go), the deprecation headers (deprecation.go).
	rt.Handler = withETag(rt)
	return s.withDeprecation(rt, s.withDeadline(rt, s.wrap(func(w http.ResponseWriter, r *http.Request) error {
		if rt.Permissions == nil {
			return rt.Handler(w, r)
		}
		auth, err := s.authorize(w, r)
		if err != nil {
			return err
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// The events of the request's changes name it (ams.EventRequest).
			er := &ams.EventRequest{ID: requestID(r.Context())}
			if key := r.Header.Get("Idempotency-Key"); key != "" && r.Method == http.MethodPost {
				er.IdempotencyKey = &key
			}
			r = r.WithContext(ams.WithRequest(r.Context(), er))
		}
		if !auth.Permissions.Allows(rt.Permissions...) {
			scope := make([]string, len(rt.Permissions))
			for i, p := range rt.Permissions {
				scope[i] = string(p)
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s"`, strings.Join(scope, " ")))
			return ams.Errorf(ams.EFORBIDDEN, "insufficient_scope",
				"This request needs one of these permissions: %s. The credential has: %s.", strings.Join(scope, ", "), auth.Permissions.String())
		}
		if err := checkText(r, rt.Pattern); err != nil {
			return err
		}
		if r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == http.MethodPut {
			if err := checkBody(r); err != nil {
				return err
			}
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		}
		if key := r.Header.Get("Idempotency-Key"); key != "" && r.Method == http.MethodPost {
			return s.idempotent(w, r, auth, key, rt)
		}
		return rt.Handler(w, r)
	})))
}

// Routes whose requests wait for a peer (an assistant's reply, a CalDAV
// server) get Server.UpstreamTimeout beside Server.RequestTimeout; a
// stream's deadline bounds only what precedes it.
var (
	upstreamRoutes = map[string]bool{"POST /v1/messages": true, "POST /v1/assistants/{id}/actions": true,
		"POST /v1/integrations": true, "POST /v1/integrations/{id}/sync": true}
	streamRoutes = map[string]bool{"GET /v1/turns/{id}/events": true}
	// The routes that run or follow a turn hold one of the account's
	// turn slots (withTurnSlot) from before their prelude.
	turnRoutes = map[string]bool{"POST /v1/messages": true, "GET /v1/turns/{id}/events": true}
)

// withDeadline runs next under the deadline of rt's requests
// (Server.RequestTimeout): when it runs out, what the request waits for —
// a database that does not answer, a connection from the pool — gives
// up, and writeError answers 503 request_timeout. A stream's handler
// runs without it (streamed): the stream lasts as long as its turn.
func (s *Server) withDeadline(rt Route, next http.Handler) http.Handler {
	if s.RequestTimeout <= 0 || rt.Permissions == nil {
		return next
	}
	limit := s.RequestTimeout
	if upstreamRoutes[rt.Method+" "+rt.Pattern] {
		limit += s.UpstreamTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), limit)
		defer cancel()
		stateOf(r.Context()).base = r.Context()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// streamed returns h run without the request's deadline (withDeadline).
func streamed(h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if base := stateOf(r.Context()).base; base != nil {
			r = r.WithContext(base)
		}
		return h(w, r)
	}
}

// checkText refuses a request whose path parameters (the {name}s of
// pattern) or query parameters (names or values) are not valid text
// (ams.ValidText: UTF-8 without NUL), with 400 invalid_encoding naming
// the parameter, before any handler or store sees them. The JSON body is
// checked by decodeJSON.
func checkText(r *http.Request, pattern string) error {
	if name, bad := ams.InvalidPathValue(pattern, r.PathValue); bad {
		return ams.ParamError("invalid_encoding", name, "The path parameter '%s' is not valid UTF-8 or holds a NUL character.", name)
	}
	if name, bad := ams.InvalidValue(queryOf(r)); bad {
		return ams.ParamError("invalid_encoding", name, "The query parameter '%s' is not valid UTF-8 or holds a NUL character.", name)
	}
	return nil
}

// queryOf returns r's query parameters for reading: nil, which reads as
// empty, when there are none (most GETs), without parsing or allocating.
func queryOf(r *http.Request) url.Values {
	if r.URL.RawQuery == "" {
		return nil
	}
	return r.URL.Query()
}

// checkBody refuses bodies that are too large or not JSON.
func checkBody(r *http.Request) error {
	if r.ContentLength > MaxBodyBytes {
		return ams.Errorf(ams.ETOOLARGE, "request_too_large", "The request body is larger than %d bytes.", MaxBodyBytes)
	}
	if r.ContentLength == 0 {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return ams.Errorf(ams.EUNSUPPORTED, "unsupported_media_type",
			"Request bodies must be JSON with Content-Type: application/json (got %q).", ct)
	}
	return nil
}

// authenticate resolves the bearer credential of r, through the cache of
// authenticated credentials (authcache.go).
func (s *Server) authenticate(r *http.Request) (*ams.Auth, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, ams.Errorf(ams.EUNAUTHENTICATED, "missing_credentials",
			"No credentials were given. Send an API key or access token as 'Authorization: Bearer <token>'.")
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, ams.Errorf(ams.EUNAUTHENTICATED, "invalid_authorization_header",
			"The Authorization header must have the form 'Bearer <token>'.")
	}
	if strings.HasPrefix(token, ams.PrefixAccessToken) && s.Tokens != nil {
		return s.authenticateSecret(r.Context(), token, true)
	}
	if !strings.HasPrefix(token, ams.PrefixSecretKey) {
		return nil, ams.Errorf(ams.EUNAUTHENTICATED, "invalid_api_key", "The API key or token is not valid.")
	}
	return s.authenticateSecret(r.Context(), token, false)
}

// authorize authenticates r, keeps its caller in the request's state, and
// counts it against the caller's rate limits (rateLimit): what every
// authenticated request of /v1 and /mcp goes through first.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (*ams.Auth, error) {
	auth, err := s.authenticate(r)
	if err != nil {
		return nil, err
	}
	stateOf(r.Context()).auth = auth
	if err := s.rateLimit(w, r, auth); err != nil {
		return nil, err
	}
	return auth, nil
}

// touch records a key's use at most once a minute per key and process, so
// that last_used_at costs no write on most requests.
func (s *Server) touch(ctx context.Context, keyID string, now time.Time) {
	minute := now.Unix() / 60
	if prev, ok := s.touched.Load(keyID); ok && prev.(int64) == minute {
		return
	}
	s.touched.Store(keyID, minute)
	if err := s.Records.TouchKey(context.WithoutCancel(ctx), keyID, now); err != nil {
		s.Logger.Warn("record key use", "key", keyID, "err", err)
	}
}

// rateLimit counts the request against the account's limits (the rule
// of ratelimit.Gate, which the account pages share) and sets the
// rate-limit headers; over a limit it answers 429 with Retry-After.
func (s *Server) rateLimit(w http.ResponseWriter, r *http.Request, auth *ams.Auth) error {
	now := s.now()
	limits := auth.User.Limits()
	d, err := ratelimit.Gate{Limiter: s.Limiter, Usage: s.Usage}.Take(r.Context(), auth.User, now)
	if err != nil && ams.ErrorKindOf(err) != ams.ERATELIMIT {
		return err
	}
	h := w.Header()
	setRateLimitHeaders(h, limits, d.Tightest(), now)
	if err != nil { // refused
		h.Set("Retry-After", strconv.FormatInt(ratelimit.RetryAfter(d, now), 10))
		return err
	}
	return nil
}

// setRateLimitHeaders sets the rate-limit headers of a decision whose
// tightest window is t, for an account with limits: X-RateLimit-Limit,
// -Remaining and -Reset, RateLimit-Policy and RateLimit. This runs on
// every request, so the values are written into one buffer and made one
// string, the header slices share one array, and the keys are set
// directly in canonical form: two allocations instead of a dozen.
func setRateLimitHeaders(h http.Header, limits ams.Limits, t ams.RateWindow, now time.Time) {
	var buf [160]byte
	b := buf[:0]
	var end [5]int
	b = strconv.AppendInt(b, int64(t.Limit), 10)
	end[0] = len(b)
	b = strconv.AppendInt(b, int64(t.Remaining), 10)
	end[1] = len(b)
	b = strconv.AppendInt(b, ceilUnix(t.Reset), 10)
	end[2] = len(b)
	b = append(b, `"minute";q=`...)
	b = strconv.AppendInt(b, int64(limits.PerMinute), 10)
	b = append(b, `;w=60, "day";q=`...)
	b = strconv.AppendInt(b, int64(limits.PerDay), 10)
	b = append(b, `;w=86400`...)
	end[3] = len(b)
	b = append(b, '"')
	b = append(b, t.Name...)
	b = append(b, `";r=`...)
	b = strconv.AppendInt(b, int64(t.Remaining), 10)
	b = append(b, `;t=`...)
	b = strconv.AppendInt(b, secondsUntil(now, t.Reset), 10)
	end[4] = len(b)
	all := string(b)
	v := make([]string, 5)
	start := 0
	for i, e := range end {
		v[i] = all[start:e]
		start = e
	}
	h["X-Ratelimit-Limit"] = v[0:1:1]
	h["X-Ratelimit-Remaining"] = v[1:2:2]
	h["X-Ratelimit-Reset"] = v[2:3:3]
	h["Ratelimit-Policy"] = v[3:4:4]
	h["Ratelimit"] = v[4:5:5]
}

func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// secondsUntil returns whole seconds from now until t, rounded up, at
// least 1 when t is in the future.
func secondsUntil(now, t time.Time) int64 {
	d := t.Sub(now)
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// recorder captures a response so that it can be stored for idempotent
// replay while it is also written to the client.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	failed bool // a streamed answer (status 200) that ended in an error event
}

// Unwrap lets http.ResponseController reach the underlying writer (to
// flush a streamed answer).
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// ownKeys are the routes whose service keeps the Idempotency-Key with
// its own record, committed with the change: POST /v1/messages stores it
// on the turn (messaging), which a retry resumes. Their requests do not
// carry ams.IdempotentRequest.
var ownKeys = map[string]bool{"/v1/messages": true}

// storedAnswers are the POSTs whose answer is stored with the key in the
// transaction of their change, replayed should the process die before it
// stores the answer it gave (ams.IdempotentRequest.Answer): made from an
// event the change emits (its data is the record as the API shows it) or
// from the record the route's service keeps (ams.KeepAnswer; with the
// secret it shows once, ams.SecretAnswer, sealed at rest like every kept
// answer). The body holds the same fields and values as the answer given
// (in another order when made from an event: its data is an object).
//
// rerunAnswers are the POSTs that do again what they did and answer with
// the record as it is: a retry after such a crash runs them again
// (cancelling a turn that has ended answers it unchanged; a sync syncs
// again). POST /v1/messages keeps its key on its turn (ownKeys).
var storedAnswers = map[string]answerFunc{
	"/v1/tasks":                        fromEvent(ams.EventTaskCreated, http.StatusCreated, "/v1/tasks/"),
	"/v1/tasks/{id}/complete":          fromEvent(ams.EventTaskCompleted, http.StatusOK, ""),
	"/v1/calendar/events":              fromEvent(ams.EventEventCreated, http.StatusCreated, "/v1/calendar/events/"),
	"/v1/calendar/events/{id}/restore": fromEvent(ams.EventEventRestored, http.StatusOK, ""),
	"/v1/integrations":                 fromEvent(ams.EventIntegrationConnected, http.StatusCreated, "/v1/integrations/"),
	"/v1/keys/{id}/revoke":             fromEvent(ams.EventAPIKeyRevoked, http.StatusOK, ""),
	"/v1/assistants": fromRecord(http.StatusCreated, func(a *ams.Assistant) (any, string) {
		return a, "/v1/assistants/" + a.ID
	}),
	"/v1/conversations": fromRecord(http.StatusCreated, func(c *ams.Conversation) (any, string) {
		return c, "/v1/conversations/" + c.ID
	}),
	"/v1/assistants/{id}/actions": fromRecord(http.StatusCreated, func(a *ams.Action) (any, string) {
		return a, "/v1/assistants/" + a.AssistantID + "/actions/" + a.ID
	}),
	"/v1/webhooks": fromRecord(http.StatusCreated, func(w *ams.Webhook) (any, string) {
		return w, "/v1/webhooks/" + w.ID
	}),
	"/v1/webhooks/{id}/ping": fromRecord(http.StatusAccepted, func(e *ams.Event) (any, string) {
		if e.Type != ams.EventWebhookPing {
			return nil, ""
		}
		return e, ""
	}),
	"/v1/events/trigger": fromRecord(http.StatusCreated, func(e *ams.Event) (any, string) {
		if e.Type == ams.EventWebhookPing {
			return nil, ""
		}
		return e, "/v1/events/" + e.ID
	}),
	"/v1/webhooks/{id}/recover": fromRecord(http.StatusOK, func(r *webhook.Recovery) (any, string) { return r, "" }),
	"/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver": fromRecord(http.StatusAccepted, func(d *ams.Delivery) (any, string) {
		return redeliveryOf(d), ""
	}),
	"/v1/keys": fromSecret(http.StatusCreated, func(s *Server, _ *http.Request, k *ams.APIKey, secret string) (any, string) {
		return createdKey{APIKeyRecord: k.Record(s.now()), Secret: secret}, "/v1/keys/" + k.ID
	}),
	"/v1/oauth/clients": fromSecret(http.StatusCreated, func(_ *Server, _ *http.Request, c *ams.OAuthClient, secret string) (any, string) {
		return withSecret(c, secret), "/v1/oauth/clients/" + c.ID
	}),
	"/v1/oauth/clients/{id}/rotate_secret": fromSecret(http.StatusOK, func(_ *Server, _ *http.Request, c *ams.OAuthClient, secret string) (any, string) {
		return withSecret(c, secret), ""
	}),
	"/v1/calendar/feed": fromSecret(http.StatusCreated, func(s *Server, r *http.Request, in *ams.Integration, token string) (any, string) {
		return s.feedAnswer(r, in, token), "/v1/integrations/" + in.ID
	}),
}

var rerunAnswers = map[string]bool{
	"/v1/turns/{id}/cancel":      true,
	"/v1/messages/{id}/cancel":   true,
	"/v1/integrations/{id}/sync": true,
}

// answerFunc makes a route's stored answer to request r from a value the
// store offers (ams.IdempotentRequest.Answer), or returns nil for a value
// the route does not answer with.
type answerFunc func(s *Server, r *http.Request, v any) []byte

// fromEvent answers with the data of the change's event of type typ, with
// status and a Location of prefix and the record's id (prefix "": none).
func fromEvent(typ string, status int, prefix string) answerFunc {
	return func(_ *Server, _ *http.Request, v any) []byte {
		e, ok := v.(*ams.Event)
		if !ok || e.Type != typ {
			return nil
		}
		loc := ""
		if id, _ := e.Data["id"].(string); prefix != "" && id != "" {
			loc = prefix + id
		}
		return storedAnswer(status, e.Data, loc, false)
	}
}

// fromRecord answers with status and what show makes of the record of
// type T its service keeps: the body and its Location ("" for none); a
// nil body is no answer.
func fromRecord[T any](status int, show func(T) (any, string)) answerFunc {
	return func(_ *Server, _ *http.Request, v any) []byte {
		rec, ok := v.(T)
		if !ok {
			return nil
		}
		body, loc := show(rec)
		if body == nil {
			return nil
		}
		return storedAnswer(status, body, loc, false)
	}
}

// fromSecret answers, as fromRecord, with what show makes of the record
// of type T and the secret its service keeps (ams.SecretAnswer); an
// answer with a secret says Cache-Control: no-store, as the handler's.
func fromSecret[T any](status int, show func(s *Server, r *http.Request, rec T, secret string) (any, string)) answerFunc {
	return func(s *Server, r *http.Request, v any) []byte {
		sa, ok := v.(*ams.SecretAnswer)
		if !ok {
			return nil
		}
		rec, ok := sa.Record.(T)
		if !ok {
			return nil
		}
		body, loc := show(s, r, rec, sa.Secret)
		return storedAnswer(status, body, loc, sa.Secret != "")
	}
}

// storedAnswer encodes an answer of status with body, as writeJSON does,
// its Location (if any) and, when noStore, Cache-Control: no-store.
func storedAnswer(status int, body any, location string, noStore bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as writeJSON
	if enc.Encode(body) != nil {
		return nil
	}
	saved := storedResponse{Status: status, Body: buf.Bytes(), Header: map[string]string{"Content-Type": "application/json"}}
	if location != "" {
		saved.Header["Location"] = location
	}
	if noStore {
		saved.Header["Cache-Control"] = "no-store"
	}
	return mustJSON(saved)
}

// idempotent runs the route's handler once per (account, Idempotency-Key):
// a repeat with the same method, path and body replays the stored
// answer; with another body it is 409 idempotency_key_reused, and while
// the first is still running 409 idempotency_key_in_use (as Stripe
// does: the client retries later).
//
// The request carries its key in its context (ams.IdempotentRequest):
// the store's transaction that commits the change marks the key's record
// done with it (sqlstore/keyed.go), so a crash after the change never lets
// a retry make it again. The answer is stored right after the commit,
// whatever its status, as the client got it; should the process die in
// between, a retry replays the answer stored in the transaction
// (storedAnswers) or runs the request again (rerunAnswers); only a record
// kept by an older version, or whose sealed answer no longer opens, is
// answered 409 idempotency_key_answer_lost. A request
// that committed nothing and failed is forgotten (the key released): it
// changed nothing and may be retried with the same key.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, auth *ams.Auth, key string, rt Route) error {
	if len(key) > 255 || strings.IndexFunc(key, func(c rune) bool { return c < 0x21 || c > 0x7e }) >= 0 {
		return &ams.Error{Kind: ams.EINVALID, Code: "parameter_invalid", Param: "Idempotency-Key",
			Message: "The Idempotency-Key header must be 1 to 255 printable ASCII characters."}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return bodyReadError(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.New()
	fmt.Fprintf(sum, "%s %s\n", r.Method, r.URL.RequestURI())
	sum.Write(body)
	rec := &ams.IdempotencyRecord{UserID: auth.User.ID, Key: key, RequestHash: hex.EncodeToString(sum.Sum(nil)), CreatedAt: s.now()}
	old, err := s.Records.BeginIdempotent(r.Context(), rec)
	if err != nil {
		return err
	}
	rerun := false
	if old != nil {
		if !old.Done || old.Response != nil || !rerunAnswers[rt.Pattern] || !ams.SecretsEqual(old.RequestHash, rec.RequestHash) {
			return replay(w, key, rec, old)
		}
		// Its answer was lost: run it again, and keep this answer.
		rerun = true
	}
	req := &ams.IdempotentRequest{UserID: rec.UserID, Key: key, RequestHash: rec.RequestHash}
	if a, ok := storedAnswers[rt.Pattern]; ok {
		req.Answer = func(v any) []byte { return a(s, r, v) }
	}
	if !ownKeys[rt.Pattern] && !rerun {
		r = r.WithContext(ams.WithIdempotentRequest(r.Context(), req))
	}
	rw := &recorder{ResponseWriter: w}
	herr := rt.Handler(rw, r)
	if herr != nil {
		s.writeError(rw, r, herr)
	}
	ctx := context.WithoutCancel(r.Context())
	// An answer that shows a secret once (Cache-Control: no-store: a new
	// API key, an OAuth client's secret, a calendar feed URL) is kept as
	// any other, sealed at rest (IdempotencyStore): a retry with the key
	// shows the same secret instead of making another.
	ok := !rw.failed && rw.status >= 200
	switch {
	case rerun:
		// The record stays done: keep the answer when there is one.
		if ok && rw.status < 300 {
			rec.Done, rec.Response = true, mustJSON(savedAnswer(rw, w))
			if err := s.Records.FinishIdempotent(ctx, rec); err != nil {
				s.Logger.Error("store idempotent response", "request_id", requestID(ctx), "err", err)
			}
		}
	case ok && (req.Committed() || rw.status < 300):
		rec.Done, rec.Response = true, mustJSON(savedAnswer(rw, w))
		if err := s.Records.FinishIdempotent(ctx, rec); err != nil {
			s.Logger.Error("store idempotent response", "request_id", requestID(ctx), "err", err)
		}
	default:
		if err := s.Records.ReleaseIdempotent(ctx, auth.User.ID, key); err != nil {
			s.Logger.Error("release idempotency key", "request_id", requestID(ctx), "err", err)
		}
	}
	return nil
}

// savedAnswer is the answer rw recorded, as a key keeps it.
func savedAnswer(rw *recorder, w http.ResponseWriter) storedResponse {
	saved := storedResponse{Status: rw.status, Body: rw.body.Bytes(),
		Header: map[string]string{"Content-Type": w.Header().Get("Content-Type")}}
	if loc := w.Header().Get("Location"); loc != "" {
		saved.Header["Location"] = loc
	}
	if cc := w.Header().Get("Cache-Control"); cc != "" {
		saved.Header["Cache-Control"] = cc
	}
	return saved
}

// replay answers a request whose key has a record: the stored answer,
// or the 409 that says why there is none to give.
func replay(w http.ResponseWriter, key string, rec, old *ams.IdempotencyRecord) error {
	switch {
	case !ams.SecretsEqual(old.RequestHash, rec.RequestHash):
		return ams.Errorf(ams.ECONFLICT, "idempotency_key_reused",
			"Idempotency-Key '%s' was used with another request; use a new key for a new request.", key)
	case !old.Done:
		return ams.Errorf(ams.ECONFLICT, "idempotency_key_in_use",
			"A request with Idempotency-Key '%s' is still being processed; retry later.", key)
	case old.Response == nil:
		return ams.Errorf(ams.ECONFLICT, "idempotency_key_answer_lost",
			"The request with Idempotency-Key '%s' was carried out, but the server stopped before keeping its answer; "+
				"it will not be carried out again. Find its result with a GET (GET /v1/events lists the changes); "+
				"use a new key for a new request.", key)
	}
	var saved storedResponse
	if err := json.Unmarshal(old.Response, &saved); err != nil || saved.Status < 200 || saved.Status > 599 {
		return fmt.Errorf("stored response of idempotency key %q: %w", key, errors.Join(err, errors.New("not a stored response")))
	}
	for k, v := range saved.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(saved.Status)
	_, err := w.Write(saved.Body)
	return err
}

// storedResponse is what an idempotency key replays: the first answer's
// status, the headers a client reads (Content-Type, Location) and body.
// It is kept as JSON in ams.IdempotencyRecord.Response.
type storedResponse struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header"`
	Body   []byte            `json:"body"`
}

// mustJSON encodes v, a value of this package that always encodes.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("http: encode " + err.Error())
	}
	return b
}

// bodyReadError maps an error reading the request body.
func bodyReadError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return ams.Errorf(ams.ETOOLARGE, "request_too_large", "The request body is larger than %d bytes.", MaxBodyBytes)
	}
	return ams.Errorf(ams.EINVALID, "invalid_body", "The request body could not be read.")
}

// errMixedAddress answers a request from a trusted proxy that carries
// both Forwarded and X-Forwarded-For while no --client-address-header is
// named (clientaddr.ErrMixedHeaders).
var errMixedAddress = &ams.Error{Kind: ams.EINVALID, Code: "client_address_ambiguous",
	Message: "The request carries both a Forwarded and an X-Forwarded-For header, so its client address cannot be told. " +
		"Send neither: the load balancer sets the one it uses."}

// refuseMixed refuses a request whose client address cannot be told
// (errMixedAddress, 400), and logs a warning the first time, so that the
// operator names the header (--client-address-header).
func (s *Server) refuseMixed(w http.ResponseWriter, r *http.Request, peer string) {
	if s.mixedWarned.CompareAndSwap(false, true) {
		s.Logger.Warn("refused a request carrying both Forwarded and X-Forwarded-For from a trusted proxy: "+
			"set --client-address-header to the one header your load balancer sets (refusals after this one are not logged as warnings)",
			"request_id", requestID(r.Context()), "proxy", peer)
	}
	s.writeError(w, r, errMixedAddress)
}
