// Package tracing exports OpenTelemetry traces of ams over OTLP/HTTP:
// a span for each API request, turn, engine call, tool call, store
// transaction, webhook claim and delivery attempt (docs/operations.md).
//
// Tracing is off until Setup is given an endpoint. While it is off every
// function here returns at once without allocating: Start returns its
// context unchanged and a span that does nothing, so that the code paths
// that call it cost what they cost before (TestOffAllocatesNothing).
package tracing

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Attribute keys of ams's spans.
const (
	KeyAccount   = "ams.account_id"
	KeyTurn      = "ams.turn_id"
	KeyEvent     = "ams.event_id"
	KeyRequest   = "ams.request_id"
	KeyWebhook   = "ams.webhook_id"
	KeyDelivery  = "ams.delivery_id"
	KeyAttempt   = "ams.attempt"
	KeyTool      = "ams.tool"
	KeyModel     = "ams.model"
	KeyJobs      = "ams.jobs"
	KeyEventType = "ams.event_type"
)

// state is the tracer in use while tracing is on.
type state struct {
	tracer trace.Tracer
}

var cur atomic.Pointer[state]

// noopSpan is the span Start returns while tracing is off.
var noopSpan trace.Span = noop.Span{}

// propagator reads and writes W3C traceparent and tracestate.
var propagator = propagation.TraceContext{}

// On reports whether tracing is on.
func On() bool { return cur.Load() != nil }

// Setup turns tracing on, exporting spans over OTLP/HTTP to endpoint
// (a URL such as http://127.0.0.1:4318, to which /v1/traces is added
// unless it has a path; or host:port, plain HTTP). An empty endpoint
// leaves tracing off. The returned function flushes the spans not yet
// sent and turns tracing off again.
func Setup(ctx context.Context, endpoint, version string) (func(context.Context) error, error) {
	if endpoint == "" {
		return func(context.Context) error { return nil }, nil
	}
	opts, err := endpointOptions(endpoint)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return Use(sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBatchTimeout(time.Second)), version), nil
}

// Use turns tracing on with span processor p (Setup's exporter, or a
// test's); the returned function flushes p and turns tracing off.
func Use(p sdktrace.SpanProcessor, version string) func(context.Context) error {
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("ams"), semconv.ServiceVersion(version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p), sdktrace.WithResource(res))
	cur.Store(&state{tracer: tp.Tracer("github.com/amsdev/ams")})
	return func(ctx context.Context) error {
		cur.Store(nil)
		return tp.Shutdown(ctx)
	}
}

// endpointOptions are the exporter's options for endpoint.
func endpointOptions(endpoint string) ([]otlptracehttp.Option, error) {
	if !strings.Contains(endpoint, "://") {
		return []otlptracehttp.Option{otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure()}, nil
	}
	if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
		return nil, errors.New("the OTLP endpoint must be an http:// or https:// URL, or host:port")
	}
	u := strings.TrimRight(endpoint, "/")
	if i := strings.Index(u[strings.Index(u, "://")+3:], "/"); i < 0 {
		u += "/v1/traces"
	}
	return []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u)}, nil
}

// Start starts a span named name, a child of ctx's span, with attrs;
// while tracing is off it returns ctx and a span that does nothing.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	st := cur.Load()
	if st == nil {
		return ctx, noopSpan
	}
	return st.tracer.Start(ctx, name, trace.WithAttributes(clone(attrs)...))
}

// clone copies attrs, so that a caller's list stays on its stack.
func clone(attrs []attribute.KeyValue) []attribute.KeyValue {
	return append([]attribute.KeyValue(nil), attrs...)
}

// End ends span, marking it failed when err is not nil.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Account, Turn and Event are the attributes of an account, a turn and
// an event id.
func Account(id string) attribute.KeyValue { return attribute.String(KeyAccount, id) }

// Turn is the attribute of a turn id.
func Turn(id string) attribute.KeyValue { return attribute.String(KeyTurn, id) }

// Event is the attribute of an event id.
func Event(id string) attribute.KeyValue { return attribute.String(KeyEvent, id) }

// Set adds attrs to ctx's span (nothing while tracing is off).
func Set(ctx context.Context, attrs ...attribute.KeyValue) {
	if On() {
		trace.SpanFromContext(ctx).SetAttributes(clone(attrs)...)
	}
}

// Detach returns a background context carrying only ctx's span (as the
// parent of the spans started in it): for work that outlives the
// request that began it, such as a turn.
func Detach(ctx context.Context) context.Context {
	if !On() {
		return context.Background()
	}
	return trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(ctx))
}

// TraceParent returns ctx's span as a W3C traceparent value ("" when
// there is none or tracing is off): what an event keeps of the span that
// emitted it.
func TraceParent(ctx context.Context) string {
	if !On() {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c["traceparent"]
}

// FromTraceParent returns ctx with the remote span of traceparent tp
// (ctx when tp is empty or invalid).
func FromTraceParent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
}

// Inject writes ctx's span to h as traceparent (and tracestate), for a
// peer: a webhook receiver, an MCP server.
func Inject(ctx context.Context, h http.Header) {
	if On() {
		propagator.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// ServerSpan is the span of an API request (nil while tracing is off).
type ServerSpan struct {
	span trace.Span
}

// Server starts the span of API request r, a child of the span its
// traceparent header names, if any; it returns r's context with it.
// While tracing is off it returns r's context and nil.
func Server(r *http.Request, requestID string) (context.Context, *ServerSpan) {
	st := cur.Load()
	if st == nil {
		return r.Context(), nil
	}
	ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := st.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path), attribute.String(KeyRequest, requestID)))
	return ctx, &ServerSpan{span: span}
}

// End ends the request's span with its route (pattern), status and
// caller's account ("" when none).
func (s *ServerSpan) End(pattern string, status int, account string) {
	if s == nil {
		return
	}
	if pattern != "" {
		s.span.SetName(pattern)
		s.span.SetAttributes(semconv.HTTPRoute(routeOf(pattern)))
	}
	s.span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if account != "" {
		s.span.SetAttributes(Account(account))
	}
	if status >= 500 {
		s.span.SetStatus(codes.Error, http.StatusText(status))
	}
	s.span.End()
}

// routeOf is a mux pattern's path ("GET /v1/x" is /v1/x).
func routeOf(pattern string) string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		return pattern[i+1:]
	}
	return pattern
}

// Claim returns ctx with the span of a claim of n webhook jobs, begun at
// start and ended now: the deliveries it started link to it. Only a
// claim that found jobs is a span, so an idle worker's polls are not.
func Claim(ctx context.Context, start time.Time, n int) context.Context {
	st := cur.Load()
	if st == nil || n == 0 {
		return ctx
	}
	ctx, span := st.tracer.Start(ctx, "webhook.claim", trace.WithTimestamp(start), trace.WithAttributes(attribute.Int(KeyJobs, n)))
	span.End()
	return ctx
}

// Delivery starts the span of a webhook delivery attempt: a child of the
// span that emitted the event (traceparent, the event's Trace), so that
// a request's trace shows the deliveries of its events, linked to the
// claim in ctx. Without a traceparent it is a child of ctx's span.
func Delivery(ctx context.Context, traceparent, account, event, eventType, webhook string, attempt int) (context.Context, trace.Span) {
	st := cur.Load()
	if st == nil {
		return ctx, noopSpan
	}
	claim := trace.SpanContextFromContext(ctx)
	var links []trace.Link
	if parent := trace.SpanContextFromContext(FromTraceParent(context.Background(), traceparent)); parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
		if claim.IsValid() {
			links = append(links, trace.Link{SpanContext: claim})
		}
	}
	return st.tracer.Start(ctx, "webhook.delivery", trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...),
		trace.WithAttributes(Account(account), Event(event), attribute.String(KeyEventType, eventType),
			attribute.String(KeyWebhook, webhook), attribute.Int(KeyAttempt, attempt)))
}

// Attempted records on a delivery's span the delivery's id, the status
// code its receiver answered (0: none) and whether it succeeded.
func Attempted(span trace.Span, delivery string, status int, success bool) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String(KeyDelivery, delivery))
	if status != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	}
	if !success {
		span.SetStatus(codes.Error, "delivery failed")
	}
}
