package tracing_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/amsdev/ams/tracing"
)

// TestOffAllocatesNothing: while tracing is off (no --otlp-endpoint) the
// hooks on the request, turn, store and delivery paths allocate nothing,
// so those paths cost what they did before tracing.
func TestOffAllocatesNothing(t *testing.T) {
	if tracing.On() {
		t.Fatal("tracing is on before Setup")
	}
	ctx := context.Background()
	req := httptest.NewRequest("GET", "/v1/messages/msg_1", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h := http.Header{}
	err := errors.New("x")
	start := time.Now()
	n := testing.AllocsPerRun(100, func() {
		c, span := tracing.Start(ctx, "turn", tracing.Account("usr_1"), tracing.Turn("turn_1"))
		tracing.Set(c, tracing.Event("evt_1"))
		tracing.End(span, err)
		sc, ss := tracing.Server(req, "req_1")
		ss.End("GET /v1/messages/{id}", 200, "usr_1")
		_ = tracing.Detach(sc)
		_ = tracing.TraceParent(c)
		_ = tracing.FromTraceParent(c, "")
		tracing.Inject(c, h)
		c = tracing.Claim(c, start, 3)
		_, ds := tracing.Delivery(c, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "usr_1", "evt_1", "message.created", "wh_1", 1)
		tracing.Attempted(ds, "del_1", 200, true)
		ds.End()
	})
	if n != 0 {
		t.Fatalf("tracing off: %v allocations per run, want 0", n)
	}
	if len(h) != 0 {
		t.Fatalf("tracing off injected headers: %v", h)
	}
}

// TestSetupEndpoint: an empty endpoint leaves tracing off; a URL that is
// not http(s) is refused.
func TestSetupEndpoint(t *testing.T) {
	stop, err := tracing.Setup(context.Background(), "", "test")
	if err != nil || tracing.On() {
		t.Fatalf("empty endpoint: err %v, on %v", err, tracing.On())
	}
	stop(context.Background())
	if _, err := tracing.Setup(context.Background(), "ftp://collector:4318", "test"); err == nil {
		t.Fatal("ftp:// endpoint accepted")
	}
	if tracing.On() {
		t.Fatal("a refused endpoint turned tracing on")
	}
}
