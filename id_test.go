package ams

import (
	"sort"
	"strings"
	"testing"
	"time"
)

// Identifiers made later sort after earlier ones, keep their length and
// alphabet, and do not repeat.
func TestNewIDOrderedAndUnique(t *testing.T) {
	// The time part orders as the time does, across digit carries and far
	// into the future.
	times := []uint64{0, 1, 61, 62, 63, 3843, 3844, uint64(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC).UnixMilli()),
		uint64(time.Date(2026, 11, 24, 0, 0, 0, 1e6, time.UTC).UnixMilli()), uint64(time.Date(8000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())}
	for i := 1; i < len(times); i++ {
		a, b := timeBase62(times[i-1]), timeBase62(times[i])
		if len(a) != 8 || len(b) != 8 || a >= b {
			t.Fatalf("timeBase62(%d) = %q, timeBase62(%d) = %q: not 8 digits in order", times[i-1], a, times[i], b)
		}
	}

	seen := map[string]bool{}
	var ids []string
	for i := 0; i < 50000; i++ {
		id := NewID(PrefixMessage)
		if seen[id] {
			t.Fatalf("NewID repeated %q", id)
		}
		seen[id] = true
		ids = append(ids, id)
		rest := strings.TrimPrefix(id, PrefixMessage)
		if len(rest) != 24 || strings.Trim(rest, base62) != "" {
			t.Fatalf("NewID = %q: want msg_ and 24 base62 characters", id)
		}
	}
	first := NewID(PrefixMessage)
	time.Sleep(2 * time.Millisecond)
	later := NewID(PrefixMessage)
	if later <= first {
		t.Errorf("an id made 2 ms later (%s) sorts before an earlier one (%s)", later, first)
	}
	// Within a millisecond the order is random, so only the time parts
	// are in order.
	if !sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i][4:12] < ids[j][4:12] }) {
		t.Error("the time parts of successive ids are not in order")
	}
}
