// Package testsignal lets tests wait for the moments they care about in
// background work (a job claimed, a delivery recorded, a reminder pass
// ended, a turn finished) instead of sleeping or polling, as River's
// testsignal does.
//
// Production code holds a Signal in a field (usually grouped in a
// struct named Signals) and calls Signal at the point; a test calls Init
// on the field before the work starts, then Wait for what it expects, or
// RequireEmpty to show that something did not happen. A Signal that was
// not initialised costs a nil check: production never initialises one.
//
// This package is imported by production code, so it does not import
// package testing: a test's *testing.T is a TB.
package testsignal

import (
	"time"
)

// Bound is how long Wait waits before it fails the test. It only matters
// when the signal never comes: a loaded machine is slow, never a minute
// slow for one step.
const Bound = time.Minute

// buffer is how many signals wait unread before the oldest are dropped.
const buffer = 1000

// TB is the part of testing.TB that a Signal uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Signal carries values of type T from production code to a test. The
// zero Signal is off: Signal does nothing.
type Signal[T any] struct {
	ch chan T
}

// Init turns the signal on. Call it before the code that fires it starts
// (the field is read without a lock).
func (s *Signal[T]) Init() { s.ch = make(chan T, buffer) }

// Signal sends v to the test, if the signal is on. It never blocks: when
// the test has left many signals unread, the oldest is dropped.
func (s *Signal[T]) Signal(v T) {
	if s == nil || s.ch == nil {
		return
	}
	for {
		select {
		case s.ch <- v:
			return
		default:
		}
		select {
		case <-s.ch:
		default:
		}
	}
}

// Wait returns the next value, failing the test after Bound.
func (s *Signal[T]) Wait(t TB) T {
	t.Helper()
	s.on(t)
	timer := time.NewTimer(Bound)
	defer timer.Stop()
	select {
	case v := <-s.ch:
		return v
	case <-timer.C:
		t.Fatalf("testsignal: no signal after %v", Bound)
		panic("unreachable")
	}
}

// WaitFor returns the first value that match accepts, dropping the
// others, failing the test after Bound.
func (s *Signal[T]) WaitFor(t TB, match func(T) bool) T {
	t.Helper()
	s.on(t)
	timer := time.NewTimer(Bound)
	defer timer.Stop()
	for {
		select {
		case v := <-s.ch:
			if match(v) {
				return v
			}
		case <-timer.C:
			t.Fatalf("testsignal: no matching signal after %v", Bound)
			panic("unreachable")
		}
	}
}

// WaitPass is for a signal that a loop fires at the end of each pass:
// it returns the value of the first pass that began after the call (so
// that saw everything done before it), dropping the values waiting and
// the one of the pass under way.
func (s *Signal[T]) WaitPass(t TB) T {
	t.Helper()
	s.Drain()
	s.Wait(t) // the pass under way, which may have begun before the call
	return s.Wait(t)
}

// Drain drops the values not read yet and returns how many there were.
func (s *Signal[T]) Drain() int {
	n := 0
	for {
		select {
		case <-s.ch:
			n++
		default:
			return n
		}
	}
}

// RequireEmpty fails the test if a value is waiting unread.
func (s *Signal[T]) RequireEmpty(t TB) {
	t.Helper()
	s.on(t)
	select {
	case v := <-s.ch:
		t.Fatalf("testsignal: unexpected signal %v", v)
	default:
	}
}

// C returns the channel the values come on, for a select.
func (s *Signal[T]) C() <-chan T { return s.ch }

func (s *Signal[T]) on(t TB) {
	t.Helper()
	if s.ch == nil {
		t.Fatalf("testsignal: the signal was not initialised (call Init before the code runs)")
	}
}
