// Package mcp is ams's client of MCP servers (the Model Context Protocol),
// the servers of the integrations of provider "mcp": it connects over
// Streamable HTTP with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), lists a server's tools and
// calls them.
//
// Every exchange goes through the SSRF guard's bounded http.Client
// (package ssrf): the guard refuses internal addresses at connect time
// (loopback http only with --dev), and the client bounds the time of each
// exchange, the bytes of each answer (and of each server-sent event), and
// follows no redirect, so that the integration's headers (an
// Authorization) go to its URL only. On top of that a Client caps the
// number of tools it keeps, each tool's description and schema, and the
// result it returns. A hostile server (huge or endless answers, invalid
// JSON-RPC, a slow drip) therefore costs bounded memory and time and ends
// in an *Error that says what went wrong.
//
// Each operation is a session of its own: initialize, then tools/list or
// tools/call, then close. ams keeps no connection to a server between
// calls, so that nothing is shared between accounts or held by a server
// that went away; docs/benchmarks.md measures what that costs.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ssrf"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Options.
const (
	DefaultCallTimeout    = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxBodyBytes bounds one HTTP answer of a server (and one
	// server-sent event).
	DefaultMaxBodyBytes = 4 << 20
	// DefaultMaxTools is the most tools a server may list.
	DefaultMaxTools = 128
	// DefaultMaxResultBytes bounds the result of a call that ams keeps
	// (in the action, and so in the conversation a model sees).
	DefaultMaxResultBytes = 64 << 10
)

// Caps on what is kept of each tool a server lists.
const (
	// MaxDescription is the longest tool description kept, in bytes;
	// longer ones are cut.
	MaxDescription = 2048
	// MaxSchemaBytes is the largest input schema of a tool, encoded; a
	// tool with a larger one is refused.
	MaxSchemaBytes = 32 << 10
	// MaxToolsBytes bounds the tools kept of a server, all their names,
	// descriptions and schemas together: they are stored with the
	// integration and carried by its events.
	MaxToolsBytes = 256 << 10
)

// ProtocolVersion is the MCP version ams asks for in initialize; servers
// may answer an older one the SDK supports.
const ProtocolVersion = "2025-11-25"

// toolName is what a tool's name must be so that <integration>__<tool>
// is a valid function name for model providers (^[A-Za-z0-9_-]{1,64}$).
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Options configure a Client.
type Options struct {
	// Guard checks URLs and dials (nil: a strict Guard, no internal
	// address; --dev gives one with AllowPrivate).
	Guard *ssrf.Guard
	// CallTimeout bounds a tool call, initialize included
	// (--mcp-call-timeout; 0: DefaultCallTimeout).
	CallTimeout time.Duration
	// ConnectTimeout bounds a connect or sync: initialize and tools/list
	// (--mcp-connect-timeout; 0: DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// MaxBodyBytes bounds an HTTP answer and a server-sent event (0:
	// DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxTools is the most tools a server may list (0: DefaultMaxTools).
	MaxTools int
	// MaxResultBytes bounds the result a call returns, encoded; a larger
	// one is cut to its first text (0: DefaultMaxResultBytes).
	MaxResultBytes int
	// Logger logs what the SDK reports (nil: nothing).
	Logger *slog.Logger
}

// Client talks to MCP servers. It is safe for concurrent use.
type Client struct {
	o      Options
	guard  *ssrf.Guard
	sdk    *sdk.Client
	call   *http.Client
	listen *http.Client
}

// New returns a Client with o's settings (zero fields: the defaults).
func New(o Options) *Client {
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxTools <= 0 {
		o.MaxTools = DefaultMaxTools
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	g := o.Guard
	if g == nil {
		g = &ssrf.Guard{}
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{o: o, guard: g,
		sdk: sdk.NewClient(&sdk.Implementation{Name: "ams", Version: "1"},
			// No capabilities: ams answers no request of a server (no
			// roots, sampling or elicitation).
			&sdk.ClientOptions{Logger: logger, Capabilities: &sdk.ClientCapabilities{}}),
		call:   g.Client(ssrf.Limits{Timeout: o.CallTimeout, MaxBodyBytes: o.MaxBodyBytes}),
		listen: g.Client(ssrf.Limits{Timeout: o.ConnectTimeout, MaxBodyBytes: o.MaxBodyBytes}),
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.call.CheckRedirect, c.listen.CheckRedirect = noRedirect, noRedirect
	return c
}

// Error is why an exchange with a server failed, as a sentence for users.
type Error struct {
	// Reason says what went wrong ("the server could not be reached
	// (connection refused)").
	Reason string
	// ServerDown is set when the server did not answer as an MCP server
	// (unreachable, timed out, too large or invalid answers), as opposed
	// to a JSON-RPC error it answered: the integration's status is
	// error.
	ServerDown bool
	// Blocked is set when the URL is refused by the SSRF guard.
	Blocked bool

	err error
}

func (e *Error) Error() string { return e.Reason }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.err }

// CheckURL checks an MCP server's URL with the SSRF guard: an *Error
// naming why it is refused, or nil.
func (c *Client) CheckURL(ctx context.Context, raw string) error {
	if err := c.guard.CheckURL(ctx, raw); err != nil {
		// ServerDown: at a call, an integration whose URL is refused now
		// (its host resolves to an internal address since) is one that
		// does not work.
		return &Error{Reason: err.Error(), Blocked: errors.Is(err, ssrf.ErrBlocked), ServerDown: true, err: err}
	}
	return nil
}

// ListTools connects to the server at url with headers and returns the
// tools it lists (all pages), checked: at most MaxTools, each name
// usable in a function name, each schema a JSON object of at most
// MaxSchemaBytes, descriptions cut at MaxDescription. Tools that break
// these are refused with an *Error naming the first.
func (c *Client) ListTools(ctx context.Context, url string, headers map[string]string) ([]ams.IntegrationTool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.ConnectTimeout)
	defer cancel()
	cs, err := c.connect(ctx, c.listen, url, headers)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var out []ams.IntegrationTool
	size := 0
	params := &sdk.ListToolsParams{}
	for pages := 0; ; pages++ {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, c.classify(ctx, err, "tools/list")
		}
		for _, t := range res.Tools {
			if len(out) == c.o.MaxTools {
				return nil, &Error{Reason: fmt.Sprintf("the server lists more than %d tools", c.o.MaxTools), ServerDown: true}
			}
			tool, err := checkTool(t)
			if err != nil {
				return nil, err
			}
			if size += len(tool.Name) + len(tool.Description) + len(tool.InputSchema); size > MaxToolsBytes {
				return nil, &Error{Reason: fmt.Sprintf("the server's tools take more than %s", ssrf.Size(MaxToolsBytes)), ServerDown: true}
			}
			out = append(out, tool)
		}
		if res.NextCursor == "" {
			break
		}
		if pages > c.o.MaxTools {
			return nil, &Error{Reason: "the server's tool list does not end", ServerDown: true}
		}
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
	if out == nil {
		out = []ams.IntegrationTool{}
	}
	return out, nil
}

func checkTool(t *sdk.Tool) (ams.IntegrationTool, error) {
	if !toolName.MatchString(t.Name) {
		return ams.IntegrationTool{}, &Error{Reason: fmt.Sprintf("the server lists a tool whose name %q is not ^[A-Za-z0-9_-]{1,64}$", ams.Clip(t.Name)), ServerDown: true}
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || len(schema) == 0 || schema[0] != '{' {
		return ams.IntegrationTool{}, &Error{Reason: fmt.Sprintf("the server's tool %q has no input schema object", t.Name), ServerDown: true}
	}
	if len(schema) > MaxSchemaBytes {
		return ams.IntegrationTool{}, &Error{Reason: fmt.Sprintf("the input schema of the server's tool %q exceeds %s", t.Name, ssrf.Size(MaxSchemaBytes)), ServerDown: true}
	}
	desc := t.Description
	if len(desc) > MaxDescription {
		desc = strings.ToValidUTF8(desc[:MaxDescription], "") + "…"
	}
	return ams.IntegrationTool{Name: t.Name, Description: desc, InputSchema: schema}, nil
}

// CallTool calls tool name with args (a JSON object) on the server at url
// and returns its result, cut to MaxResultBytes. A tool that fails
// answers a result with IsError, not an error; the error is an *Error
// (ServerDown when the server did not answer as an MCP server).
func (c *Client) CallTool(ctx context.Context, url string, headers map[string]string, name string, args json.RawMessage) (*ams.MCPResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.CallTimeout)
	defer cancel()
	cs, err := c.connect(ctx, c.call, url, headers)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, c.classify(ctx, err, "tools/call")
	}
	return c.result(res)
}

// result encodes res, cut to MaxResultBytes.
func (c *Client) result(res *sdk.CallToolResult) (*ams.MCPResult, error) {
	out := &ams.MCPResult{IsError: res.IsError}
	content := res.Content
	if content == nil {
		content = []sdk.Content{}
	}
	var err error
	if out.Content, err = json.Marshal(content); err != nil {
		return nil, &Error{Reason: "the server's result could not be read", ServerDown: true, err: err}
	}
	if res.StructuredContent != nil {
		if out.StructuredContent, err = json.Marshal(res.StructuredContent); err != nil {
			return nil, &Error{Reason: "the server's structured result could not be read", ServerDown: true, err: err}
		}
	}
	if len(out.Content)+len(out.StructuredContent) <= c.o.MaxResultBytes {
		return out, nil
	}
	// Too large to keep: the beginning of its text, marked truncated.
	var text strings.Builder
	for _, ct := range content {
		if t, ok := ct.(*sdk.TextContent); ok {
			text.WriteString(t.Text)
			if text.Len() > c.o.MaxResultBytes/2 {
				break
			}
		}
	}
	s := text.String()
	if len(s) > c.o.MaxResultBytes/2 {
		s = strings.ToValidUTF8(s[:c.o.MaxResultBytes/2], "")
	}
	b, _ := json.Marshal([]map[string]string{{"type": "text", "text": s}})
	return &ams.MCPResult{Content: b, IsError: res.IsError, Truncated: true}, nil
}

// connect starts a session: initialize (and initialized) over Streamable
// HTTP, through hc with headers added, no standalone SSE stream (ams
// only asks), no retry.
func (c *Client) connect(ctx context.Context, hc *http.Client, url string, headers map[string]string) (*sdk.ClientSession, error) {
	if err := c.CheckURL(ctx, url); err != nil {
		return nil, err
	}
	withHeaders := *hc
	withHeaders.Transport = &headerTransport{base: hc.Transport, headers: headers}
	t := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &withHeaders, MaxRetries: -1,
		DisableStandaloneSSE: true, MaxEventSize: int(c.o.MaxBodyBytes)}
	cs, err := c.sdk.Connect(ctx, t, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return nil, c.classify(ctx, err, "initialize")
	}
	return cs, nil
}

// classify turns an error of the SDK into an *Error.
func (c *Client) classify(ctx context.Context, err error, step string) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	down := func(format string, args ...any) error {
		return &Error{Reason: fmt.Sprintf(format, args...), ServerDown: true, err: err}
	}
	var wire *jsonrpc.Error
	var tooLarge *ssrf.TooLargeError
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case errors.Is(err, ssrf.ErrBlocked):
		return &Error{Reason: "the server's address is a private or internal address", Blocked: true, ServerDown: true, err: err}
	case errors.As(err, &tooLarge):
		return down("the server's %s in answer to %s %s the limit of %s", tooLarge.Part, step, tooLarge.Verb(), ssrf.Size(tooLarge.Limit))
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || isTimeout(err) ||
		// The SDK wraps its transport's errors as text (%v): the client's
		// Timeout, which ends with the call's, shows only there.
		strings.Contains(err.Error(), "Client.Timeout") || strings.Contains(err.Error(), "context deadline exceeded"):
		return down("the server did not answer %s in time", step)
	case errors.As(err, &dns):
		return down("the server's host %q could not be resolved", ams.Clip(dns.Name))
	case errors.As(err, &op):
		return down("the server could not be reached (%s)", opReason(op))
	case errors.As(err, &wire) && wire.Code == codeRejected:
		// The SDK's word for an exchange its transport could not make.
		return down("the server did not answer %s as an MCP server over Streamable HTTP (%s)", step, ams.Clip(lastPart(err.Error())))
	case errors.As(err, &wire):
		if step == "initialize" {
			return down("the server refused to initialize an MCP session (%d: %s)", wire.Code, ams.Clip(wire.Message))
		}
		return &Error{Reason: fmt.Sprintf("the server answered %s with an error (%d: %s)", step, wire.Code, ams.Clip(wire.Message)), err: err}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return down("the server closed the connection during %s", step)
	}
	return down("the server did not answer %s as an MCP server over Streamable HTTP (%s)", step, ams.Clip(lastPart(err.Error())))
}

// codeRejected is the JSON-RPC code the SDK wraps its transport's
// failures in ("rejected by transport"): not the server's answer.
const codeRejected = -32005

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

func opReason(op *net.OpError) string {
	var se interface{ Unwrap() error }
	inner := op.Err
	for errors.As(inner, &se) && se.Unwrap() != nil {
		inner = se.Unwrap()
	}
	if inner == nil {
		return op.Op
	}
	return inner.Error()
}

// lastPart keeps the end of an error chain's text ("a: b: c" → "c"),
// the cause, without the SDK's and Go's wrapping (which repeats the URL).
func lastPart(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}

// headerTransport adds an integration's headers to each request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// reserved are the headers an integration may not set: the protocol's
// and the transport's own.
var reserved = map[string]bool{"Host": true, "Content-Type": true, "Content-Length": true, "Accept": true, "Accept-Encoding": true,
	"Connection": true, "Transfer-Encoding": true, "Te": true, "Trailer": true, "Upgrade": true, "Keep-Alive": true,
	"Proxy-Authorization": true, "Proxy-Connection": true, "Mcp-Session-Id": true, "Mcp-Protocol-Version": true, "Last-Event-Id": true,
	"Cookie": true}

// headerName is an HTTP token.
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")

// MaxHeaders is the most headers an integration may set; MaxHeaderValue
// the longest value.
const (
	MaxHeaders     = 8
	MaxHeaderValue = 4096
)

// CheckHeader returns why header k: v may not be set on an integration's
// requests, as a sentence, or "".
func CheckHeader(k, v string) string {
	if !headerName.MatchString(k) {
		return fmt.Sprintf("'%s' is not a valid header name", ams.Clip(k))
	}
	if reserved[http.CanonicalHeaderKey(k)] {
		return fmt.Sprintf("the header '%s' is set by ams itself", http.CanonicalHeaderKey(k))
	}
	if len(v) > MaxHeaderValue {
		return fmt.Sprintf("the value of header '%s' is longer than %d bytes", k, MaxHeaderValue)
	}
	if strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Sprintf("the value of header '%s' contains a line break", k)
	}
	return ""
}
