package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/amsdev/ams/messaging"
)

// Streamed replies: POST /v1/messages with "stream": true answers
// Server-Sent Events (text/event-stream) instead of one JSON body:
//
//	event: message.delta
//	data: {"delta":"Hello"}
//
//	event: message.delta
//	data: {"delta":" Ada!"}
//
//	event: message.completed
//	data: {"id":"msg_…","object":"message",…,"content":"Hello Ada!",…}
//
// The deltas put together are the reply's content; message.completed
// carries the stored reply, the body a request without "stream" gets, and
// is sent only after the exchange is stored. An error after the first
// event is one "event: error" whose data is the API's error body, and
// nothing is stored. Either message.completed or error is the last event;
// then the server closes the stream. Errors found before the first event
// (bad input, unknown assistant, an engine that fails before producing
// text) are ordinary JSON error answers with their status.

// Event names of a streamed reply.
const (
	EventMessageDelta     = "message.delta"
	EventMessageCompleted = "message.completed"
	EventError            = "error"
)

// sseWriter writes the events of one streamed answer, flushing each. The
// headers (status 200) are sent with the first event. It is safe for
// concurrent use.
type sseWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	deltas  int
	err     error // the first write error: the client is gone
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// send writes one event whose data is v as JSON.
func (s *sseWriter) send(event string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return s.sendRaw(event, bytes.TrimRight(buf.Bytes(), "\n"))
}

// sendRaw writes one event with data, which must be one line.
func (s *sseWriter) sendRaw(event string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	if event == EventMessageDelta {
		s.deltas++
	}
	b := make([]byte, 0, len(event)+len(data)+16)
	b = append(b, "event: "...)
	b = append(b, event...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return err
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
		return err
	}
	return nil
}

func (s *sseWriter) state() (started bool, deltas int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started, s.deltas
}

// deltaData is the data of a message.delta event.
type deltaData struct {
	Delta string `json:"delta"`
}

// streamMessage sends a message and streams the reply as it is produced.
func (s *Server) streamMessage(w http.ResponseWriter, r *http.Request, userID string, in messaging.SendInput) error {
	sse := newSSEWriter(w)
	ctx := r.Context()
	in.Stream = func(delta string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if delta == "" {
			return nil
		}
		return sse.send(EventMessageDelta, deltaData{Delta: delta})
	}
	reply, err := s.Messages.Send(ctx, userID, in)
	started, deltas := sse.state()
	if err != nil {
		if !started {
			return err // nothing streamed yet: the ordinary JSON error answer
		}
		s.streamError(w, r, sse, err)
		return nil
	}
	if deltas == 0 {
		// An engine that does not stream: its whole text is one delta, so
		// that the deltas always make up the content.
		sse.send(EventMessageDelta, deltaData{Delta: reply.Content})
	}
	if err := sse.send(EventMessageCompleted, reply); err != nil {
		// Stored, but the client left before hearing so; a retry with the
		// same Idempotency-Key replays the whole stream.
		s.Logger.Info("client left before the completed event", "request_id", requestID(ctx), "message", reply.ID)
	}
	return nil
}

// streamError ends a stream that has begun with an error event carrying
// the API's error body, and keeps the answer out of idempotent replay.
func (s *Server) streamError(w http.ResponseWriter, r *http.Request, sse *sseWriter, err error) {
	markFailed(w)
	var cw captureWriter
	s.writeError(&cw, r, err)
	s.Logger.Warn("streamed reply failed", "request_id", requestID(r.Context()), "status", cw.status, "err", err)
	sse.sendRaw(EventError, bytes.TrimRight(cw.body.Bytes(), "\n"))
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

// captureWriter keeps an answer in memory: the error body of an error
// event is written by writeError into it.
type captureWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *captureWriter) Header() http.Header {
	if c.header == nil {
		c.header = http.Header{}
	}
	return c.header
}

func (c *captureWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(b)
}
