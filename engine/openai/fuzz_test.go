package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/openai"
)

// fuzzCanned answers every request with the same status and body, without a
// network: the provider's answer is what the fuzz target varies.
type fuzzCanned struct {
	status int
	ctype  string
	body   []byte
}

func (c fuzzCanned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	h := http.Header{"Content-Type": {c.ctype}}
	return &http.Response{StatusCode: c.status, Status: strconv.Itoa(c.status) + " " + http.StatusText(c.status),
		Header: h, Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r}, nil
}

// fuzzTools is a toolbox whose every tool call succeeds, whatever its
// name and arguments.
type fuzzTools struct {
	mu   sync.Mutex
	runs int
}

func (t *fuzzTools) Specs() []ams.ToolSpec {
	return []ams.ToolSpec{{Name: "create_task", Description: "Create a task.", Parameters: taskSchema}}
}

func (t *fuzzTools) Run(_ context.Context, name string, input json.RawMessage) (*ams.Action, error) {
	if !json.Valid(input) {
		return nil, errors.New("the engine passed arguments that are not JSON")
	}
	t.mu.Lock()
	t.runs++
	t.mu.Unlock()
	return &ams.Action{ID: "act_1", Object: "action", Type: name, Status: ams.ActionSucceeded, Input: input,
		Result: json.RawMessage(`{"ok":true}`), CreatedAt: time.Now()}, nil
}

var fuzzStatuses = []int{200, 200, 200, 200, 400, 401, 404, 429, 500, 503}

const fuzzRounds = 2

// FuzzProviderAnswer: whatever a chat-completions server answers (any
// status, any body, as JSON or as a Server-Sent Events stream), Reply
// never panics and never hangs; it returns a reply, or an *ams.Error of
// kind EUPSTREAM with one of the engine's codes and a short message of
// its own; a streamed reply's forwarded pieces make up its content; and
// no more tool calls run than the round bounds allow.
func FuzzProviderAnswer(f *testing.F) {
	choice := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s,"tool_calls":%s},"finish_reason":"stop"}]}`
	for _, s := range []string{
		strings.Replace(strings.Replace(choice, "%s", `"Hello!"`, 1), "%s", `null`, 1),
		strings.Replace(strings.Replace(choice, "%s", `null`, 1), "%s",
			`[{"id":"call_1","type":"function","function":{"name":"create_task","arguments":"{\"title\":\"x\"}"}}]`, 1),
		strings.Replace(strings.Replace(choice, "%s", `""`, 1), "%s",
			`[{"id":"call_1","type":"function","function":{"name":"nope","arguments":"not json"}},{"id":"call_2","type":"custom"}]`, 1),
		`{"choices":[]}`, `{"choices":null}`, `{}`, `null`, `[]`, ``, `{"choices":[{"message":{"content":"\ud800"}}]}`,
		`{"choices":[{"index":5,"message":{"refusal":"no"}}]}`, `{"error":{"message":"secret provider detail","type":"x","code":"y"}}`,
	} {
		for _, status := range []uint8{0, 4, 5, 7, 8} {
			f.Add(status, false, []byte(s))
		}
	}
	chunk := func(delta string, finish string) string {
		fr := "null"
		if finish != "" {
			fr = `"` + finish + `"`
		}
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]}` + "\n\n"
	}
	for _, s := range []string{
		chunk(`{"role":"assistant","content":"Hel"}`, "") + chunk(`{"content":"lo"}`, "") + chunk(`{}`, "stop") + "data: [DONE]\n\n",
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"create_task","arguments":""}}]}`, "") +
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"title\":"}}]}`, "") +
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}`, "tool_calls") + "data: [DONE]\n\n",
		chunk(`{"tool_calls":[{"index":3,"function":{"arguments":"{}"}}]}`, "tool_calls") + "data: [DONE]\n\n",
		chunk(`{"content":"cut"}`, ""),
		"event: error\ndata: {\"error\":{\"message\":\"secret provider detail\"}}\n\n",
		"data: {\"error\":{\"message\":\"overloaded\"}}\n\n",
		": comment\n\nretry: 10\nid: 1\ndata: not json\n\n",
		"data: [DONE]\n\n", "data:\n\n", "\n\n\n", "data: " + `{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"},{"index":1,"delta":{"content":"b"}}]}` + "\n\n",
	} {
		for _, status := range []uint8{0, 7} {
			f.Add(status, true, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, status uint8, stream bool, body []byte) {
		c := fuzzCanned{status: fuzzStatuses[int(status)%len(fuzzStatuses)], ctype: "application/json", body: body}
		if stream && c.status == 200 {
			c.ctype = "text/event-stream"
		}
		e, err := openai.New(openai.Config{BaseURL: "https://llm.example/v1", HTTPClient: &http.Client{Transport: c},
			Timeout: 10 * time.Second, MaxRetries: -1, MaxToolRounds: fuzzRounds})
		if err != nil {
			t.Fatal(err)
		}
		tb := &fuzzTools{}
		req := request(tb)
		var pieces strings.Builder
		if stream {
			req.Stream = func(s string) error { pieces.WriteString(s); return nil }
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		reply, err := e.Reply(ctx, req)
		if tb.runs > fuzzRounds*openai.MaxToolCallsPerRound {
			t.Fatalf("%d tool calls ran in %d rounds", tb.runs, fuzzRounds)
		}
		if err != nil {
			var ae *ams.Error
			if !errors.As(err, &ae) || ae.Kind != ams.EUPSTREAM {
				t.Fatalf("status %d, body %q: %T %v, want an EUPSTREAM *ams.Error", c.status, body, err, err)
			}
			switch ae.Code {
			case openai.CodeError, openai.CodeRateLimited, openai.CodeUnauthorized:
			default:
				t.Fatalf("code %q", ae.Code)
			}
			if len(ae.Message) > 300 || strings.Contains(ae.Message, "secret provider detail") {
				t.Fatalf("message %q", ae.Message)
			}
			return
		}
		if c.status != 200 {
			t.Fatalf("status %d answered with a reply %q", c.status, reply.Content)
		}
		if stream && pieces.String() != reply.Content {
			t.Fatalf("streamed %q, replied %q", pieces.String(), reply.Content)
		}
		if len(reply.Actions) != tb.runs {
			t.Fatalf("%d actions for %d tool runs", len(reply.Actions), tb.runs)
		}
	})
}
