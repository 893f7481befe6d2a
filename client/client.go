// Package client is the Go SDK of the ams v1 HTTP API.
//
// Create a client with the server root and an API key, then call the typed
// methods:
//
//	c := client.New("http://127.0.0.1:8080", os.Getenv("AMS_API_KEY"))
//	reply, err := c.SendMessage(ctx, client.SendMessageParams{
//		AssistantID: "ast_123",
//		Message:     "Remind me to call Ana tomorrow at 9",
//	})
//
// Every non-2xx answer is returned as an *Error. Rate-limited (429) and
// failed (5xx) requests are retried automatically with backoff, honouring
// Retry-After. Every POST carries an Idempotency-Key (generated unless the
// caller gives one), so a retried POST never acts twice.
//
// Lists return one page; the All... methods return an iterator that walks
// every page:
//
//	for a, err := range c.AllAssistants(ctx, nil) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(a.ID, a.Name)
//	}
//
// Package github.com/amsdev/ams/client/webhook verifies the webhook
// deliveries a receiver gets.
//
// The package uses only the standard library and does not import the
// server's packages.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Version is the version of this SDK, sent in the User-Agent header as
// "ams-go/<Version>".
const Version = "0.1.0"

// Defaults of the options.
const (
	// DefaultMaxRetries is how many times a failed request is retried
	// unless WithMaxRetries says otherwise.
	DefaultMaxRetries = 3
	// DefaultTimeout bounds each attempt of a request (connecting, sending
	// and reading the whole answer) unless WithTimeout says otherwise.
	DefaultTimeout = 60 * time.Second
)

// Backoff schedule when the server gives no Retry-After.
const (
	initialBackoff = 500 * time.Millisecond
	maxBackoff     = 8 * time.Second
	// maxRetryAfter is the longest Retry-After the client waits for on its
	// own: the longest the sliding minute window makes a request wait (a
	// second of requests is counted for 61 s). Beyond it (a daily limit,
	// say) the *Error is returned at once with its RetryAfter set, for the
	// caller to decide.
	maxRetryAfter = 61 * time.Second
	// maxErrorBody bounds how much of an error answer is read.
	maxErrorBody = 1 << 20
)

// Client calls the ams v1 API. It is safe for concurrent use.
type Client struct {
	baseURL    string // server root without trailing slash, e.g. http://127.0.0.1:8080
	apiKey     string
	httpClient *http.Client
	maxRetries int
	userAgent  string
	timeout    time.Duration
	now        func() time.Time
	sleep      func(ctx context.Context, d time.Duration) error
}

// Option configures a Client in New.
type Option func(*Client)

// WithHTTPClient makes the client send its requests through hc instead of
// a client of its own. A nil hc is ignored.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.httpClient = hc
		}
	}
}

// WithMaxRetries sets how many times a failed request is retried after the
// first attempt (default DefaultMaxRetries). 0 disables retries; a
// negative n counts as 0.
func WithMaxRetries(n int) Option {
	return func(c *Client) { c.maxRetries = max(n, 0) }
}

// WithUserAgent puts ua in front of the SDK's own product token, so the
// header reads "<ua> ams-go/<Version>". Use it to name your application.
func WithUserAgent(ua string) Option {
	return func(c *Client) {
		ua = strings.TrimSpace(ua)
		if ua == "" {
			c.userAgent = "ams-go/" + Version
		} else {
			c.userAgent = ua + " ams-go/" + Version
		}
	}
}

// WithTimeout bounds each attempt of a request (default DefaultTimeout).
// An attempt that runs out of time counts as a connection error and is
// retried like one. 0 or less means no per-attempt limit; the caller's
// context still applies to the whole call, retries included.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) { c.timeout = max(d, 0) }
}

// WithClock replaces time.Now, used to read Retry-After headers given as
// an HTTP date. For tests. A nil now is ignored.
func WithClock(now func() time.Time) Option {
	return func(c *Client) {
		if now != nil {
			c.now = now
		}
	}
}

// WithSleep replaces the wait between retries. sleep must return early
// with ctx.Err() when ctx is done. Tests use it to record the waits
// instead of sleeping. A nil sleep is ignored.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) {
		if sleep != nil {
			c.sleep = sleep
		}
	}
}

// New returns a client of the server at baseURL, the server root such as
// "http://127.0.0.1:8080" (the client adds "/v1"; a baseURL that already
// ends in "/v1" is accepted too), authenticating with apiKey.
func New(baseURL, apiKey string, opts ...Option) *Client {
	base := strings.TrimRight(baseURL, "/")
	base = strings.TrimSuffix(base, "/v1")
	c := &Client{
		baseURL:    base,
		apiKey:     apiKey,
		httpClient: &http.Client{},
		maxRetries: DefaultMaxRetries,
		userAgent:  "ams-go/" + Version,
		timeout:    DefaultTimeout,
		now:        time.Now,
		sleep:      sleepContext,
	}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// RequestOption configures one call of Request by changing its headers.
type RequestOption func(header http.Header)

// WithIdempotencyKey sends key as the request's Idempotency-Key instead of
// a generated one. Reuse a key only to repeat the very same request.
func WithIdempotencyKey(key string) RequestOption {
	return func(h http.Header) {
		if key != "" {
			h.Set("Idempotency-Key", key)
		}
	}
}

// WithHeader sets a header on the request.
func WithHeader(key, value string) RequestOption {
	return func(h http.Header) { h.Set(key, value) }
}

// Request sends one API request and decodes a 2xx answer's JSON body into
// out (unless out is nil or the answer has no body). path is relative to
// the /v1 base, such as "/assistants/ast_123" or "/events?type=message.created"
// (a path already starting with "/v1/" is used as is); the caller escapes
// its parts. body, when not nil, is sent as JSON.
//
// Request is the building block of the typed methods and the way to call
// endpoints this package does not wrap yet. It retries as the package
// documentation describes, and returns an *Error for a non-2xx answer.
func (c *Client) Request(ctx context.Context, method, path string, body, out any, opts ...RequestOption) error {
	method = strings.ToUpper(method)
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("ams: %s %s: encode request body: %w", method, path, err)
		}
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	url := c.baseURL + path
	if path != "/v1" && !strings.HasPrefix(path, "/v1/") && !strings.HasPrefix(path, "/v1?") {
		url = c.baseURL + "/v1" + path
	}

	// The headers are settled once, so every attempt sends the same
	// Idempotency-Key.
	header := make(http.Header)
	header.Set("Authorization", "Bearer "+c.apiKey)
	header.Set("Accept", "application/json")
	header.Set("User-Agent", c.userAgent)
	if payload != nil {
		header.Set("Content-Type", "application/json")
	}
	for _, opt := range opts {
		opt(header)
	}
	if method == http.MethodPost && header.Get("Idempotency-Key") == "" {
		header.Set("Idempotency-Key", NewIdempotencyKey())
	}
	// A request may be sent again after a failure the server may have seen
	// only if repeating it cannot act twice.
	repeatable := header.Get("Idempotency-Key") != "" || idempotentMethod(method)

	for attempt := 0; ; attempt++ {
		retry, err := c.attempt(ctx, method, url, header, payload, out)
		if err == nil {
			return nil
		}
		if attempt >= c.maxRetries {
			return err
		}
		var wait time.Duration
		switch retry {
		case retryNo:
			return err
		case retryUnsent:
		case retryIfRepeatable:
			if !repeatable {
				return err
			}
		}
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > maxRetryAfter {
				return err
			}
			wait = apiErr.RetryAfter
		} else {
			wait = backoff(attempt)
		}
		if dl, ok := ctx.Deadline(); ok && c.now().Add(wait).After(dl) {
			return err // the caller would give up before the next attempt
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("ams: %s %s: waiting to retry: %w (last attempt: %w)", method, path, serr, err)
		}
	}
}

// retry classes of a failed attempt.
type retryClass int

const (
	retryNo           retryClass = iota // a final answer
	retryUnsent                         // the server did not act on it: retry any request
	retryIfRepeatable                   // the server may have acted: retry only if repeating is safe
)

// attempt sends the request once. It returns an error and whether it may
// be retried.
func (c *Client) attempt(ctx context.Context, method, url string, header http.Header, payload []byte, out any) (retryClass, error) {
	actx := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(actx, method, url, body)
	if err != nil {
		return retryNo, fmt.Errorf("ams: %s %s: %w", method, url, err)
	}
	req.Header = header.Clone()
	resp, err := c.httpClient.Do(req)
	if err != nil {
		return networkRetry(ctx, err), fmt.Errorf("ams: %s %s: %w", method, url, err)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if rerr != nil && ctx.Err() != nil {
			return retryNo, fmt.Errorf("ams: %s %s: read error answer: %w", method, url, rerr)
		}
		e := parseError(resp, raw, c.now())
		return errorRetry(e), e
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return networkRetry(ctx, err), fmt.Errorf("ams: %s %s: read answer: %w", method, url, err)
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return retryNo, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return retryNo, fmt.Errorf("ams: %s %s: decode answer (status %d, request %s): %w",
			method, url, resp.StatusCode, resp.Header.Get("X-Request-Id"), err)
	}
	return retryNo, nil
}

// errorRetry classifies an API error answer.
func errorRetry(e *Error) retryClass {
	switch {
	case e.StatusCode == http.StatusTooManyRequests:
		return retryUnsent // refused before it ran
	case e.StatusCode == http.StatusConflict && e.Code == "idempotency_key_in_use":
		return retryUnsent // the first attempt still runs; the retry replays its answer
	case e.StatusCode >= 500:
		return retryIfRepeatable
	}
	return retryNo
}

// networkRetry classifies a transport error: retried unless the caller's
// context ended or the error cannot go away by itself (a bad certificate).
func networkRetry(ctx context.Context, err error) retryClass {
	if ctx.Err() != nil {
		return retryNo
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return retryNo
	}
	return retryIfRepeatable
}

// idempotentMethod reports whether repeating a request of method has the
// effect of sending it once (RFC 9110 section 9.2.2).
func idempotentMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// backoff returns the wait before retry number attempt+1: 0.5 s, 1 s,
// 2 s, ... capped at 8 s, each reduced by a random jitter of up to 25 %.
func backoff(attempt int) time.Duration {
	d := maxBackoff
	if attempt < 5 {
		d = min(initialBackoff<<attempt, maxBackoff)
	}
	return d - time.Duration(mrand.Int64N(int64(d/4)+1))
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP
// date. It returns 0 when the header is absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(24*time.Hour/time.Second) {
			n = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// sleepContext waits d or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// NewIdempotencyKey returns a random key of the form "ams-go-" followed by
// 32 hex characters, as the client puts on every POST without one.
func NewIdempotencyKey() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return "ams-go-" + hex.EncodeToString(b[:])
}
