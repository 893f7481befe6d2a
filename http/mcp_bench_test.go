package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/mcptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPCall measures an MCP tool call (the reference server's
// get-sum) three ways, one after the other on one server, and reports
// each one's p50 and p99 (docs/benchmarks.md, issue 30):
//
//   - direct: a client with one session open calls tools/call, as an MCP
//     client that keeps its session does;
//   - direct-new-session: a client opens a session (initialize), calls,
//     and closes it, as ams does for each call;
//   - ams: POST /v1/assistants/{id}/actions through the API (auth, rate
//     limit, schema check, the call with its own session, the action and
//     the integration's status in one transaction).
//
// Run: go test ./http -run XXX -bench MCPCall -benchtime 300x
func BenchmarkMCPCall(b *testing.B) {
	srv := mcptest.Start(b)
	ctx := context.Background()
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	connect := func(b *testing.B) *sdk.ClientSession {
		cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		return cs
	}
	call := func(b *testing.B, cs *sdk.ClientSession) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get-sum", Arguments: map[string]any{"a": 2, "b": 3}})
		if err != nil || res.IsError {
			b.Fatalf("get-sum: %v %v", res, err)
		}
	}
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
		b.ReportMetric(q(0.50), "p50-ms")
		b.ReportMetric(q(0.99), "p99-ms")
	}
	b.Run("direct", func(b *testing.B) {
		cs := connect(b)
		defer cs.Close()
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			call(b, cs)
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	b.Run("direct-new-session", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			cs := connect(b)
			call(b, cs)
			cs.Close()
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	b.Run("ams", func(b *testing.B) {
		f := amstest.New(b)
		u := f.NewUser("bench@example.com", ams.PlanEnterprise)
		lim := 1_000_000_000
		if _, err := f.Data.UpdateUser(ctx, u.ID, ams.UserUpdate{RPM: &lim, RPD: &lim}, f.Clock.Now()); err != nil {
			b.Fatal(err)
		}
		key, a := f.NewKey(u, "read,messages,integrations"), f.NewAssistant(u, "Bench")
		if r := f.Do("POST", "/v1/integrations", key, `{"provider": "mcp", "name": "everything", "url": "`+srv.URL+`"}`); r.Status != 201 {
			b.Fatalf("connect: %d %s", r.Status, r.Body)
		}
		path := "/v1/assistants/" + a.ID + "/actions"
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			r := f.Do("POST", path, key, `{"type": "everything__get-sum", "input": {"a": 2, "b": 3}}`)
			lat = append(lat, time.Since(start))
			var act struct{ Status string }
			if r.Status != 201 || json.Unmarshal(r.Body, &act) != nil || act.Status != "succeeded" {
				b.Fatal(fmt.Sprintf("%d %s", r.Status, r.Body))
			}
		}
		report(b, lat)
	})
}
