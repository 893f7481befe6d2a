package http_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/amstest"
	"github.com/amsdev/ams/messaging"
)

// benchSetup returns the API handler and an enterprise account's key with
// limits far above any benchmark's load, its assistant, and one message.
func benchSetup(b *testing.B) (http.Handler, string, *ams.Assistant, *ams.Message) {
	f := amstest.New(b)
	u := f.NewUser("bench@example.com", ams.PlanEnterprise)
	lim := 1_000_000_000
	if _, err := f.Store.UpdateUser(context.Background(), u.ID, ams.UserUpdate{RPM: &lim, RPD: &lim}, f.Clock.Now()); err != nil {
		b.Fatal(err)
	}
	key := f.NewKey(u, "read,messages")
	a := f.NewAssistant(u, "Bench")
	m, err := f.API.Messages.Send(context.Background(), u.ID, messaging.SendInput{AssistantID: a.ID, Message: "Hello! What can you do?"})
	if err != nil {
		b.Fatal(err)
	}
	return f.API.Handler(), key, a, m
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
