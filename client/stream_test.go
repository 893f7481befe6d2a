package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams/client"
)

// writeStream answers the events as Server-Sent Events.
func writeStream(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Request-Id", "req_stream")
	w.WriteHeader(200)
	for _, ev := range events {
		io.WriteString(w, ev)
		w.(http.Flusher).Flush()
	}
}

func delta(s string) string {
	b, _ := json.Marshal(map[string]string{"delta": s})
	return "event: message.delta\ndata: " + string(b) + "\n\n"
}

const completed = "event: message.completed\ndata: " + replyJSON + "\n\n"

func collect(t *testing.T, seq func(func(client.MessageStreamEvent, error) bool)) ([]string, *client.Message, error) {
	t.Helper()
	var deltas []string
	var msg *client.Message
	for ev, err := range seq {
		if err != nil {
			return deltas, msg, err
		}
		switch ev.Type {
		case client.StreamEventDelta:
			deltas = append(deltas, ev.Delta)
		case client.StreamEventCompleted:
			msg = ev.Message
		default:
			t.Fatalf("event type %q", ev.Type)
		}
	}
	return deltas, msg, nil
}

func TestSendMessageStream(t *testing.T) {
	var got map[string]any
	var hdr http.Header
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		hdr = r.Header.Clone()
		json.NewDecoder(r.Body).Decode(&got)
		writeStream(w, ": a comment\n\n", delta("Do"), "event: something.new\ndata: {}\n\n", delta("ne."), completed)
	})
	deltas, msg, err := collect(t, c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: "ast_1", Message: "hi", ConversationID: "conv_1"}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(deltas, "|") != "Do|ne." || msg == nil || msg.ID != "msg_2" || msg.Content != "Done." {
		t.Fatalf("deltas %q, message %+v", deltas, msg)
	}
	if got["stream"] != true || got["assistant_id"] != "ast_1" || got["conversation_id"] != "conv_1" || got["message"] != "hi" {
		t.Errorf("body %v", got)
	}
	if hdr.Get("Accept") != "text/event-stream" || !strings.HasPrefix(hdr.Get("Idempotency-Key"), "ams-go-") || hdr.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("headers %v", hdr)
	}
}

func TestSendMessageStreamRetriesBeforeTheStream(t *testing.T) {
	var n atomic.Int32
	keys := make(chan string, 3)
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "2")
			writeError(w, 429, "rate_limit_exceeded", "slow down", "", "req_1")
			return
		}
		writeStream(w, delta("Done."), completed)
	})
	_, msg, err := collect(t, c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: "ast_1", Message: "hi", IdempotencyKey: "my-key"}))
	if err != nil || msg == nil {
		t.Fatalf("%v %v", msg, err)
	}
	if w := s.recorded(); len(w) != 1 || w[0] != 2*time.Second {
		t.Errorf("waits %v", w)
	}
	if a, b := <-keys, <-keys; a != "my-key" || b != "my-key" {
		t.Errorf("keys %q %q", a, b)
	}
}

func TestSendMessageStreamErrorBeforeTheStream(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, 404, "resource_missing", "No such assistant", "assistant_id", "req_404")
	})
	_, _, err := collect(t, c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: "ast_x", Message: "hi"}))
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "resource_missing" || apiErr.Param != "assistant_id" {
		t.Fatalf("err = %v", err)
	}
}

func TestSendMessageStreamErrorEvent(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeStream(w, delta("Let me"),
			`event: error`+"\n"+`data: {"error":{"type":"api_error","code":"engine_error","message":"The assistant's engine could not reply: it failed."},"request_id":"req_stream"}`+"\n\n")
	})
	deltas, msg, err := collect(t, c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: "ast_1", Message: "hi"}))
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Code != "engine_error" || apiErr.Type != client.ErrorTypeAPI || apiErr.RequestID != "req_stream" || apiErr.StatusCode != 200 {
		t.Fatalf("err = %#v", err)
	}
	if len(deltas) != 1 || msg != nil {
		t.Fatalf("deltas %q message %v", deltas, msg)
	}
}

func TestSendMessageStreamCutOff(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeStream(w, delta("Hal"), "event: message.delta\ndata: {\"del")
	})
	_, _, err := collect(t, c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: "ast_1", Message: "hi"}))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
}

func TestSendMessageStreamNotAStream(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) { writeReply(w) })
	if _, _, err := collect(t, c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: "ast_1", Message: "hi"})); err == nil ||
		!strings.Contains(err.Error(), "not an event stream") {
		t.Fatalf("err = %v", err)
	}
}

func TestSendMessageStreamBreakClosesTheConnection(t *testing.T) {
	gone := make(chan struct{})
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeStream(w, delta("one "))
		for i := 0; ; i++ {
			select {
			case <-r.Context().Done():
				close(gone)
				return
			case <-time.After(10 * time.Millisecond):
				fmt.Fprint(w, delta("more "))
				w.(http.Flusher).Flush()
			}
		}
	})
	for ev, err := range c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: "ast_1", Message: "hi"}) {
		if err != nil || ev.Delta != "one " {
			t.Fatalf("%+v %v", ev, err)
		}
		break
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not see the client leave")
	}
}

func TestSendMessageStreamTimeoutBoundsTheHeadersOnly(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeStream(w, delta("slow "))
		time.Sleep(300 * time.Millisecond) // longer than the timeout, after the headers
		io.WriteString(w, delta("but fine.")+completed)
	}, client.WithTimeout(100*time.Millisecond))
	deltas, msg, err := collect(t, c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: "ast_1", Message: "hi"}))
	if err != nil || msg == nil || len(deltas) != 2 {
		t.Fatalf("%q %v %v", deltas, msg, err)
	}
}
