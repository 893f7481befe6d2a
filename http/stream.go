package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/messaging"
)

// Streamed replies: POST /v1/messages with "stream": true answers
// Server-Sent Events (text/event-stream) instead of one JSON body. Every
// event has an id, the number of the event in its turn's stream (from 1;
// a retry that resumes a failed turn goes on numbering), so that a client
// can resume the stream with GET /v1/turns/{id}/events and a
// Last-Event-ID header:
//
//	id: 1
//	event: turn.started
//	data: {"turn_id":"trn_…","inbound_message_id":"msg_…","conversation_id":"conv_…","assistant_id":"ast_…","resumed":false}
//
//	id: 2
//	event: tool_call
//	data: {"turn_id":"trn_…","call_seq":1,"name":"create_task","arguments":{"title":"Call Bob"}}
//
//	id: 3
//	event: tool_result
//	data: {"turn_id":"trn_…","call_seq":1,"name":"create_task","action":{"id":"act_…",…},"replayed":false}
//
//	id: 4
//	event: message.delta
//	data: {"delta":"Hello"}
//
//	id: 5
//	event: message.completed
//	data: {"id":"msg_…","object":"message",…,"content":"Hello Ada!",…}
//
// turn.started comes first and names the turn. tool_call and tool_result
// tell each tool call of the engine (call_seq numbers them within the
// turn; replayed is true when a resumed turn found the call committed by
// an earlier attempt and did not run it again). The message.delta events
// put together are the reply's content. message.completed carries the stored reply, the body a request
// without "stream" gets, and is sent only after the reply is stored. A
// failure is one "event: error" whose data is the API's error body (the
// turn is then failed, or cancelled with code turn_cancelled); the tool
// calls committed before it stay (see docs/architecture.md, "Turns").
// Either message.completed or error is the last event; then the server
// closes the stream. While nothing else is sent, a comment line
// (": keep-alive") goes out every 15 s, so that proxies with an idle
// timeout keep the connection. Errors found before the turn starts (bad
// input, unknown assistant) are ordinary JSON error answers with their
// status.
//
// The turn does not depend on the stream: a client that disconnects
// leaves it running to its end, and may read its reply (GET /v1/turns/{id}
// gives reply_message_id) or resume its stream.

// Event names of a streamed reply.
const (
	EventTurnStarted      = messaging.EventTurnStarted
	EventToolCall         = messaging.EventToolCall
	EventToolResult       = messaging.EventToolResult
	EventMessageDelta     = messaging.EventMessageDelta
	EventMessageCompleted = messaging.EventMessageCompleted
	EventError            = messaging.EventError
)

// DefaultKeepAlive is the interval of keep-alive comments in a stream.
const DefaultKeepAlive = 15 * time.Second

// streamWriteTimeout bounds one write of a stream (an event or a
// keep-alive) to a client that does not read.
const streamWriteTimeout = 60 * time.Second

// sseWriter writes the events of one streamed answer, flushing each. The
// headers (status 200) are sent with the first event. It is safe for
// concurrent use.
type sseWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	last    string // the type of the last event sent
	err     error  // the first write error: the client is gone
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// send writes one event whose data is v as JSON.
func (s *sseWriter) send(id, event string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return s.sendRaw(id, event, bytes.TrimRight(buf.Bytes(), "\n"))
}

// start sends the headers (status 200) if no event has.
func (s *sseWriter) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(nil)
}

func (s *sseWriter) writeLocked(b []byte) error {
	if s.err != nil {
		return s.err
	}
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no") // no buffering in nginx and the like
		h.Del("Content-Length")
		s.w.WriteHeader(http.StatusOK)
	}
	// A stream lasts as long as its turn, longer than the server's
	// WriteTimeout may allow: each write gets its own deadline instead, so
	// a client that stops reading is still let go.
	s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if len(b) > 0 {
		if _, err := s.w.Write(b); err != nil {
			s.err = err
			return err
		}
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
		return err
	}
	return nil
}

// sendRaw writes one event with data, which must be one line.
func (s *sseWriter) sendRaw(id, event string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := make([]byte, 0, len(id)+len(event)+len(data)+24)
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "event: "...)
	b = append(b, event...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	s.last = event
	return s.writeLocked(b)
}

// keepAlive writes a comment line.
func (s *sseWriter) keepAlive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil
	}
	return s.writeLocked([]byte(": keep-alive\n\n"))
}

func (s *sseWriter) lastEvent() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// keepAliveEvery sends keep-alive comments on sse every interval until
// the returned function is called.
func (s *Server) keepAliveEvery(sse *sseWriter) (stop func()) {
	every := s.KeepAlive
	if every <= 0 {
		every = DefaultKeepAlive
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if sse.keepAlive() != nil {
					return
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}

// sendTurnEvent writes a stored turn event; an error event gets the
// request's id, as every error body does.
func (s *Server) sendTurnEvent(r *http.Request, sse *sseWriter, e *ams.TurnEvent) error {
	data := bytes.TrimRight(e.Data, "\n")
	if e.Type == EventError && len(data) > 1 && data[len(data)-1] == '}' {
		id, _ := json.Marshal(requestID(r.Context()))
		data = append(append(append(data[:len(data)-1:len(data)-1], `,"request_id":`...), id...), '}')
	}
	return sse.sendRaw(strconv.FormatInt(e.Seq, 10), e.Type, data)
}

// streamMessage starts a turn and streams its events as they come. A
// client that leaves ends only the stream.
func (s *Server) streamMessage(w http.ResponseWriter, r *http.Request, userID string, in messaging.SendInput) error {
	run, err := s.Messages.Start(r.Context(), userID, in)
	if err != nil {
		return err // nothing started: the ordinary JSON error answer
	}
	w.Header().Set("X-Turn-Id", run.Turn.ID)
	sse := newSSEWriter(w)
	if err := sse.start(); err != nil {
		markFailed(w)
		return nil
	}
	stop := s.keepAliveEvery(sse)
	defer stop()
	send := func(e *ams.TurnEvent) error { return s.sendTurnEvent(r, sse, e) }
	if run.Replayed {
		// The key's turn had completed: its last attempt's stream again.
		evs, err := s.Messages.LastAttempt(r.Context(), run.Turn.ID)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if send(e) != nil {
				break
			}
		}
	} else {
		err = run.Follow(r.Context(), run.FirstSeq()-1, send)
	}
	if last := sse.lastEvent(); last != EventMessageCompleted && last != messaging.EventTurnCompleted && last != messaging.EventTurnRequiresAction {
		// A failed turn, or a client that left: the key is released, so
		// that a retry with it finds the turn (resumes it, or replays its
		// reply).
		markFailed(w)
		if err != nil {
			s.Logger.Info("stream ended before its turn", "request_id", requestID(r.Context()), "turn", run.Turn.ID, "err", err)
		}
	}
	return nil
}

// streamTurn answers GET /v1/turns/{id}/events: the turn's stream from
// after the Last-Event-ID header's event (from the start without it), live
// while the turn runs (polling the store when it runs in another process),
// to its last event.
func (s *Server) streamTurn(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var after int64
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return ams.ParamError("parameter_invalid", "Last-Event-ID", "The Last-Event-ID header must be the id of an event of the turn's stream (a number).")
		}
		after = n
	}
	userID := auth(r).User.ID
	if _, err := s.Messages.Turn(r.Context(), userID, id); err != nil {
		return err
	}
	sse := newSSEWriter(w)
	if err := sse.start(); err != nil {
		return nil
	}
	stop := s.keepAliveEvery(sse)
	defer stop()
	err := s.Messages.FollowStored(r.Context(), userID, id, after, s.StreamPoll, func(e *ams.TurnEvent) error { return s.sendTurnEvent(r, sse, e) })
	if err != nil && r.Context().Err() == nil {
		s.Logger.Warn("turn stream", "request_id", requestID(r.Context()), "turn", id, "err", err)
	}
	return nil
}

// markFailed tells the idempotency layer that an answer whose status was
// 200 failed after all, so that its key is released rather than stored.
func markFailed(w http.ResponseWriter) {
	for {
		switch x := w.(type) {
		case *recorder:
			x.failed = true
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}
