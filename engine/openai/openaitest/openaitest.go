// Package openaitest is a fake chat-completions server for tests: it
// speaks OpenAI's protocol (JSON answers, and Server-Sent Events chunks
// ending in "data: [DONE]" when the request asks for "stream": true) and
// answers each request with the next step of a script, recording every
// request it gets.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Request is a request the server received.
type Request struct {
	Header http.Header
	Body   map[string]any // the decoded JSON body
}

// Stream reports whether the request asked for a streamed answer.
func (r *Request) Stream() bool { b, _ := r.Body["stream"].(bool); return b }

// Messages returns the request's messages.
func (r *Request) Messages() []map[string]any {
	var out []map[string]any
	list, _ := r.Body["messages"].([]any)
	for _, m := range list {
		mm, _ := m.(map[string]any)
		out = append(out, mm)
	}
	return out
}

// Step answers one request.
type Step func(w http.ResponseWriter, r *http.Request, req *Request)

// Server is a running fake server.
type Server struct {
	// URL is the API root to give the engine as its base URL (".../v1").
	URL string

	t        testing.TB
	srv      *httptest.Server
	mu       sync.Mutex
	steps    []Step
	requests []*Request
	repeat   Step
	release  chan struct{}
	close    sync.Once
}

// New starts a server that answers with steps, in order; it is closed when
// the test ends. A request beyond the script fails the test and is
// answered 500, unless Repeat set a step for it.
func New(t testing.TB, steps ...Step) *Server {
	s := &Server{t: t, steps: steps, release: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Close releases the requests that hang and stops the server.
func (s *Server) Close() {
	s.close.Do(func() {
		close(s.release)
		s.srv.Close()
	})
}

// Push appends steps to the script.
func (s *Server) Push(steps ...Step) {
	s.mu.Lock()
	s.steps = append(s.steps, steps...)
	s.mu.Unlock()
}

// Repeat answers every request beyond the script with step.
func (s *Server) Repeat(step Step) {
	s.mu.Lock()
	s.repeat = step
	s.mu.Unlock()
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("openaitest: unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := &Request{Header: r.Header.Clone()}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		s.t.Errorf("openaitest: request body is not JSON: %v: %s", err, raw)
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var step Step
	if len(s.steps) > 0 {
		step, s.steps = s.steps[0], s.steps[1:]
	} else {
		step = s.repeat
	}
	s.mu.Unlock()
	if step == nil {
		s.t.Errorf("openaitest: request %d is beyond the script", len(s.Requests()))
		Error(http.StatusInternalServerError, "", "no more steps")(w, r, req)
		return
	}
	step(w, r, req)
}

// Call is a tool call of the model.
type Call struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

// Text answers the pieces of text as one message: in a JSON answer they
// are joined; streamed, each piece is one chunk.
func Text(pieces ...string) Step { return Answer(pieces, nil) }

// ToolCalls answers with the tool calls (and no text).
func ToolCalls(calls ...Call) Step { return Answer(nil, calls) }

// Answer answers the text pieces and then the tool calls. Streamed, each
// call arrives split over chunks: its id and name first, then its
// arguments in three parts.
func Answer(pieces []string, calls []Call) Step {
	return Reply{Pieces: pieces, Calls: calls}.Step()
}

// Reply is an answer in full: its text pieces, its tool calls, its
// finish reason ("" is "tool_calls" with calls, "stop" without) and its
// usage (zero is 10 prompt and 5 completion tokens).
type Reply struct {
	Pieces       []string
	Calls        []Call
	Finish       string
	PromptTokens int
	OutputTokens int
}

// Step answers with r. Streamed, the usage comes in a last chunk
// without choices when the request's stream_options ask for it.
func (rp Reply) Step() Step {
	pieces, calls := rp.Pieces, rp.Calls
	return func(w http.ResponseWriter, r *http.Request, req *Request) {
		finish := rp.Finish
		if finish == "" {
			finish = "stop"
			if len(calls) > 0 {
				finish = "tool_calls"
			}
		}
		in, out := rp.PromptTokens, rp.OutputTokens
		if in == 0 && out == 0 {
			in, out = 10, 5
		}
		usage := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
		model, _ := req.Body["model"].(string)
		if !req.Stream() {
			msg := map[string]any{"role": "assistant", "content": join(pieces)}
			if len(calls) > 0 {
				var tcs []any
				for _, c := range calls {
					tcs = append(tcs, map[string]any{"id": c.ID, "type": "function",
						"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
				}
				msg["tool_calls"] = tcs
				if len(pieces) == 0 {
					msg["content"] = nil
				}
			}
			writeJSON(w, http.StatusOK, map[string]any{
				"id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": model,
				"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
				"usage":   usage,
			})
			return
		}
		sw := StartStream(w)
		sw.Chunk(model, map[string]any{"role": "assistant", "content": ""}, "")
		for _, p := range pieces {
			sw.Chunk(model, map[string]any{"content": p}, "")
		}
		for i, c := range calls {
			sw.Chunk(model, map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": ""}}}}, "")
			for _, part := range thirds(c.Arguments) {
				sw.Chunk(model, map[string]any{"tool_calls": []any{map[string]any{"index": i,
					"function": map[string]any{"arguments": part}}}}, "")
			}
		}
		sw.Chunk(model, map[string]any{}, finish)
		if so, _ := req.Body["stream_options"].(map[string]any); so["include_usage"] == true {
			b, _ := json.Marshal(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1700000000,
				"model": model, "choices": []any{}, "usage": usage})
			sw.Data(string(b))
		}
		sw.Done()
	}
}

// Error answers status with an OpenAI error body. retryAfter, when not
// empty, is sent as Retry-After.
func Error(status int, retryAfter, message string) Step {
	return func(w http.ResponseWriter, r *http.Request, req *Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		writeJSON(w, status, map[string]any{"error": map[string]any{
			"message": message, "type": "test_error", "param": nil, "code": "test_" + strconv.Itoa(status)}})
	}
}

// Raw answers status with body as it is.
func Raw(status int, contentType, body string) Step {
	return func(w http.ResponseWriter, r *http.Request, req *Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// Hang answers nothing until the client gives up (or the test ends).
func (s *Server) Hang() Step {
	return func(w http.ResponseWriter, r *http.Request, req *Request) {
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
	}
}

// HangAfter streams the text pieces, then hangs like Hang without
// finishing the answer.
func (s *Server) HangAfter(pieces ...string) Step {
	return func(w http.ResponseWriter, r *http.Request, req *Request) {
		model, _ := req.Body["model"].(string)
		sw := StartStream(w)
		for _, p := range pieces {
			sw.Chunk(model, map[string]any{"content": p}, "")
		}
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
	}
}

// Gate returns a step that waits for a value on release before it answers
// with step, and a channel on which it reports that the request arrived.
func Gate(step Step, release <-chan struct{}) (Step, <-chan struct{}) {
	arrived := make(chan struct{}, 1)
	return func(w http.ResponseWriter, r *http.Request, req *Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-time.After(30 * time.Second):
		}
		step(w, r, req)
	}, arrived
}

// StreamWriter writes a Server-Sent Events answer.
type StreamWriter struct {
	w http.ResponseWriter
}

// StartStream sends the headers of an event stream.
func StartStream(w http.ResponseWriter) *StreamWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	return &StreamWriter{w: w}
}

// Data sends one event with data as it is.
func (s *StreamWriter) Data(data string) {
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Chunk sends a chat.completion.chunk with the delta of choice 0 and, when
// not empty, its finish reason.
func (s *StreamWriter) Chunk(model string, delta map[string]any, finish string) {
	var fr any
	if finish != "" {
		fr = finish
	}
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1700000000,
		"model": model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fr, "logprobs": nil}}})
	s.Data(string(b))
}

// Done ends the stream with "data: [DONE]".
func (s *StreamWriter) Done() { s.Data("[DONE]") }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func join(pieces []string) string {
	var s string
	for _, p := range pieces {
		s += p
	}
	return s
}

// thirds splits s into three parts (some may be empty), between runes.
func thirds(s string) []string {
	r := []rune(s)
	n := len(r)
	return []string{string(r[:n/3]), string(r[n/3 : 2*n/3]), string(r[2*n/3:])}
}
