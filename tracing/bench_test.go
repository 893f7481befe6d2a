package tracing_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/messaging"
	"github.com/amsdev/ams/tracing"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkGetMessage measures GET /v1/messages/{id} through the whole
// handler stack with tracing off (the default) and on (spans made and
// handed to a batch processor whose exporter keeps nothing). "off"
// allocates what http's BenchmarkGetMessage did before tracing
// (docs/operations.md, "Tracing").
func BenchmarkGetMessage(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			if on {
				stop := tracing.Use(sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter()), "bench")
				defer stop(context.Background())
			}
			f := amstest.New(b)
			u := f.NewUser("bench@example.com", ams.PlanEnterprise)
			lim := 1_000_000_000
			if _, err := f.Data.UpdateUser(context.Background(), u.ID, ams.UserUpdate{RPM: &lim, RPD: &lim}, f.Clock.Now()); err != nil {
				b.Fatal(err)
			}
			key := f.NewKey(u, "read,messages")
			m, err := f.API.Messages.Send(context.Background(), u.ID, messaging.SendInput{AssistantID: f.NewAssistant(u, "Bench").ID, Message: "Hello"})
			if err != nil {
				b.Fatal(err)
			}
			id := m.ID
			h := f.App.Handler()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req := httptest.NewRequest("GET", "/v1/messages/"+id, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
