package client_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/amsdev/ams/client"
)

// TestNotModified: the client sends no If-None-Match, but a 304 may
// still reach it (a caching proxy, or a caller's own header through a
// transport). It is an *Error with status 304 and the answer's ETag in
// Header, returned at once without a retry, never a decode failure.
func TestNotModified(t *testing.T) {
	var calls atomic.Int32
	c, s := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("If-None-Match") != "" {
			t.Errorf("the client sent If-None-Match %q", r.Header.Get("If-None-Match"))
		}
		w.Header().Set("ETag", `W/"abc"`)
		w.Header().Set("X-Request-Id", "req_304")
		w.WriteHeader(http.StatusNotModified)
	})
	task, err := c.GetTask(context.Background(), "task_1")
	var e *client.Error
	if task != nil || !errors.As(err, &e) || e.StatusCode != http.StatusNotModified || e.Header.Get("ETag") != `W/"abc"` || e.RequestID != "req_304" {
		t.Fatalf("GetTask on 304: %v, %#v", task, err)
	}
	if calls.Load() != 1 || len(s.recorded()) != 0 {
		t.Fatalf("%d calls, waits %v: a 304 is not retried", calls.Load(), s.recorded())
	}
}
