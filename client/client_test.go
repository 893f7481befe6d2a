package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams/client"
)

const testKey = "ams_sk_0123456789abcdefghijABCDEFGHIJ0123456789"

// sleeper records the waits between retries instead of sleeping.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func (s *sleeper) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

// newTestClient starts h and returns a client of it that records its
// waits instead of sleeping.
func newTestClient(t *testing.T, h http.HandlerFunc, opts ...client.Option) (*client.Client, *sleeper) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s := &sleeper{}
	opts = append([]client.Option{client.WithSleep(s.sleep)}, opts...)
	return client.New(srv.URL, testKey, opts...), s
}

// writeError answers the API's error body.
func writeError(w http.ResponseWriter, status int, code, message, param, requestID string) {
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "invalid_request_error", 409: "invalid_request_error", 429: "rate_limit_error"}[status]
	if typ == "" {
		typ = "api_error"
	}
	detail := map[string]any{"type": typ, "code": code, "message": message}
	if param != "" {
		detail["param"] = param
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", requestID)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": detail, "request_id": requestID})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_ok")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

const replyJSON = `{"id":"msg_2","object":"message","assistant_id":"ast_1","conversation_id":"conv_1",` +
	`"direction":"outbound","content":"Done.","created_at":"2026-11-21T10:00:00.123Z","updated_at":"2026-11-21T10:00:00.123Z"}`

func writeReply(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/v1/messages/msg_2")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, replyJSON)
}

func TestRequestHeaders(t *testing.T) {
	type seen struct {
		method, path, rawQuery string
		header                 http.Header
	}
	var mu sync.Mutex
	var got []seen
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone()})
		mu.Unlock()
		if r.Method == http.MethodPost {
			writeReply(w)
			return
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{}, "first_id": nil, "last_id": nil, "has_more": false})
	}, client.WithUserAgent("myapp/1.2"))
	ctx := context.Background()
	if _, err := c.ListConversations(ctx, &client.ListConversationsParams{
		ListParams:  client.ListParams{Limit: 5, After: "conv_9", Order: client.OrderAsc},
		AssistantID: "ast_1",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: "ast_1", Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d requests, want 2", len(got))
	}
	for _, s := range got {
		if a := s.header.Get("Authorization"); a != "Bearer "+testKey {
			t.Errorf("%s Authorization = %q", s.method, a)
		}
		if a := s.header.Get("Accept"); a != "application/json" {
			t.Errorf("%s Accept = %q", s.method, a)
		}
		if ua := s.header.Get("User-Agent"); ua != "myapp/1.2 ams-go/"+client.Version {
			t.Errorf("%s User-Agent = %q", s.method, ua)
		}
	}
	list, post := got[0], got[1]
	if list.method != "GET" || list.path != "/v1/conversations" {
		t.Errorf("list request = %s %s", list.method, list.path)
	}
	if want := "after=conv_9&assistant_id=ast_1&limit=5&order=asc"; list.rawQuery != want {
		t.Errorf("list query = %q, want %q", list.rawQuery, want)
	}
	if ct := list.header.Get("Content-Type"); ct != "" {
		t.Errorf("GET without body has Content-Type %q", ct)
	}
	if k := list.header.Get("Idempotency-Key"); k != "" {
		t.Errorf("GET has Idempotency-Key %q", k)
	}
	if post.method != "POST" || post.path != "/v1/messages" {
		t.Errorf("send request = %s %s", post.method, post.path)
	}
	if ct := post.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("POST Content-Type = %q", ct)
	}
}

func TestDefaultUserAgentAndBaseURL(t *testing.T) {
	var ua, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua, path = r.Header.Get("User-Agent"), r.URL.Path
		writeJSON(w, 200, map[string]any{"id": "ast_a/b", "object": "assistant"})
	}))
	defer srv.Close()
	// A trailing "/v1/" on the base URL is not doubled; ids are escaped.
	c := client.New(srv.URL+"/v1/", testKey)
	a, err := c.GetAssistant(context.Background(), "ast_a/b")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "ast_a/b" || a.Object != "assistant" {
		t.Errorf("assistant = %+v", a)
	}
	if ua != "ams-go/"+client.Version {
		t.Errorf("User-Agent = %q", ua)
	}
	if path != "/v1/assistants/ast_a/b" { // r.URL.Path is unescaped
		t.Errorf("path = %q", path)
	}
	if _, err := c.GetAssistant(context.Background(), ""); err == nil {
		t.Error("GetAssistant with an empty id: no error")
	}
}

func TestSendMessage(t *testing.T) {
	var body map[string]any
	var key string
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		key = r.Header.Get("Idempotency-Key")
		body = nil
		json.NewDecoder(r.Body).Decode(&body)
		writeReply(w)
	})
	ctx := context.Background()
	m, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: "ast_1", Message: "hello", IdempotencyKey: "my-key-1"})
	if err != nil {
		t.Fatal(err)
	}
	if key != "my-key-1" {
		t.Errorf("Idempotency-Key = %q, want the caller's", key)
	}
	if want := map[string]any{"assistant_id": "ast_1", "message": "hello"}; fmt.Sprint(body) != fmt.Sprint(want) {
		t.Errorf("body = %v, want %v (no conversation_id when empty)", body, want)
	}
	want := client.Message{ID: "msg_2", Object: "message", AssistantID: "ast_1", ConversationID: "conv_1",
		Direction: client.DirectionOutbound, Content: "Done.",
		CreatedAt: time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC), UpdatedAt: time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC)}
	if !m.CreatedAt.Equal(want.CreatedAt) || m.ID != want.ID || m.ConversationID != want.ConversationID ||
		m.Direction != want.Direction || m.Content != want.Content || m.Object != want.Object {
		t.Errorf("message = %+v, want %+v", *m, want)
	}

	if _, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: "ast_1", Message: "more", ConversationID: "conv_1"}); err != nil {
		t.Fatal(err)
	}
	if body["conversation_id"] != "conv_1" {
		t.Errorf("body = %v, want conversation_id", body)
	}
	if !regexp.MustCompile(`^ams-go-[0-9a-f]{32}$`).MatchString(key) {
		t.Errorf("generated Idempotency-Key = %q", key)
	}
}

func TestErrorDecoding(t *testing.T) {
	var calls atomic.Int32
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeError(w, 400, "parameter_invalid", "'limit' must be an integer from 1 to 100.", "limit", "req_abc123")
	})
	_, err := c.ListAssistants(context.Background(), &client.ListParams{Limit: 1000})
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *client.Error", err, err)
	}
	if e.StatusCode != 400 || e.Type != client.ErrorTypeInvalidRequest || e.Code != "parameter_invalid" ||
		e.Param != "limit" || e.RequestID != "req_abc123" || e.Message != "'limit' must be an integer from 1 to 100." {
		t.Errorf("error = %+v", e)
	}
	msg := e.Error()
	for _, part := range []string{"400", "parameter_invalid", "'limit' must be", "req_abc123"} {
		if !strings.Contains(msg, part) {
			t.Errorf("Error() = %q, lacks %q", msg, part)
		}
	}
	if calls.Load() != 1 || len(s.recorded()) != 0 {
		t.Errorf("a 400 was retried: %d calls, waits %v", calls.Load(), s.recorded())
	}
}

func TestErrorNonJSONBody(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Request-Id", "req_proxy")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html><body>502 Bad Gateway</body></html>")
	}, client.WithMaxRetries(0))
	_, err := c.GetMessage(context.Background(), "msg_1")
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *client.Error", err, err)
	}
	if e.StatusCode != 502 || e.Type != client.ErrorTypeAPI || e.Message != "Bad Gateway" || e.Code != "" || e.RequestID != "req_proxy" {
		t.Errorf("error = %+v", e)
	}
}

func TestRetry429HonoursRetryAfter(t *testing.T) {
	var calls atomic.Int32
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "7")
			writeError(w, 429, "rate_limit_exceeded", "Too many requests.", "", "req_1")
			return
		}
		writeJSON(w, 200, map[string]any{"id": "ast_1", "object": "assistant", "name": "Ada"})
	})
	a, err := c.GetAssistant(context.Background(), "ast_1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "Ada" {
		t.Errorf("assistant = %+v", a)
	}
	if w := s.recorded(); !slices.Equal(w, []time.Duration{7 * time.Second}) {
		t.Errorf("waits = %v, want [7s]", w)
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var calls atomic.Int32
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", now.Add(30*time.Second).Format(http.TimeFormat))
			writeError(w, 503, "unavailable", "Try later.", "", "req_1")
			return
		}
		writeJSON(w, 200, map[string]any{"id": "msg_1", "object": "message"})
	}, client.WithClock(func() time.Time { return now }))
	if _, err := c.GetMessage(context.Background(), "msg_1"); err != nil {
		t.Fatal(err)
	}
	if w := s.recorded(); !slices.Equal(w, []time.Duration{30 * time.Second}) {
		t.Errorf("waits = %v, want [30s]", w)
	}
}

func TestRetryAfterBeyondLimitNotWaited(t *testing.T) {
	var calls atomic.Int32
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "3600")
		writeError(w, 429, "rate_limit_exceeded", "Daily limit reached.", "", "req_1")
	})
	_, err := c.GetMessage(context.Background(), "msg_1")
	var e *client.Error
	if !errors.As(err, &e) || e.RetryAfter != time.Hour {
		t.Fatalf("err = %v, want *Error with RetryAfter 1h", err)
	}
	if calls.Load() != 1 || len(s.recorded()) != 0 {
		t.Errorf("%d calls, waits %v; want no retry of an hour-long wait", calls.Load(), s.recorded())
	}
}

func TestRetry5xxThenSuccess(t *testing.T) {
	var calls atomic.Int32
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			writeError(w, 500, "internal_error", "Oops.", "", "req_1")
		case 2:
			writeError(w, 503, "unavailable", "Busy.", "", "req_2")
		default:
			writeJSON(w, 200, map[string]any{"id": "conv_1", "object": "conversation", "message_count": 4})
		}
	})
	conv, err := c.GetConversation(context.Background(), "conv_1")
	if err != nil {
		t.Fatal(err)
	}
	if conv.MessageCount != 4 {
		t.Errorf("conversation = %+v", conv)
	}
	waits := s.recorded()
	if calls.Load() != 3 || len(waits) != 2 {
		t.Fatalf("%d calls, waits %v; want 3 calls, 2 waits", calls.Load(), waits)
	}
	// Exponential backoff with up to 25 % jitter taken off.
	for i, base := range []time.Duration{500 * time.Millisecond, time.Second} {
		if waits[i] > base || waits[i] < base*3/4 {
			t.Errorf("wait %d = %v, want in [%v, %v]", i, waits[i], base*3/4, base)
		}
	}
}

func TestBackoffCapped(t *testing.T) {
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, 500, "internal_error", "Oops.", "", "req_x")
	}, client.WithMaxRetries(7))
	c.ListIntegrations(context.Background(), nil)
	waits := s.recorded()
	if len(waits) != 7 {
		t.Fatalf("waits = %v, want 7", waits)
	}
	for i, w := range waits[4:] {
		if w > 8*time.Second || w < 6*time.Second {
			t.Errorf("wait %d = %v, want in [6s, 8s]", i+4, w)
		}
	}
}

func TestRetriesExhaustedReturnsLastError(t *testing.T) {
	var calls atomic.Int32
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		writeError(w, 500, "internal_error", "Oops.", "", "req_"+strconv.Itoa(int(n)))
	}, client.WithMaxRetries(2))
	_, err := c.ListEvents(context.Background(), nil)
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *client.Error", err, err)
	}
	if e.StatusCode != 500 || e.Code != "internal_error" || e.RequestID != "req_3" {
		t.Errorf("error = %+v, want the third answer's", e)
	}
	if calls.Load() != 3 || len(s.recorded()) != 2 {
		t.Errorf("%d calls, %d waits; want 3 and 2", calls.Load(), len(s.recorded()))
	}
}

func TestPOSTKeepsIdempotencyKeyAcrossRetries(t *testing.T) {
	var mu sync.Mutex
	var keys, bodies []string
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		bodies = append(bodies, string(b))
		n := len(keys)
		mu.Unlock()
		switch n {
		case 1:
			writeError(w, 502, "engine_error", "The engine failed.", "", "req_1")
		case 2:
			writeError(w, 409, "idempotency_key_in_use", "Still running.", "", "req_2")
		case 3:
			w.Header().Set("Retry-After", "1")
			writeError(w, 429, "rate_limit_exceeded", "Slow down.", "", "req_3")
		default:
			writeReply(w)
		}
	})
	m, err := c.SendMessage(context.Background(), client.SendMessageParams{AssistantID: "ast_1", Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "msg_2" {
		t.Errorf("message = %+v", m)
	}
	if len(keys) != 4 || len(s.recorded()) != 3 {
		t.Fatalf("%d attempts, waits %v; want 4 attempts", len(keys), s.recorded())
	}
	if !regexp.MustCompile(`^ams-go-[0-9a-f]{32}$`).MatchString(keys[0]) {
		t.Errorf("Idempotency-Key = %q", keys[0])
	}
	for i := range keys {
		if keys[i] != keys[0] || bodies[i] != bodies[0] {
			t.Errorf("attempt %d sent key %q body %q; attempt 1 sent %q %q", i+1, keys[i], bodies[i], keys[0], bodies[0])
		}
	}

	// Another call gets another key.
	if _, err := c.SendMessage(context.Background(), client.SendMessageParams{AssistantID: "ast_1", Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if keys[4] == keys[0] {
		t.Errorf("two calls shared Idempotency-Key %q", keys[0])
	}
}

func TestNonIdempotentWithoutKeyNotRetriedOn5xx(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.Header.Get("Idempotency-Key") != "" {
			t.Errorf("PATCH got Idempotency-Key")
		}
		if n == 1 && r.URL.Query().Get("case") == "429" {
			writeError(w, 429, "rate_limit_exceeded", "Slow down.", "", "req_1")
			return
		}
		if r.URL.Query().Get("case") == "429" {
			writeJSON(w, 200, map[string]any{})
			return
		}
		writeError(w, 500, "internal_error", "Oops.", "", "req_1")
	})
	err := c.Request(context.Background(), "PATCH", "/messages/msg_1?case=500", map[string]string{"content": "x"}, nil)
	if err == nil || calls.Load() != 1 {
		t.Errorf("PATCH on 500: err %v after %d calls; want the error after 1 call", err, calls.Load())
	}
	calls.Store(0)
	// A 429 was refused before it ran, so any request is retried.
	if err := c.Request(context.Background(), "PATCH", "/messages/msg_1?case=429", map[string]string{"content": "x"}, nil); err != nil {
		t.Errorf("PATCH after 429: %v", err)
	}
	if calls.Load() != 2 {
		t.Errorf("PATCH after 429: %d calls, want 2", calls.Load())
	}
}

func TestConnectionErrorRetried(t *testing.T) {
	var calls atomic.Int32
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close() // the answer never comes
			return
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{}, "has_more": false})
	})
	if _, err := c.ListAssistants(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || len(s.recorded()) != 1 {
		t.Errorf("%d calls, waits %v; want a retry after the dropped connection", calls.Load(), s.recorded())
	}
}

func TestNetworkErrorWrapped(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	s := &sleeper{}
	c := client.New(url, testKey, client.WithSleep(s.sleep), client.WithMaxRetries(1))
	_, err := c.ListAssistants(context.Background(), nil)
	if err == nil {
		t.Fatal("no error from a closed server")
	}
	var e *client.Error
	if errors.As(err, &e) {
		t.Errorf("network error reported as *client.Error: %v", err)
	}
	if !strings.Contains(err.Error(), "/v1/assistants") || errors.Unwrap(err) == nil {
		t.Errorf("err = %v, want the request named and the cause wrapped", err)
	}
	if len(s.recorded()) != 1 {
		t.Errorf("waits = %v, want one retry", s.recorded())
	}
}

func TestPerAttemptTimeoutRetried(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-r.Context().Done() // hang until the client gives up on this attempt
			return
		}
		writeJSON(w, 200, map[string]any{"id": "ast_1", "object": "assistant"})
	}, client.WithTimeout(100*time.Millisecond))
	if _, err := c.GetAssistant(context.Background(), "ast_1"); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Errorf("%d calls, want 2", calls.Load())
	}
}

func TestContextCancelStopsRetryWait(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "30")
		writeError(w, 429, "rate_limit_exceeded", "Slow down.", "", "req_1")
	}))
	defer srv.Close()
	c := client.New(srv.URL, testKey) // the real sleep
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.GetAssistant(ctx, "ast_1")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %v; the wait ignored the cancellation", d)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 429 {
		t.Errorf("err = %v, want the last *Error wrapped too", err)
	}
	if calls.Load() != 1 {
		t.Errorf("%d calls, want 1", calls.Load())
	}
}

func TestDeadlineBeforeRetryReturnsAtOnce(t *testing.T) {
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		writeError(w, 429, "rate_limit_exceeded", "Slow down.", "", "req_1")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.GetAssistant(ctx, "ast_1")
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 429 {
		t.Errorf("err = %v, want the 429", err)
	}
	if len(s.recorded()) != 0 {
		t.Errorf("waits = %v, want none past the deadline", s.recorded())
	}
}

// listServer serves the records ids (in the list's order) as a paginated
// list, recording each request's query.
type listServer struct {
	ids     []string
	mu      sync.Mutex
	queries []string
	failAt  int // answer the failAt-th request (1-based) with an error; 0 never
}

func (ls *listServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ls.mu.Lock()
	ls.queries = append(ls.queries, r.URL.RawQuery)
	n := len(ls.queries)
	ls.mu.Unlock()
	if n == ls.failAt {
		writeError(w, 400, "resource_missing", "No such object in this list.", "after", "req_fail")
		return
	}
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit == 0 {
		limit = 20
	}
	var page []string
	var more bool
	switch {
	case q.Get("before") != "":
		end := slices.Index(ls.ids, q.Get("before"))
		start := max(end-limit, 0)
		page, more = ls.ids[start:end], start > 0
	default:
		start := 0
		if a := q.Get("after"); a != "" {
			start = slices.Index(ls.ids, a) + 1
		}
		end := min(start+limit, len(ls.ids))
		page, more = ls.ids[start:end], end < len(ls.ids)
	}
	data := []map[string]any{}
	for _, id := range page {
		data = append(data, map[string]any{"id": id, "object": "event", "type": "message.created",
			"created_at": "2026-11-21T10:00:00Z", "data": map[string]any{"message_id": "msg_" + id}})
	}
	body := map[string]any{"object": "list", "data": data, "first_id": nil, "last_id": nil, "has_more": more}
	if len(page) > 0 {
		body["first_id"], body["last_id"] = page[0], page[len(page)-1]
	}
	writeJSON(w, 200, body)
}

func (ls *listServer) recorded() []string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return slices.Clone(ls.queries)
}

func TestPaginationThreePages(t *testing.T) {
	ls := &listServer{ids: []string{"evt_7", "evt_6", "evt_5", "evt_4", "evt_3", "evt_2", "evt_1"}}
	c, _ := newTestClient(t, ls.ServeHTTP)
	p := &client.ListEventsParams{ListParams: client.ListParams{Limit: 3}, Type: "message.created"}
	var got []string
	for ev, err := range c.AllEvents(context.Background(), p) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Data["message_id"] != "msg_"+ev.ID || ev.CreatedAt.IsZero() {
			t.Errorf("event = %+v", ev)
		}
		got = append(got, ev.ID)
	}
	if !slices.Equal(got, ls.ids) {
		t.Errorf("iterated %v, want %v", got, ls.ids)
	}
	want := []string{
		"limit=3&type=message.created",
		"after=evt_5&limit=3&type=message.created",
		"after=evt_2&limit=3&type=message.created",
	}
	if q := ls.recorded(); !slices.Equal(q, want) {
		t.Errorf("queries = %q, want %q", q, want)
	}
	if p.After != "" {
		t.Errorf("the caller's params were changed: %+v", p)
	}
}

func TestPaginationEveryList(t *testing.T) {
	ls := &listServer{ids: []string{"x_4", "x_3", "x_2", "x_1"}}
	c, _ := newTestClient(t, ls.ServeHTTP)
	ctx := context.Background()
	p := &client.ListParams{Limit: 2}
	n := 0
	for _, err := range c.AllAssistants(ctx, p) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, err := range c.AllConversations(ctx, &client.ListConversationsParams{ListParams: *p, AssistantID: "ast_1"}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, err := range c.AllConversationMessages(ctx, "conv_1", p) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, err := range c.AllIntegrations(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 16 {
		t.Errorf("iterated %d records, want 16", n)
	}
	q := ls.recorded()
	if want := "after=x_3&assistant_id=ast_1&limit=2"; q[3] != want {
		t.Errorf("second conversations page query = %q, want %q (filter kept)", q[3], want)
	}
}

func TestPaginationBefore(t *testing.T) {
	ls := &listServer{ids: []string{"evt_7", "evt_6", "evt_5", "evt_4", "evt_3", "evt_2", "evt_1"}}
	c, _ := newTestClient(t, ls.ServeHTTP)
	var got []string
	for ev, err := range c.AllEvents(context.Background(), &client.ListEventsParams{ListParams: client.ListParams{Limit: 2, Before: "evt_2"}}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.ID)
	}
	// Walking back from evt_2: nearest first.
	if want := []string{"evt_3", "evt_4", "evt_5", "evt_6", "evt_7"}; !slices.Equal(got, want) {
		t.Errorf("iterated %v, want %v", got, want)
	}
	want := []string{"before=evt_2&limit=2", "before=evt_4&limit=2", "before=evt_6&limit=2"}
	if q := ls.recorded(); !slices.Equal(q, want) {
		t.Errorf("queries = %q, want %q", q, want)
	}
}

func TestPaginationErrorMidway(t *testing.T) {
	ls := &listServer{ids: []string{"ast_5", "ast_4", "ast_3", "ast_2", "ast_1"}, failAt: 2}
	c, _ := newTestClient(t, ls.ServeHTTP)
	var got []string
	var gotErr error
	for a, err := range c.AllAssistants(context.Background(), &client.ListParams{Limit: 2}) {
		if err != nil {
			if gotErr != nil {
				t.Fatalf("a second error after %v: %v", gotErr, err)
			}
			gotErr = err
			continue // the iterator must end by itself
		}
		got = append(got, a.ID)
	}
	if !slices.Equal(got, []string{"ast_5", "ast_4"}) {
		t.Errorf("iterated %v, want the first page only", got)
	}
	var e *client.Error
	if !errors.As(gotErr, &e) || e.Code != "resource_missing" || e.RequestID != "req_fail" {
		t.Errorf("err = %v, want the second page's *Error", gotErr)
	}
	if n := len(ls.recorded()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestPaginationBreakStopsFetching(t *testing.T) {
	ls := &listServer{ids: []string{"ast_5", "ast_4", "ast_3", "ast_2", "ast_1"}}
	c, _ := newTestClient(t, ls.ServeHTTP)
	for a, err := range c.AllAssistants(context.Background(), &client.ListParams{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if a.ID == "ast_4" {
			break
		}
	}
	if n := len(ls.recorded()); n != 1 {
		t.Errorf("%d requests after breaking on the first page, want 1", n)
	}
}

func TestPaginationStuckCursor(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"object": "list", "data": []map[string]any{{"id": "ast_1"}},
			"first_id": "ast_1", "last_id": "ast_1", "has_more": true})
	})
	n := 0
	var lastErr error
	for _, err := range c.AllAssistants(context.Background(), &client.ListParams{After: "ast_1"}) {
		n++
		lastErr = err
		if n > 10 {
			t.Fatal("the iterator loops on a cursor that does not move")
		}
	}
	if lastErr == nil {
		t.Error("no error for a cursor that does not move")
	}
}

func TestRequestLowLevel(t *testing.T) {
	var method, path, key string
	var body map[string]any
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		method, path, key = r.Method, r.URL.Path, r.Header.Get("Idempotency-Key")
		json.NewDecoder(r.Body).Decode(&body)
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, 201, map[string]any{"id": "wh_1", "object": "webhook"})
	})
	ctx := context.Background()
	var out struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	err := c.Request(ctx, "POST", "/webhooks", map[string]any{"url": "https://example.com/hook"}, &out, client.WithIdempotencyKey("k1"))
	if err != nil {
		t.Fatal(err)
	}
	if method != "POST" || path != "/v1/webhooks" || key != "k1" || body["url"] != "https://example.com/hook" || out.ID != "wh_1" {
		t.Errorf("got %s %s key %q body %v out %+v", method, path, key, body, out)
	}
	if err := c.Request(ctx, "DELETE", "/v1/webhooks/wh_1", nil, &out); err != nil {
		t.Fatal(err)
	}
	if method != "DELETE" || path != "/v1/webhooks/wh_1" {
		t.Errorf("got %s %s", method, path)
	}
}
