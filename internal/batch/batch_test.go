package batch

import (
	"sync"
	"testing"

	"github.com/amsdev/ams/internal/testing/wait"
)

// TestBatches: calls made while a batch runs are answered by the next
// batches, at most Max each, each with its own answer; a lone call runs
// at once.
func TestBatches(t *testing.T) {
	release, holding := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	b := &Batcher[int, int]{Max: 10, Run: func(items []int) []int {
		if items[0] == -1 {
			close(holding)
			<-release
		}
		mu.Lock()
		sizes = append(sizes, len(items))
		mu.Unlock()
		out := make([]int, len(items))
		for i, v := range items {
			out[i] = v * 2
		}
		return out
	}}
	if got := b.Do(21); got != 42 {
		t.Fatalf("lone call: %d", got)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); b.Do(-1) }()
	<-holding // a batch runs: the next calls wait
	got := make([]int, 25)
	for i := range 25 {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = b.Do(i) }()
	}
	wait.Eventually(t, "25 calls to be queued", func() bool { return b.Queued() == 25 })
	close(release)
	wg.Wait()
	for i, v := range got {
		if v != 2*i {
			t.Errorf("call %d answered %d", i, v)
		}
	}
	if want := []int{1, 1, 10, 10, 5}; len(sizes) != len(want) || sizes[2] != 10 || sizes[3] != 10 || sizes[4] != 5 {
		t.Errorf("batch sizes %v, want %v", sizes, want)
	}
}
