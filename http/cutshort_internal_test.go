package http

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
)

// TestErrorAfterTheAnswerBegan: an error returned after the handler began
// its answer adds nothing to the answer (no error body after a status line
// already sent). A write to a client that went away (broken pipe, reset,
// the write deadline) is logged at info, not as an internal error; any
// other error is logged as an error. Before the answer began, an error is
// answered with the error body as always.
func TestErrorAfterTheAnswerBegan(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := &Server{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	partial := `{"id":"msg_1","content":"`
	for _, c := range []struct {
		name, level, msg string
		err              error
	}{
		{"broken pipe", "INFO", "response cut short: the client went away", fmt.Errorf("write: %w", syscall.EPIPE)},
		{"reset", "INFO", "response cut short: the client went away",
			&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}},
		{"write deadline", "INFO", "response cut short: the client went away", fmt.Errorf("write: %w", os.ErrDeadlineExceeded)},
		{"another error", "ERROR", "error after the response began", errors.New("encode the rest: boom")},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs.Reset()
			h := s.withRequestID(s.wrap(func(w http.ResponseWriter, r *http.Request) error {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				w.Write([]byte(partial))
				return c.err
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/messages/msg_1", nil))
			if rec.Code != http.StatusOK || rec.Body.String() != partial {
				t.Errorf("answer %d %q, want 200 and only what the handler wrote", rec.Code, rec.Body.String())
			}
			lines := logLines(t, &logs)
			found := false
			for _, l := range lines {
				if l["msg"] == "internal error" {
					t.Errorf("logged as an internal error: %v", l)
				}
				if l["msg"] == c.msg {
					found = true
					if l["level"] != c.level || l["request_id"] == "" || l["err"] == nil {
						t.Errorf("log line %v, want level %s with the request id and the error", l, c.level)
					}
				}
			}
			if !found {
				t.Errorf("no %q line in the log:\n%s", c.msg, logs.String())
			}
		})
	}
	t.Run("before the answer began", func(t *testing.T) {
		logs.Reset()
		h := s.withRequestID(s.wrap(func(w http.ResponseWriter, r *http.Request) error {
			return fmt.Errorf("write: %w", syscall.EPIPE)
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/messages/msg_1", nil))
		var body errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 500 || body.Error.Code != "internal_error" || body.RequestID == "" {
			t.Errorf("answer %d %s (%v), want 500 with the error body", rec.Code, rec.Body.String(), err)
		}
	})
}

// logLines parses JSON log lines.
func logLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}
