package sqlstore

import (
	"testing"
	"time"
)

// TestPurgePace: a purge's batches start small, double while they take
// less than half of PurgeHold, shrink to what fits PurgeHold after one
// that took longer, and stay between minPurgeBatch and PurgeBatch.
func TestPurgePace(t *testing.T) {
	p := newPurgePace()
	if p.size != 64 {
		t.Fatalf("first batch %d, want 64", p.size)
	}
	steps := []struct {
		took time.Duration
		want int
	}{
		{time.Millisecond, 128}, {time.Millisecond, 256}, {time.Millisecond, 512}, {time.Millisecond, 1000}, {time.Millisecond, 1000},
		{4 * time.Millisecond, 1000}, // between half and all of PurgeHold: kept
		{50 * time.Millisecond, 100}, // a tenth of it fits
		{time.Second, minPurgeBatch}, // never fewer than minPurgeBatch
		{time.Second, minPurgeBatch},
		{0, 2 * minPurgeBatch},
	}
	for i, s := range steps {
		p.took(s.took)
		if p.size != s.want {
			t.Fatalf("step %d (took %v): batch %d, want %d", i, s.took, p.size, s.want)
		}
	}
}
