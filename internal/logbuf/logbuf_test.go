package logbuf

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/testing/wait"
)

// syncBuffer is a bytes.Buffer safe for the flusher goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestBuffersUntilFlushAndClose(t *testing.T) {
	out := &syncBuffer{}
	w := New(out, 4096, time.Hour)
	w.Write([]byte("line 1\n"))
	if out.String() != "" {
		t.Fatal("written before a flush")
	}
	w.Flush()
	if out.String() != "line 1\n" {
		t.Fatalf("after flush: %q", out.String())
	}
	w.Write([]byte("line 2\n"))
	w.Close()
	if out.String() != "line 1\nline 2\n" {
		t.Fatalf("after close: %q", out.String())
	}
}

func TestFlushesOnInterval(t *testing.T) {
	out := &syncBuffer{}
	w := New(out, 4096, 5*time.Millisecond)
	defer w.Close()
	w.Write([]byte("tick\n"))
	wait.Eventually(t, "the flush of the interval", func() bool { return strings.Contains(out.String(), "tick") })
}

func TestConcurrentLinesStayWhole(t *testing.T) {
	out := &syncBuffer{}
	w := New(out, 256, time.Hour)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				w.Write([]byte(strings.Repeat("x", 30) + "\n"))
			}
		}()
	}
	wg.Wait()
	w.Close()
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if l != strings.Repeat("x", 30) {
			t.Fatalf("torn line %q", l)
		}
	}
}
