package tracing_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/tracing"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// span is a received span, as a trace backend shows it.
type span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Attrs                     map[string]string
	Links                     []string // span ids
}

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes what
// exporters POST to /v1/traces with the protocol's own protobuf types
// (go.opentelemetry.io/proto/otlp), as a collector does.
type otlpReceiver struct {
	URL   string
	mu    sync.Mutex
	spans []span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{URL: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(r.serve)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces application/x-protobuf", http.StatusBadRequest)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ex coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &ex); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range ex.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := span{TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentID: hex.EncodeToString(s.ParentSpanId), Name: s.Name, Attrs: attrs(s.Attributes)}
				for _, l := range s.Links {
					sp.Links = append(sp.Links, hex.EncodeToString(l.SpanId))
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(v.BoolValue)
		}
	}
	return m
}

func (r *otlpReceiver) received() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.spans...)
}

// hook is a webhook receiver that keeps the traceparent of each
// delivery, by event id.
type hook struct {
	mu     sync.Mutex
	parent map[string]string
	types  map[string]string
	bodies []string
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.parent[r.Header.Get("Webhook-Id")] = r.Header.Get("traceparent")
	h.types[r.Header.Get("Webhook-Id")] = r.Header.Get("X-Service-Event")
	b, _ := io.ReadAll(r.Body)
	h.bodies = append(h.bodies, string(b))
	h.mu.Unlock()
}

// TestSpansReachOTLPReceiver: with tracing on, a request carrying a
// W3C traceparent, its turn (engine and tool call, store transactions)
// and the webhook deliveries of the events it emitted are spans of the
// caller's trace, parent to child, exported over OTLP/HTTP to a real
// receiver; each delivery sends its span as traceparent.
func TestSpansReachOTLPReceiver(t *testing.T) {
	recv := newOTLPReceiver(t)
	stop, err := tracing.Setup(context.Background(), recv.URL, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	checkTrace(t, func() []span {
		if err := stop(context.Background()); err != nil { // flushes every span
			t.Fatal(err)
		}
		return recv.received()
	})
}

// The caller's span, as its traceparent names it.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// checkTrace runs a turn and its deliveries with tracing on, then checks
// the spans that flush returns.
func checkTrace(t *testing.T, flush func() []span) {
	f := amstest.New(t)
	h := &hook{parent: map[string]string{}, types: map[string]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	defer hs.Close()
	if r := f.Do("POST", "/v1/webhooks", f.Key, `{"url":"http://`+ln.Addr().String()+`/hook","events":["*"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`); r.Status != 201 {
		t.Fatalf("create webhook: %d %s", r.Status, r.Body)
	}

	r := f.Do("POST", "/v1/messages", f.Key, `{"assistant_id":"`+f.Assistant.ID+`","message":"Remind me to call Anna tomorrow at 9"}`,
		"traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	if r.Status != 201 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	requestID := r.Header.Get("X-Request-Id")
	if _, err := f.Worker.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	delivered := len(h.parent)
	h.mu.Unlock()
	if delivered < 3 { // the inbound and reply messages, the task
		t.Fatalf("%d deliveries, want the turn's 3 events at least: %v", delivered, h.types)
	}

	spans := flush()
	t.Logf("%d spans received", len(spans))
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	one := func(name string, match func(span) bool) span {
		t.Helper()
		var found []span
		for _, s := range spans {
			if s.Name == name && (match == nil || match(s)) {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d spans %q, want 1; received: %s", len(found), name, names(spans))
		}
		return found[0]
	}
	server := one("POST /v1/messages", nil)
	if server.TraceID != callerTrace || server.ParentID != callerSpan {
		t.Fatalf("request span in trace %s under %s, want the traceparent's %s under %s", server.TraceID, server.ParentID, callerTrace, callerSpan)
	}
	if server.Attrs[tracing.KeyAccount] != f.User.ID || server.Attrs[tracing.KeyRequest] != requestID || server.Attrs["http.response.status_code"] != "201" {
		t.Fatalf("request span attributes %v", server.Attrs)
	}
	turn := one("turn", nil)
	if turn.ParentID != server.SpanID || turn.Attrs[tracing.KeyAccount] != f.User.ID || !strings.HasPrefix(turn.Attrs[tracing.KeyTurn], "trn_") {
		t.Fatalf("turn span %+v, want a child of the request's %s with account and turn", turn, server.SpanID)
	}
	engine := one("engine.reply", nil)
	if engine.ParentID != turn.SpanID {
		t.Fatalf("engine span under %s, want the turn's %s", engine.ParentID, turn.SpanID)
	}
	tool := one("tool.call", nil)
	if tool.ParentID != engine.SpanID || tool.Attrs[tracing.KeyTurn] != turn.Attrs[tracing.KeyTurn] || tool.Attrs[tracing.KeyTool] == "" {
		t.Fatalf("tool span %+v, want a child of the engine's %s with the turn", tool, engine.SpanID)
	}
	commits := 0
	for _, s := range spans {
		if s.Name == "store.transaction" && s.TraceID == callerTrace {
			commits++
			if p, ok := byID[s.ParentID]; !ok || p.TraceID != callerTrace {
				t.Fatalf("store transaction under %s, not a span of the trace", s.ParentID)
			}
		}
	}
	if commits == 0 {
		t.Fatalf("no store transaction in the trace: %s", names(spans))
	}
	claim := one("webhook.claim", nil)

	// Every delivery of the turn's events is a span of the caller's
	// trace, under the span that emitted its event (the request, the
	// engine (the deferred start a tool call stores), the
	// turn or the tool call), linked to the claim; its receiver got it
	// as traceparent.
	h.mu.Lock()
	defer h.mu.Unlock()
	for event, tp := range h.parent {
		d := one("webhook.delivery", func(s span) bool { return s.Attrs[tracing.KeyEvent] == event })
		if d.TraceID != callerTrace {
			t.Fatalf("delivery of %s (%s) in trace %s, want %s", event, h.types[event], d.TraceID, callerTrace)
		}
		switch d.ParentID {
		case server.SpanID, turn.SpanID, engine.SpanID, tool.SpanID:
		default:
			t.Fatalf("delivery of %s (%s) under %s (%s), want the request, turn, engine or tool call", event, h.types[event], d.ParentID, byID[d.ParentID].Name)
		}
		if d.Attrs[tracing.KeyAccount] != f.User.ID || d.Attrs[tracing.KeyDelivery] == "" || d.Attrs["http.response.status_code"] != "200" {
			t.Fatalf("delivery span attributes %v", d.Attrs)
		}
		if len(d.Links) != 1 || d.Links[0] != claim.SpanID {
			t.Fatalf("delivery links %v, want the claim %s", d.Links, claim.SpanID)
		}
		if want := "00-" + callerTrace + "-" + d.SpanID + "-01"; tp != want {
			t.Fatalf("delivery of %s sent traceparent %q, want %q", event, tp, want)
		}
	}
	// The trace context kept with each event is never shown: not in a
	// delivery's body, not in the events API.
	if r := f.Do("GET", "/v1/events", f.Key, ""); r.Status != 200 || strings.Contains(string(r.Body), "$trace") || strings.Contains(string(r.Body), callerTrace) {
		t.Fatalf("GET /v1/events: %d %s", r.Status, r.Body)
	}
	for _, b := range h.bodies {
		if strings.Contains(b, "$trace") || strings.Contains(b, callerTrace) {
			t.Fatalf("a delivery's body shows its trace: %s", b)
		}
	}
	var types []string
	for _, ty := range h.types {
		types = append(types, ty)
	}
	for _, want := range []string{"message.created", "task.created"} {
		if !strings.Contains(strings.Join(types, " "), want) {
			t.Fatalf("deliveries %v, want %s", types, want)
		}
	}
}

func names(spans []span) string {
	var b bytes.Buffer
	for _, s := range spans {
		fmt.Fprintf(&b, "\n  %s %s<-%s %s %v", s.TraceID[:8], s.SpanID, s.ParentID, s.Name, s.Attrs)
	}
	return b.String()
}

// TestSpansReachJaeger is TestSpansReachOTLPReceiver against Jaeger (an
// all-in-one build of github.com/jaegertracing/jaeger/cmd/jaeger, which
// scripts/tracing-jaeger.sh makes): the spans are exported to its OTLP
// receiver and read back from its query API. It runs only when
// AMS_TEST_JAEGER names the binary.
func TestSpansReachJaeger(t *testing.T) {
	bin := os.Getenv("AMS_TEST_JAEGER")
	if bin == "" {
		t.Skip("AMS_TEST_JAEGER is not set (scripts/tracing-jaeger.sh builds Jaeger and sets it)")
	}
	otlpAddr, queryAddr, grpcAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(jaegerConfig, queryAddr, grpcAddr, otlpAddr)), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("jaeger's output:\n%s", out.String())
		}
	}()
	query := "http://" + queryAddr
	// Jaeger is ready when its query API answers.
	waitFor(t, "Jaeger's query API", func() bool {
		resp, err := http.Get(query + "/api/services")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	stop, err := tracing.Setup(context.Background(), "http://"+otlpAddr, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	checkTrace(t, func() []span {
		if err := stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Jaeger stores what it received in its own time: the trace is
		// read until it holds the spans that were exported.
		var spans []jaegerSpan
		waitFor(t, "the trace in Jaeger", func() bool {
			spans = jaegerTrace(t, query, callerTrace)
			linked := map[string]bool{}
			for _, s := range spans {
				for _, l := range s.linkTraces {
					linked[l] = true
				}
			}
			for id := range linked {
				spans = append(spans, jaegerTrace(t, query, id)...)
			}
			return hasDeliveries(spans) && len(linked) > 0
		})
		out := make([]span, len(spans))
		for i, s := range spans {
			out[i] = s.span
		}
		return out
	})
}

// jaegerConfig is Jaeger's configuration: in-memory storage, its query
// API (HTTP and gRPC) and OTLP/HTTP receiver at the given addresses.
const jaegerConfig = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %s
    grpc:
      endpoint: %s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// jaegerSpan is a span read from Jaeger, with the traces of its links.
type jaegerSpan struct {
	span
	linkTraces []string
}

// jaegerTrace reads trace id from Jaeger's query API (none: not found).
func jaegerTrace(t *testing.T, query, id string) []jaegerSpan {
	t.Helper()
	resp, err := http.Get(query + "/api/traces/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var body struct {
		Data []struct {
			Spans []struct {
				TraceID       string `json:"traceID"`
				SpanID        string `json:"spanID"`
				OperationName string `json:"operationName"`
				References    []struct {
					RefType string `json:"refType"`
					TraceID string `json:"traceID"`
					SpanID  string `json:"spanID"`
				} `json:"references"`
				Tags []struct {
					Key   string `json:"key"`
					Value any    `json:"value"`
				} `json:"tags"`
			} `json:"spans"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("trace %s from Jaeger (%d): %v", id, resp.StatusCode, err)
	}
	var out []jaegerSpan
	for _, tr := range body.Data {
		for _, s := range tr.Spans {
			js := jaegerSpan{span: span{TraceID: s.TraceID, SpanID: s.SpanID, Name: s.OperationName, Attrs: map[string]string{}}}
			for _, r := range s.References {
				if r.RefType == "CHILD_OF" && js.ParentID == "" && r.TraceID == s.TraceID {
					js.ParentID = r.SpanID
				} else {
					js.Links = append(js.Links, r.SpanID)
					if r.TraceID != s.TraceID {
						js.linkTraces = append(js.linkTraces, r.TraceID)
					}
				}
			}
			for _, tag := range s.Tags {
				js.Attrs[tag.Key] = fmt.Sprint(tag.Value)
			}
			out = append(out, js)
		}
	}
	return out
}

// hasDeliveries reports whether spans hold the request's span and
// three deliveries.
func hasDeliveries(spans []jaegerSpan) bool {
	n, server := 0, false
	for _, s := range spans {
		switch s.Name {
		case "webhook.delivery":
			n++
		case "POST /v1/messages":
			server = true
		}
	}
	return server && n >= 3
}

// freeAddr returns a free 127.0.0.1 address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitFor waits until ok, up to a minute, checking ten times a second.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for !ok() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not there after a minute", what)
		}
	}
}
