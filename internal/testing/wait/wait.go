// Package wait holds Eventually, the one way a test waits for a
// condition that no signal (package testsignal) announces: a record
// listed by another process, an HTTP answer, a file written by a child
// process.
package wait

import (
	"testing"
	"time"
)

// Bound is how long Eventually waits before it fails the test. It only
// matters when the condition never holds: on a loaded machine a step is
// slow, never a minute slow.
const Bound = time.Minute

// Eventually calls cond until it returns true, pausing a little longer
// each time (from 1 ms to 50 ms), and fails the test with what (a noun:
// "the turn to end") if that has not happened after Bound. cond may call
// t.Fatal.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Until(cond) {
		t.Fatalf("waited %v for %s", Bound, what)
	}
}

// Until is Eventually for a test that reports the failure itself (with
// what it last saw): it returns whether cond came true within Bound.
func Until(cond func() bool) bool {
	deadline := time.Now().Add(Bound)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
	return true
}
