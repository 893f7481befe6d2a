package testsignal_test

import (
	"testing"

	"github.com/amsdev/ams/internal/testing/testsignal"
)

func TestOffSignalDoesNothing(t *testing.T) {
	t.Parallel()
	var s testsignal.Signal[int]
	s.Signal(1) // not initialised: no effect, no block
	var nilSignal *testsignal.Signal[int]
	nilSignal.Signal(1)
}

func TestWaitAndRequireEmpty(t *testing.T) {
	t.Parallel()
	var s testsignal.Signal[string]
	s.Init()
	s.RequireEmpty(t)
	go s.Signal("a")
	if got := s.Wait(t); got != "a" {
		t.Fatalf("Wait = %q", got)
	}
	s.Signal("b")
	s.Signal("c")
	if got := s.WaitFor(t, func(v string) bool { return v == "c" }); got != "c" {
		t.Fatalf("WaitFor = %q", got)
	}
	s.RequireEmpty(t)
}

// A signal never blocks its sender: past the buffer the oldest values go.
func TestFullSignalDropsOldest(t *testing.T) {
	t.Parallel()
	var s testsignal.Signal[int]
	s.Init()
	for i := range 5000 {
		s.Signal(i)
	}
	if got := s.Wait(t); got != 4000 {
		t.Fatalf("oldest kept = %d, want 4000", got)
	}
	if n := s.Drain(); n != 999 {
		t.Fatalf("Drain = %d, want 999", n)
	}
}
