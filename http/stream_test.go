package http_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// engineFunc is an engine scripted by a function.
type engineFunc func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error)

func (f engineFunc) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	return f(ctx, req)
}

// useEngine makes every assistant of the fixture answer with e.
func (f *fixture) useEngine(e ams.Engine) {
	f.API.Messages.EngineFor = func(*ams.Assistant) (ams.Engine, error) { return e, nil }
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	id   string
	name string
	data string
}

// readEvent reads the next event of a stream; io.EOF at its end.
func readEvent(br *bufio.Reader) (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF && (ev.name != "" || ev.data != "") {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.name != "" || ev.data != "" {
				return ev, nil
			}
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
}

// readEvents reads a whole stream.
func readEvents(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(body))
	var evs []sseEvent
	for {
		ev, err := readEvent(br)
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatalf("stream: %v\n%s", err, body)
		}
		evs = append(evs, ev)
	}
}

// openStream posts a streamed message and returns the answer unread.
func (f *fixture) openStream(ctx context.Context, t *testing.T, client *http.Client, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", f.Server.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.Key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (f *fixture) streamBody(msg string) string {
	b, _ := json.Marshal(map[string]any{"assistant_id": f.Assistant.ID, "message": msg, "stream": true})
	return string(b)
}

func TestStreamBuiltinEngine(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("POST", "/v1/messages", f.streamBody("Hello! My name is Ada."))
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control %q", cc)
	}
	if r.header.Get("X-Request-Id") == "" || r.header.Get("X-RateLimit-Limit") == "" {
		t.Errorf("headers %v", r.header)
	}
	evs := readEvents(t, r.body)
	if len(evs) < 3 || evs[len(evs)-2].name != "message.completed" || evs[len(evs)-1].name != "turn.completed" {
		t.Fatalf("events %+v", evs)
	}
	if evs[0].name != "turn.started" || evs[0].id != "1" {
		t.Fatalf("first event %+v", evs[0])
	}
	for i, ev := range evs {
		if ev.id != strconv.Itoa(i+1) {
			t.Fatalf("event %d has id %q", i, ev.id)
		}
	}
	if len(evs) < 4 {
		t.Fatalf("the built-in engine's reply came in %d deltas, want it word by word: %+v", len(evs)-2, evs)
	}
	var text strings.Builder
	for _, ev := range evs[1 : len(evs)-2] {
		if ev.name != "message.delta" {
			t.Fatalf("event %q before the completed event", ev.name)
		}
		var d struct{ Delta string }
		if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
			t.Fatal(err)
		}
		text.WriteString(d.Delta)
	}
	var done map[string]any
	if err := json.Unmarshal([]byte(evs[len(evs)-2].data), &done); err != nil {
		t.Fatal(err)
	}
	if done["object"] != "message" || done["direction"] != "outbound" || !strings.Contains(done["content"].(string), "Ada") {
		t.Fatalf("completed %v", done)
	}
	if text.String() != done["content"] {
		t.Fatalf("deltas %q, content %q", text.String(), done["content"])
	}
	stored := f.do("GET", "/v1/messages/"+done["id"].(string), "")
	if stored.status != 200 {
		t.Fatalf("GET the streamed reply: %d %s", stored.status, stored.body)
	}
	if got := stored.json(t); got["content"] != done["content"] || got["conversation_id"] != done["conversation_id"] || got["created_at"] != done["created_at"] {
		t.Fatalf("stored %v, streamed %v", got, done)
	}
	if c := f.counts(); c[0] != 1 || c[1] != 2 {
		t.Fatalf("counts %v", c)
	}
}

func TestStreamFalseIsTheJSONAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"hi","stream":false}`)
	if r.status != 201 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
}

func TestStreamBadInputIsAJSONError(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ast := f.Assistant.ID
	cases := []struct {
		body        string
		status      int
		code, param string
	}{
		{`{"assistant_id":"` + ast + `","stream":true}`, 400, "parameter_missing", "message"},
		{`{"assistant_id":"ast_nothere","message":"hi","stream":true}`, 404, "resource_missing", "assistant_id"},
		{`{"assistant_id":"` + ast + `","message":"hi","stream":"yes"}`, 400, "invalid_type", "stream"},
	}
	for _, c := range cases {
		r := f.do("POST", "/v1/messages", c.body)
		wantError(t, r, c.status, "invalid_request_error", c.code, c.param)
	}
	if c := f.counts(); c != [3]int{} {
		t.Fatalf("stored %v", c)
	}
}

func TestStreamDeltasArriveBeforeCompletion(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"", "k-flush"} {
		t.Run("idempotency key "+key, func(t *testing.T) { testDeltasArriveBeforeCompletion(t, key) })
	}
}

// testDeltasArriveBeforeCompletion checks that each delta is flushed to
// the client at once, also through the idempotency recorder.
func testDeltasArriveBeforeCompletion(t *testing.T, key string) {
	f := setup(t)
	release := make(chan struct{})
	f.useEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		if err := req.Stream("Hel"); err != nil {
			return nil, err
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if err := req.Stream("lo!"); err != nil {
			return nil, err
		}
		return &ams.Reply{Content: "Hello!"}, nil
	}))
	var hdr []string
	if key != "" {
		hdr = []string{"Idempotency-Key", key}
	}
	resp := f.openStream(context.Background(), t, http.DefaultClient, f.streamBody("hi"), hdr...)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	if ev, err := readEvent(br); err != nil || ev.name != "turn.started" || ev.id != "1" || resp.Header.Get("X-Turn-Id") == "" ||
		!strings.Contains(ev.data, resp.Header.Get("X-Turn-Id")) {
		t.Fatalf("first event %+v %v", ev, err)
	}
	first := make(chan sseEvent, 1)
	go func() {
		ev, _ := readEvent(br)
		first <- ev
	}()
	select {
	case ev := <-first:
		if ev.name != "message.delta" || ev.data != `{"delta":"Hel"}` {
			t.Fatalf("first event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first delta did not arrive while the engine was still answering")
	}
	if c := f.counts(); c != [3]int{1, 1, 2} {
		t.Fatalf("before the reply: %v, want the conversation and the inbound message with their events", c)
	}
	close(release)
	ev, err := readEvent(br)
	if err != nil || ev.name != "message.delta" || ev.data != `{"delta":"lo!"}` {
		t.Fatalf("second event %+v %v", ev, err)
	}
	ev, err = readEvent(br)
	if err != nil || ev.name != "message.completed" || !strings.Contains(ev.data, `"content":"Hello!"`) {
		t.Fatalf("last event %+v %v", ev, err)
	}
	if ev, err = readEvent(br); err != nil || ev.name != "turn.completed" || !strings.Contains(ev.data, `"status":"completed"`) {
		t.Fatalf("lifecycle event %+v %v", ev, err)
	}
	if _, err := readEvent(br); err != io.EOF {
		t.Fatalf("after message.completed: %v, want the end of the stream", err)
	}
	if c := f.counts(); c[0] != 1 || c[1] != 2 {
		t.Fatalf("counts %v", c)
	}
}

func TestStreamEngineFailsMidStream(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.useEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		if err := req.Stream("Let me think"); err != nil {
			return nil, err
		}
		return nil, errors.New("model exploded: secret detail")
	}))
	r := f.do("POST", "/v1/messages", f.streamBody("hi"), "Idempotency-Key", "k-fail")
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	evs := readEvents(t, r.body)
	if len(evs) != 4 || evs[0].name != "turn.started" || evs[1].name != "message.delta" || evs[2].name != "error" || evs[3].name != "turn.failed" {
		t.Fatalf("events %+v", evs)
	}
	evs = evs[1:]
	var body struct {
		Error struct {
			Type, Code, Message string
		}
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(evs[1].data), &body); err != nil {
		t.Fatal(err)
	}
	if body.Error.Type != "api_error" || body.Error.Code != "engine_error" || body.RequestID != r.header.Get("X-Request-Id") ||
		strings.Contains(body.Error.Message, "secret") {
		t.Fatalf("error event %s", evs[1].data)
	}
	if c := f.counts(); c != [3]int{1, 1, 3} {
		t.Fatalf("a failed stream stored %v, want its conversation and inbound message with their events, and turn.failed", c)
	}
	// The failure released the key: the same request may be retried, and
	// resumes the turn.
	f.useEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		return &ams.Reply{Content: "Fine now."}, nil
	}))
	r = f.do("POST", "/v1/messages", f.streamBody("hi"), "Idempotency-Key", "k-fail")
	evs = readEvents(t, r.body)
	if r.header.Get("Idempotent-Replayed") != "" || len(evs) != 4 || evs[0].name != "turn.started" || evs[0].id != "5" ||
		!strings.Contains(evs[0].data, `"resumed":true`) || evs[2].name != "message.completed" || evs[2].id != "7" || evs[3].name != "turn.completed" {
		t.Fatalf("retry: %v %s", r.header, r.body)
	}
	if c := f.counts(); c != [3]int{1, 2, 5} {
		t.Fatalf("after the retry: %v", c)
	}
}

func TestStreamEngineFailsBeforeAnyText(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.useEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		return nil, &ams.Error{Kind: ams.EUPSTREAM, Code: "engine_rate_limited", Message: "The assistant's engine could not reply: rate-limited."}
	}))
	r := f.do("POST", "/v1/messages", f.streamBody("hi"))
	evs := readEvents(t, r.body)
	if r.status != 200 || len(evs) != 3 || evs[0].name != "turn.started" || evs[1].name != "error" || evs[2].name != "turn.failed" ||
		!strings.Contains(evs[1].data, `"code":"engine_rate_limited"`) || !strings.Contains(evs[1].data, `"type":"api_error"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestStreamIdempotentReplay(t *testing.T) {
	t.Parallel()
	f := setup(t)
	body := f.streamBody("Hello! My name is Ada.")
	first := f.do("POST", "/v1/messages", body, "Idempotency-Key", "k-stream")
	if first.status != 200 {
		t.Fatalf("%d %s", first.status, first.body)
	}
	second := f.do("POST", "/v1/messages", body, "Idempotency-Key", "k-stream")
	if second.status != 200 || second.header.Get("Idempotent-Replayed") != "true" ||
		second.header.Get("Content-Type") != "text/event-stream" || !bytes.Equal(first.body, second.body) {
		t.Fatalf("replay: %d %v\n%s\nfirst:\n%s", second.status, second.header, second.body, first.body)
	}
	if c := f.counts(); c[1] != 2 {
		t.Fatalf("counts %v: the replay sent the message again", c)
	}
	// The same key with stream false is another request.
	r := f.do("POST", "/v1/messages", strings.Replace(body, `"stream":true`, `"stream":false`, 1), "Idempotency-Key", "k-stream")
	wantError(t, r, 409, "invalid_request_error", "idempotency_key_reused", "")
}

// TestStreamClientDisconnects: a client that leaves mid-stream does not
// end the turn: it completes, its reply is stored, and a resume from the
// last event id the client saw gives exactly the events it missed.
func TestStreamClientDisconnects(t *testing.T) {
	t.Parallel()
	f := setup(t)
	release := make(chan struct{})
	finished := make(chan error, 1)
	f.useEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		req.Stream("Hel")
		<-release
		err := errors.Join(req.Stream("lo"), req.Stream(" there"), ctx.Err())
		finished <- err
		return &ams.Reply{Content: "Hello there"}, err
	}))
	ctx, cancel := context.WithCancel(context.Background())
	resp := f.openStream(ctx, t, http.DefaultClient, f.streamBody("hi"))
	turnID := resp.Header.Get("X-Turn-Id")
	br := bufio.NewReader(resp.Body)
	var seen []sseEvent
	for range 2 {
		ev, err := readEvent(br)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev)
	}
	if seen[0].name != "turn.started" || seen[1].name != "message.delta" || seen[1].id != "2" {
		t.Fatalf("first events %+v", seen)
	}
	cancel()
	resp.Body.Close()
	f.App.Messages.Signals.FollowerLeft.Wait(t) // the server noticed the client left
	close(release)
	select {
	case err := <-finished:
		if err != nil {
			t.Fatalf("the turn was disturbed by the client leaving: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the engine did not finish")
	}
	turn := f.waitTurn(turnID)
	if turn["status"] != "completed" || turn["reply_message_id"] == "" {
		t.Fatalf("turn after the client left: %v", turn)
	}
	reply := f.do("GET", "/v1/messages/"+turn["reply_message_id"].(string), "").json(t)
	if reply["content"] != "Hello there" {
		t.Fatalf("reply %v", reply)
	}
	// Resume after the last event seen.
	r := f.do("GET", "/v1/turns/"+turnID+"/events", "", "Last-Event-ID", seen[1].id)
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	evs := readEvents(t, r.body)
	want := []string{"3 message.delta", "4 message.delta", "5 message.completed", "6 turn.completed"}
	if len(evs) != len(want) {
		t.Fatalf("resumed events %+v, want %v", evs, want)
	}
	for i, ev := range evs {
		if ev.id+" "+ev.name != want[i] {
			t.Fatalf("resumed events %+v, want %v", evs, want)
		}
	}
	// From the start, and a bad Last-Event-ID.
	if evs := readEvents(t, f.do("GET", "/v1/turns/"+turnID+"/events", "").body); len(evs) != 6 {
		t.Fatalf("whole stream: %+v", evs)
	}
	wantError(t, f.do("GET", "/v1/turns/"+turnID+"/events", "", "Last-Event-ID", "x"), 400, "invalid_request_error", "parameter_invalid", "Last-Event-ID")
	wantError(t, f.do("GET", "/v1/turns/trn_nothere/events", ""), 404, "invalid_request_error", "resource_missing", "")
}
