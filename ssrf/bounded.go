package ssrf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The bounds of [Limits] when a field is left zero.
const (
	// DefaultTimeout bounds one whole exchange: connecting, sending the
	// request, waiting for the answer and reading all of its body.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxHeaderBytes bounds a response's status line and headers
	// (Go's own default is 10 MB).
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxBodyBytes bounds the bytes of a response body read.
	DefaultMaxBodyBytes = 1 << 20
)

// ErrTooLarge is wrapped by the errors of a response whose headers or body
// exceed their [Limits]: the Client's Do for headers, the body's Read for
// the body. Use errors.Is to detect it, also through *url.Error and the
// errors of libraries that wrap their read errors.
var ErrTooLarge = errors.New("ssrf: the peer's answer is too large")

// TooLargeError is the error of a peer's answer beyond its limit. It
// matches ErrTooLarge with errors.Is.
type TooLargeError struct {
	// Part is what exceeded the limit: "headers", "body" or (for a
	// connection of DialBounded) "answers".
	Part string
	// Limit is the limit, in bytes.
	Limit int64
}

// Error says what exceeded which limit, as in "ssrf: the peer's body
// exceeds the limit of 8 MiB".
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("ssrf: the peer's %s %s the limit of %s", e.Part, e.Verb(), Size(e.Limit))
}

// Verb is "exceeds" or "exceed", as Part is singular or plural.
func (e *TooLargeError) Verb() string {
	if e.Part == "body" {
		return "exceeds"
	}
	return "exceed"
}

// Is makes the error match ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Limits bound what ams reads from a peer in one exchange, whatever the
// peer sends. Every HTTP client that talks to a peer is made by
// [Guard.Client] with the Limits of its use, so that none can forget one.
type Limits struct {
	// Timeout bounds the whole exchange, redirects included: from
	// connecting to the last byte of the body read (http.Client's
	// Timeout), so that a peer that trickles its answer a byte at a time
	// is cut off too. 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxHeaderBytes bounds the response's status line and headers; more
	// fails the request with an error wrapping ErrTooLarge. 0 means
	// DefaultMaxHeaderBytes.
	MaxHeaderBytes int64
	// MaxBodyBytes bounds the response body's bytes as the caller reads
	// them, after the transparent gzip decompression of Go's transport
	// (so a gzip bomb is cut off at MaxBodyBytes decompressed): reading
	// beyond fails with an error wrapping ErrTooLarge. A caller that wants
	// an excerpt only reads less. 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return l
}

// Client returns an HTTP client for requests to peers: it dials through
// the Guard ([Guard.DialContext]: internal addresses refused, unless
// AllowPrivate), never uses a proxy, and bounds every response by l:
// header bytes, body bytes (decompressed) and the time of the whole
// exchange. Redirects are followed as http.Client does (at most 10);
// set CheckRedirect on the result to refuse or limit them.
//
// This is the one constructor of outbound HTTP clients in ams (webhook
// deliveries, CalDAV, the LLM provider); [Operator] gives the Guard for
// destinations the operator configured.
func (g *Guard) Client(l Limits) *http.Client {
	l = l.withDefaults()
	t := g.transport()
	t.ResponseHeaderTimeout = l.Timeout
	t.MaxResponseHeaderBytes = l.MaxHeaderBytes
	return &http.Client{
		Transport: &boundedTransport{t: t, limits: l},
		Timeout:   l.Timeout,
	}
}

// WithoutKeepAlives returns a copy of c, a client of [Guard.Client] (or
// any client on an *http.Transport), whose connections are not kept
// alive: each request dials a new one, through the same guard and with the
// same bounds. A client of another kind is returned as it is.
func WithoutKeepAlives(c *http.Client) *http.Client {
	f := *c
	switch t := c.Transport.(type) {
	case *boundedTransport:
		nt := t.t.Clone()
		nt.DisableKeepAlives = true
		f.Transport = &boundedTransport{t: nt, limits: t.limits}
	case *http.Transport:
		nt := t.Clone()
		nt.DisableKeepAlives = true
		f.Transport = nt
	default:
		return c
	}
	return &f
}

// Operator returns the Guard for destinations the operator configured
// rather than users (the LLM provider, the SMTP relay): it refuses no
// address, since such a server is often on loopback or the private
// network, but what it dials is bounded all the same ([Guard.Client],
// [Guard.DialBounded]).
func Operator() *Guard { return &Guard{AllowPrivate: true} }

// boundedTransport applies Limits to the responses of t.
type boundedTransport struct {
	t      *http.Transport
	limits Limits
}

func (b *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.t.RoundTrip(req)
	if err != nil {
		if headerTooLarge(err) {
			return nil, &TooLargeError{Part: "headers", Limit: b.limits.MaxHeaderBytes}
		}
		return nil, err
	}
	resp.Body = &cappedBody{rc: resp.Body, left: b.limits.MaxBodyBytes, limit: b.limits.MaxBodyBytes}
	return resp, nil
}

// CloseIdleConnections closes the transport's idle connections (called by
// http.Client's CloseIdleConnections).
func (b *boundedTransport) CloseIdleConnections() { b.t.CloseIdleConnections() }

// headerTooLarge reports whether err is net/http's refusal of response
// headers beyond MaxResponseHeaderBytes (HTTP/1 or HTTP/2), which has no
// exported type.
func headerTooLarge(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "server response headers exceeded") ||
		strings.Contains(msg, "header list larger than") // HTTP/2
}

// cappedBody fails reads past limit bytes.
type cappedBody struct {
	rc          io.ReadCloser
	left, limit int64
	err         error
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	if int64(n) > c.left {
		n = int(c.left)
		c.left = 0
		c.err = &TooLargeError{Part: "body", Limit: c.limit}
		return n, c.err
	}
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) Close() error { return c.rc.Close() }

// Size formats a byte count for messages: "64 KiB", "8 MiB".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ConnLimits bound a connection that carries one exchange of a line
// protocol, such as an SMTP session: whatever the peer sends, ams reads at
// most MaxReadBytes from it and uses it for at most Timeout.
type ConnLimits struct {
	// Timeout bounds the connection's whole life from the dial: a
	// deadline the user of the connection sets later than that is brought
	// forward to it. 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxReadBytes bounds the bytes read from the peer in total
	// (including those of a TLS handshake); reading beyond fails with an
	// error wrapping ErrTooLarge. 0 means DefaultMaxBodyBytes.
	MaxReadBytes int64
}

// DialBounded returns a dial function (net.Dialer.DialContext's
// signature) that connects through [Guard.DialContext] and bounds each
// connection by l. It is the dialer of the SMTP client.
func (g *Guard) DialBounded(l ConnLimits) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxReadBytes <= 0 {
		l.MaxReadBytes = DefaultMaxBodyBytes
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		end := time.Now().Add(l.Timeout)
		ctx, cancel := context.WithDeadline(ctx, end)
		defer cancel()
		conn, err := g.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		bc := &boundedConn{Conn: conn, end: end, left: l.MaxReadBytes, limit: l.MaxReadBytes}
		if err := conn.SetDeadline(end); err != nil {
			conn.Close()
			return nil, err
		}
		return bc, nil
	}
}

// boundedConn is a connection of DialBounded.
type boundedConn struct {
	net.Conn
	end time.Time

	mu          sync.Mutex
	left, limit int64
}

func (c *boundedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	left := c.left
	c.mu.Unlock()
	if left <= 0 {
		return 0, &TooLargeError{Part: "answers", Limit: c.limit}
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.left -= int64(n)
	c.mu.Unlock()
	return n, err
}

func (c *boundedConn) clamp(t time.Time) time.Time {
	if t.IsZero() || t.After(c.end) {
		return c.end
	}
	return t
}

func (c *boundedConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *boundedConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.clamp(t)) }
func (c *boundedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }
