package hostile_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/openai"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/hostile"
)

// engineSwitch runs each reply with the engine of the case at hand, so
// that the cases share one server.
type engineSwitch struct{ e atomic.Pointer[openai.Engine] }

func (s *engineSwitch) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	return s.e.Load().Reply(ctx, req)
}

// Pieces of chat-completions answers, as OpenAI's protocol has them.
var (
	completionStart = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test",` +
		`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`)
	chunk = []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test",` +
		`"choices":[{"index":0,"delta":{"content":"ha "},"finish_reason":null}]}` + "\n\n")
	haha = []byte("ha ")
)

// TestLLMProvider runs turns (POST /v1/messages, with and without
// "stream") with the openai engine against model providers that answer
// as an attacker or a broken server would, and checks that each turn
// fails with engine_error saying why, while the memory of the turn stays
// bounded. The engine bounds the provider's answers to 256 KiB here
// (openai.Config.MaxResponseBytes; 8 MiB by default), so that a streamed
// answer cut at the bound is quick to decode under the race detector.
func TestLLMProvider(t *testing.T) {
	const maxBody = 256 << 10
	cases := []struct {
		name    string
		stream  bool
		act     hostile.Act
		budget  int64
		want    string // in the turn's error message
		timeout time.Duration
	}{
		{name: "huge headers", act: hostile.HugeHeaders(200), budget: 4 << 20,
			want: "too large (its headers exceed the limit of 64 KiB)"},
		{name: "endless completion", act: hostile.EndlessBody(200, "application/json", completionStart, haha), budget: 8 << 20,
			want: "too large (its body exceeds the limit of 256 KiB)"},
		{name: "gzip bomb", act: hostile.GzipBomb(200, "application/json", hostile.NewBomb(completionStart, haha)), budget: 8 << 20,
			want: "too large (its body exceeds the limit of 256 KiB)"},
		{name: "endless error body", act: hostile.EndlessBody(500, "application/json", []byte(`{"error":{"message":"`), haha), budget: 8 << 20,
			want: "too large (its body exceeds the limit of 256 KiB)"},
		{name: "endless stream", stream: true, act: hostile.EndlessBody(200, "text/event-stream", nil, chunk), budget: 32 << 20,
			want: "too large (its body exceeds the limit of 256 KiB)"},
		{name: "endless event line", stream: true, act: hostile.EndlessBody(200, "text/event-stream", []byte("data: "), haha), budget: 8 << 20,
			want: "too large (its body exceeds the limit of 256 KiB)"},
		{name: "trickled stream", stream: true, act: hostile.Trickle(200, "text/event-stream", nil, chunk, 5*time.Millisecond), budget: 4 << 20,
			want: "did not answer in time", timeout: 300 * time.Millisecond},
		{name: "hang", act: hostile.Hang(), budget: 4 << 20, want: "did not answer in time", timeout: 300 * time.Millisecond},
		{name: "not HTTP", act: hostile.Garbage(), budget: 4 << 20, want: "could not be reached"},
		{name: "malformed stream", stream: true, act: hostile.Answer(200, "text/event-stream", []byte("data: {\"choices\":[{\"index\":0,\"delta\":\n\n")),
			budget: 4 << 20, want: "could not be read"},
	}
	sw := &engineSwitch{}
	f := amstest.New(t, amstest.WithEngine(sw))
	f.Assistant.Model = "gpt-test"
	if r := f.Do("PATCH", "/v1/assistants/"+f.Assistant.ID, f.Key, `{"model":"gpt-test"}`); r.Status != 200 {
		t.Fatalf("set the model: %d %s", r.Status, r.Body)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			peer := hostile.NewHTTP(t, hostile.Always(tc.act))
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 20 * time.Second
			}
			e, err := openai.New(openai.Config{BaseURL: peer.URL + "/v1", APIKey: "sk-test", MaxRetries: -1,
				Timeout: timeout, MaxResponseBytes: maxBody})
			if err != nil {
				t.Fatal(err)
			}
			sw.e.Store(e)
			body, _ := json.Marshal(map[string]any{"assistant_id": f.Assistant.ID, "message": "Tell me a story", "stream": tc.stream})

			m := hostile.Measure()
			r := f.Do("POST", "/v1/messages", f.Key, string(body))
			used := m.Allocated()
			t.Logf("the turn allocated %s; the provider sent %s", hostile.MiB(used), hostile.MiB(peer.Sent()))
			if used > tc.budget {
				t.Errorf("the turn allocated %s, more than %s: the provider's answer is not bounded (it sent %s)",
					hostile.MiB(used), hostile.MiB(tc.budget), hostile.MiB(peer.Sent()))
			}

			// What the caller sees: 502 engine_error (or, streamed, an
			// error event), and the turn failed with the error.
			switch {
			case !tc.stream && r.Status != 502:
				t.Fatalf("POST /v1/messages: %d %s", r.Status, r.Body)
			case tc.stream && (r.Status != 200 || !strings.Contains(string(r.Body), "event: error")):
				t.Fatalf("streamed POST /v1/messages: %d %.300s", r.Status, r.Body)
			}
			id := r.Header.Get("X-Turn-Id")
			turn := f.Do("GET", "/v1/turns/"+id, f.Key, "").JSON(t)
			e2, _ := turn["error"].(map[string]any)
			msg, _ := e2["message"].(string)
			if turn["status"] != "failed" || e2["code"] != "engine_error" || !strings.Contains(msg, tc.want) {
				t.Fatalf("turn: status %v, error %v; want failed, engine_error saying %q", turn["status"], e2, tc.want)
			}
		})
	}
}
