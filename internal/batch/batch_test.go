package batch

import (
	"context"
	"errors"
	"slices"
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

// TestDoContext: a call whose context ends while it waits returns at once
// with the context's error and leaves the queue, so that no batch runs
// it; the calls beside it are answered as usual.
func TestDoContext(t *testing.T) {
	release, holding := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var ran []int
	b := &Batcher[int, int]{Run: func(items []int) []int {
		if items[0] == -1 {
			close(holding)
			<-release
		}
		mu.Lock()
		ran = append(ran, items...)
		mu.Unlock()
		return items
	}}
	if got, err := b.DoContext(context.Background(), 7); got != 7 || err != nil {
		t.Fatalf("lone call: %d %v", got, err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); b.Do(-1) }()
	<-holding
	ctx, cancel := context.WithCancel(context.Background())
	gave := make(chan error, 1)
	go func() { _, err := b.DoContext(ctx, 1); gave <- err }()
	got := 0
	go func() { defer wg.Done(); got, _ = b.DoContext(context.Background(), 2) }()
	wait.Eventually(t, "two calls to be queued", func() bool { return b.Queued() == 2 })
	cancel()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("a call whose context ended: %v", err)
	}
	if n := b.Queued(); n != 1 {
		t.Fatalf("%d calls queued after one gave up, want 1", n)
	}
	close(release)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if got != 2 || !slices.Equal(ran, []int{7, -1, 2}) {
		t.Fatalf("answered %d; batches ran %v, want [7 -1 2]", got, ran)
	}
}

// TestDoOrLeave: a call whose context ends while it waits in the queue
// leaves it, as DoContext's does; one whose context ends after a batch
// took it gets the batch's answer.
func TestDoOrLeave(t *testing.T) {
	release, holding := make(chan struct{}), make(chan struct{})
	taken, finish := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var ran []int
	b := &Batcher[int, int]{Run: func(items []int) []int {
		switch items[0] {
		case -1:
			close(holding)
			<-release
		case 2:
			close(taken)
			<-finish
		}
		mu.Lock()
		ran = append(ran, items...)
		mu.Unlock()
		out := make([]int, len(items))
		for i, v := range items {
			out[i] = v * 10
		}
		return out
	}}
	go b.Do(-1)
	<-holding
	ctx1, cancel1 := context.WithCancel(context.Background())
	gave := make(chan error, 1)
	go func() { _, err := b.DoOrLeave(ctx1, 1); gave <- err }()
	wait.Eventually(t, "the call to be queued", func() bool { return b.Queued() == 1 })
	cancel1()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("a queued call whose context ended: %v", err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	type answer struct {
		v   int
		err error
	}
	got := make(chan answer, 1)
	go func() { v, err := b.DoOrLeave(ctx2, 2); got <- answer{v, err} }()
	wait.Eventually(t, "the call to be queued", func() bool { return b.Queued() == 1 })
	close(release)
	<-taken // its batch runs: its context ends meanwhile
	cancel2()
	close(finish)
	if a := <-got; a.v != 20 || a.err != nil {
		t.Fatalf("a taken call whose context ended: %d %v, want its answer 20", a.v, a.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(ran, []int{-1, 2}) {
		t.Fatalf("batches ran %v, want [-1 2]", ran)
	}
}
