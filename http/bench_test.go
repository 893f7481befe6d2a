package http_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/messaging"
)

// benchSetup returns the API handler and an enterprise account's key with
// limits far above any benchmark's load, its assistant, and one message.
func benchSetup(b *testing.B) (http.Handler, string, *ams.Assistant, *ams.Message) {
	f, key, a, m := benchFixture(b)
	return f.API.Handler(), key, a, m
}

// benchFixture is benchSetup's fixture (with opts), before any request.
func benchFixture(b *testing.B, opts ...amstest.Option) (*amstest.Fixture, string, *ams.Assistant, *ams.Message) {
	f := amstest.New(b, opts...)
	f.API.MaxConcurrentTurns = 1 << 20 // the benchmarks hold more turns at once than the default cap
	u := f.NewUser("bench@example.com", ams.PlanEnterprise)
	lim := 1_000_000_000
	if _, err := f.Data.UpdateUser(context.Background(), u.ID, ams.UserUpdate{RPM: &lim, RPD: &lim}, f.Clock.Now()); err != nil {
		b.Fatal(err)
	}
	key := f.NewKey(u, "read,messages")
	a := f.NewAssistant(u, "Bench")
	m, err := f.API.Messages.Send(context.Background(), u.ID, messaging.SendInput{AssistantID: a.ID, Message: "Hello! What can you do?"})
	if err != nil {
		b.Fatal(err)
	}
	return f, key, a, m
}

// BenchmarkGetMessage measures an authenticated GET /v1/messages/{id}
// through the whole handler stack (request id, auth, rate limit,
// permission, store, JSON), without the network.
func BenchmarkGetMessage(b *testing.B) {
	h, key, _, m := benchSetup(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/v1/messages/"+m.ID, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}

// BenchmarkGetMessageAuth measures an authenticated GET /v1/messages/{id}
// as BenchmarkGetMessage does, on each engine (postgres when
// AMS_TEST_DATABASE_URL is set), with the authentication cache (the
// default: no query to authenticate) and without it (AuthCacheSize -1:
// the key looked up on every request, as before issue 17), beside "bare":
// a plain net/http handler answering a Message of the same shape with no
// authentication, rate limit or store (bench/bare's, in process).
// docs/benchmarks.md, "Issue 17: authentication cache", says how to run it.
func BenchmarkGetMessageAuth(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, mode := range []struct {
			name string
			size int
		}{{"cache", 0}, {"nocache", -1}} {
			b.Run(engine+"/"+mode.name, func(b *testing.B) {
				var opts []amstest.Option
				if engine == "postgres" {
					opts = append(opts, amstest.OnStore(pgtest.Open(b)))
				}
				f, key, _, m := benchFixture(b, opts...)
				f.API.AuthCacheSize = mode.size
				benchGet(b, f.API.Handler(), "/v1/messages/"+m.ID, key)
			})
		}
	}
	b.Run("bare", func(b *testing.B) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		mux := http.NewServeMux()
		mux.HandleFunc("GET /v1/messages/{id}", func(w http.ResponseWriter, r *http.Request) {
			body, _ := json.Marshal(map[string]any{
				"id": r.PathValue("id"), "object": "message", "assistant_id": "ast_0123456789ABCDEFGHIJKLMN",
				"conversation_id": "conv_0123456789ABCDEFGHIJKLMN", "direction": "outbound",
				"content":    "Hello! I am the built-in assistant. I can chat, keep the context of our conversation and remember what you tell me.",
				"created_at": now, "updated_at": now,
			})
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body)
		})
		benchGet(b, mux, "/v1/messages/msg_0123456789ABCDEFGHIJKLMN", "")
	})
}

// benchGet runs GET path on h in parallel, with the key as bearer token
// when it is not "".
func benchGet(b *testing.B, h http.Handler, path, key string) {
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", path, nil)
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}

// BenchmarkSendMessage measures POST /v1/messages with the built-in
// engine, each starting a new conversation, from 32 goroutines per CPU (64
// on 2 cores, as the load benchmark's 64 connections): concurrent turns
// are what group commit gathers.
func BenchmarkSendMessage(b *testing.B) {
	h, key, a, _ := benchSetup(b)
	body := `{"assistant_id":"` + a.ID + `","message":"Hello! What can you do?"}`
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 201 {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}
