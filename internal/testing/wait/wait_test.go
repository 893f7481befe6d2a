package wait_test

import (
	"sync/atomic"
	"testing"

	"github.com/amsdev/ams/internal/testing/wait"
)

func TestEventually(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	wait.Eventually(t, "the third call", func() bool { return n.Add(1) >= 3 })
	if n.Load() != 3 {
		t.Fatalf("cond called %d times, want 3", n.Load())
	}
	if !wait.Until(func() bool { return true }) {
		t.Fatal("Until of a true condition returned false")
	}
}
