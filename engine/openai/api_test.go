package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/openai"
	"github.com/amsdev/ams/engine/openai/openaitest"
	"github.com/amsdev/ams/internal/testing/amstest"
)

// apiFixture is the in-process API server with the engine of a fake
// provider answering every assistant.
func apiFixture(t *testing.T, srv *openaitest.Server, engineTimeout time.Duration) *amstest.Fixture {
	t.Helper()
	f := amstest.New(t)
	e := newEngine(t, srv)
	f.API.Messages.EngineFor = func(*ams.Assistant) (ams.Engine, error) { return e, nil }
	f.API.Messages.EngineTimeout = engineTimeout
	return f
}

// stored counts the account's messages.
func stored(t *testing.T, f *amstest.Fixture) int {
	t.Helper()
	page, err := f.Store.ListConversations(context.Background(), f.User.ID, "", ams.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range page.Data {
		n += c.MessageCount
	}
	return n
}

func errorOf(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Error == nil {
		t.Fatalf("not an error body: %s", body)
	}
	return m.Error
}

// TestThroughTheAPI sends messages through POST /v1/messages to the
// engine: a reply is stored; a provider that hangs past the reply's time,
// or fails, is a documented 502 and stores nothing.
func TestThroughTheAPI(t *testing.T) {
	srv := openaitest.New(t)
	f := apiFixture(t, srv, 500*time.Millisecond)
	body := `{"assistant_id":"` + f.Assistant.ID + `","message":"Hello"}`

	srv.Push(openaitest.Text("Hi from the model."))
	r := f.Do("POST", "/v1/messages", f.Key, body)
	if r.Status != 201 || !strings.Contains(string(r.Body), `"content":"Hi from the model."`) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if n := stored(t, f); n != 2 {
		t.Fatalf("%d messages stored", n)
	}

	srv.Push(srv.Hang())
	start := time.Now()
	r = f.Do("POST", "/v1/messages", f.Key, body)
	if e := errorOf(t, r.Body); r.Status != 502 || e["code"] != "engine_error" || !strings.Contains(e["message"].(string), "in time") {
		t.Fatalf("hang: %d %s", r.Status, r.Body)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("answered after %s", d)
	}

	srv.Push(openaitest.Error(429, "600", "secret provider detail"))
	r = f.Do("POST", "/v1/messages", f.Key, body)
	if e := errorOf(t, r.Body); r.Status != 502 || e["code"] != openai.CodeRateLimited || strings.Contains(string(r.Body), "secret") {
		t.Fatalf("429: %d %s", r.Status, r.Body)
	}

	// Streamed: text, then the provider hangs. The client got the text,
	// then an error event; no reply is stored.
	srv.Push(srv.HangAfter("Partial ", "answer"))
	r = f.Do("POST", "/v1/messages", f.Key, `{"assistant_id":"`+f.Assistant.ID+`","message":"Hello","stream":true}`)
	text := string(r.Body)
	if r.Status != 200 || !strings.Contains(text, `data: {"delta":"Partial "}`) || !strings.Contains(text, "event: error\ndata: ") ||
		!strings.Contains(text, `"code":"engine_error"`) || strings.Contains(text, "message.completed") {
		t.Fatalf("streamed hang: %d\n%s", r.Status, text)
	}
	// Each failed turn keeps its inbound message (and the conversation it
	// started), without a reply.
	if n := stored(t, f); n != 5 {
		t.Fatalf("%d messages stored after the failures, want the first exchange's 2 and the 3 failed turns' inbound ones", n)
	}
}
