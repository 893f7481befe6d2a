// Package logbuf buffers log output so that a busy server does not make one
// write system call per log line. The buffer is flushed when it fills, at
// a fixed interval, and on Close; a crash loses at most one interval of
// log lines, never any data.
package logbuf

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// Writer is a buffered, periodically flushed, concurrency-safe writer.
type Writer struct {
	mu   sync.Mutex
	buf  *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

// New returns a Writer on w that flushes every interval.
func New(w io.Writer, size int, interval time.Duration) *Writer {
	lw := &Writer{buf: bufio.NewWriterSize(w, size), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				lw.Flush()
			case <-lw.stop:
				return
			}
		}
	}()
	return lw
}

// Write buffers p (one log line, from slog).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Flush()
}

// Close stops the flusher and flushes what is left.
func (w *Writer) Close() error {
	close(w.stop)
	<-w.done
	return w.Flush()
}
