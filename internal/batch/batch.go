// Package batch gathers concurrent calls into batches: a call that
// arrives while a batch runs waits, and runs with the others that waited,
// in the next one. A lone call runs at once, without waiting for company,
// so batching costs no latency when there is no load. SQLite's group
// commit and the webhook worker's attempt records use it.
package batch

import (
	"context"
	"slices"
	"sync"
)

// Batcher runs calls of T, answered with R, in batches of at most Max
// through Run. The zero value is not usable: set Run.
type Batcher[T, R any] struct {
	// Max bounds a batch; 0 means 64.
	Max int
	// Run runs one batch and returns one answer per item, in order. It
	// runs on the goroutine of one of the callers, one batch at a time.
	Run func(items []T) []R

	mu      sync.Mutex
	queue   []*call[T, R]
	running bool // a caller is running batches
}

type call[T, R any] struct {
	item T
	done chan R
}

// Do runs item in a batch and returns its answer. The first caller to
// find no batch running runs the batches (its own first) until none is
// waiting; the others wait for their answers.
func (b *Batcher[T, R]) Do(item T) R {
	return <-b.enqueue(item).done
}

// enqueue queues item and, when no batch is running, runs the batches
// (item's first) until its own is answered.
func (b *Batcher[T, R]) enqueue(item T) *call[T, R] {
	c := &call[T, R]{item: item, done: make(chan R, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := !b.running
	b.running = true
	b.mu.Unlock()
	if lead {
		b.drain(c)
	}
	return c
}

// DoContext is Do for a caller with a deadline: should ctx end before
// its answer comes, it returns ctx's error at once, taken out of the
// queue if no batch has taken it yet (else the batch runs it and its
// answer is dropped). A leader (the caller that found no batch running)
// runs its own batch first, as Do does: Run bounds that itself.
func (b *Batcher[T, R]) DoContext(ctx context.Context, item T) (R, error) {
	c := b.enqueue(item)
	select {
	case r := <-c.done:
		return r, nil
	case <-ctx.Done():
		b.leave(c)
		var zero R
		return zero, ctx.Err()
	}
}

// DoOrLeave is DoContext for a call whose answer must not be lost, such
// as a write that may commit: should ctx end while the call still waits
// in the queue, it leaves it and returns ctx's error; once a batch has
// taken it, it waits for its answer whatever ctx does.
func (b *Batcher[T, R]) DoOrLeave(ctx context.Context, item T) (R, error) {
	c := b.enqueue(item)
	select {
	case r := <-c.done:
		return r, nil
	case <-ctx.Done():
		if b.leave(c) {
			var zero R
			return zero, ctx.Err()
		}
		return <-c.done, nil
	}
}

// leave takes c out of the queue, if no batch has taken it yet, and
// reports whether it did.
func (b *Batcher[T, R]) leave(c *call[T, R]) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.Index(b.queue, c)
	if i >= 0 {
		b.queue = slices.Delete(b.queue, i, i+1)
	}
	return i >= 0
}

// Queued returns how many calls wait for a batch.
func (b *Batcher[T, R]) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// drain runs batches until the queue is empty. The leader's own call is
// in the first batch; once it is answered the leader hands the rest to a
// new goroutine, so that it returns to its caller at once.
func (b *Batcher[T, R]) drain(own *call[T, R]) {
	max := b.Max
	if max <= 0 {
		max = 64
	}
	for {
		b.mu.Lock()
		n := min(len(b.queue), max)
		if n == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		calls := b.queue[:n:n]
		b.queue = b.queue[n:]
		if len(b.queue) == 0 {
			b.queue = nil
		}
		b.mu.Unlock()
		items := make([]T, n)
		for i, c := range calls {
			items[i] = c.item
		}
		answers := b.Run(items)
		mine := false
		for i, c := range calls {
			c.done <- answers[i]
			mine = mine || c == own
		}
		if mine && own != nil {
			go b.drain(nil) // the others' batches, off the leader's goroutine
			return
		}
	}
}
