package usage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

var t0 = time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC)

// fakeStore records the batches it is given; err makes AddUsage fail.
type fakeStore struct {
	mu      sync.Mutex
	batches [][]ams.UsageCount
	err     error
	ctxErrs []error       // ctx.Err() of each call
	called  chan struct{} // signalled after each call, if set
}

func (s *fakeStore) AddUsage(ctx context.Context, rows []ams.UsageCount) error {
	s.mu.Lock()
	s.batches = append(s.batches, slices.Clone(rows))
	s.ctxErrs = append(s.ctxErrs, ctx.Err())
	err := s.err
	s.mu.Unlock()
	if s.called != nil {
		s.called <- struct{}{}
	}
	return err
}

func (s *fakeStore) last() []ams.UsageCount {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.batches) == 0 {
		return nil
	}
	return s.batches[len(s.batches)-1]
}

func (s *fakeStore) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.batches)
}

// rowsString renders rows sorted, as "account@HH:MM=allowed/refused".
func rowsString(rows []ams.UsageCount) string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s@%s=%d/%d", r.UserID, r.Minute.Format("Jan2-15:04"), r.Allowed, r.Refused))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestRecorderAggregates(t *testing.T) {
	st := &fakeStore{}
	r := NewRecorder(st)
	// 3 allowed and 1 refused of ann in 23:59 (seconds apart), 2 of ann
	// after midnight, 1 of bob.
	for i, allowed := range []bool{true, true, false, true} {
		r.Record("usr_ann", t0.Add(time.Duration(i*15)*time.Second+999*time.Millisecond), allowed)
	}
	r.Record("usr_ann", t0.Add(time.Minute), true)
	r.Record("usr_ann", t0.Add(time.Minute+59*time.Second), false)
	r.Record("usr_bob", t0.Add(30*time.Second), false)
	if n := r.Pending(); n != 3 {
		t.Fatalf("%d pending counts, want 3 (account, minute) pairs", n)
	}
	if st.calls() != 0 {
		t.Fatal("Record wrote to the store")
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st.calls() != 1 {
		t.Fatalf("%d batches for one flush", st.calls())
	}
	want := "usr_ann@Nov21-23:59=3/1 usr_ann@Nov22-00:00=1/1 usr_bob@Nov21-23:59=0/1"
	if got := rowsString(st.last()); got != want {
		t.Fatalf("flushed %s\nwant    %s", got, want)
	}
	for _, row := range st.last() {
		if row.Minute.Location() != time.UTC || row.Minute.Second() != 0 {
			t.Fatalf("minute %v", row.Minute)
		}
	}
	// Flushed counts are gone; nothing new: no write at all.
	if err := r.Flush(context.Background()); err != nil || st.calls() != 1 || r.Pending() != 0 {
		t.Fatalf("empty flush: %v, %d batches, %d pending", err, st.calls(), r.Pending())
	}
	// The next minute's requests go in the next batch, alone.
	r.Record("usr_ann", t0.Add(2*time.Minute), true)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rowsString(st.last()); got != "usr_ann@Nov22-00:01=1/0" {
		t.Fatalf("second batch: %s", got)
	}
}

// A failed flush keeps its counts for the next one, except those that are
// past the retention by then.
func TestRecorderRetriesFailedFlush(t *testing.T) {
	st := &fakeStore{err: errors.New("database down")}
	now := t0
	r := NewRecorder(st)
	r.Clock = func() time.Time { return now }
	old := t0.Add(-ams.UsageRetention + time.Hour)
	r.Record("usr_ann", old, true)
	r.Record("usr_ann", t0, true)
	if err := r.Flush(context.Background()); err == nil {
		t.Fatal("flush did not report the store's error")
	}
	if r.Pending() != 2 {
		t.Fatalf("%d pending after a failed flush", r.Pending())
	}
	// Meanwhile more requests of the same minute: they add up with the
	// unsaved counts into one row.
	r.Record("usr_ann", t0.Add(10*time.Second), false)
	now = t0.Add(2 * time.Hour) // the old minute is past the retention now
	if err := r.Flush(context.Background()); err == nil {
		t.Fatal("second flush did not fail")
	}
	if got := rowsString(st.last()); got != fmt.Sprintf("usr_ann@Nov21-23:59=1/1 usr_ann@%s=1/0", old.Format("Jan2-15:04")) {
		t.Fatalf("second attempt sent %s", got)
	}
	st.mu.Lock()
	st.err = nil
	st.mu.Unlock()
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rowsString(st.last()); got != "usr_ann@Nov21-23:59=1/1" {
		t.Fatalf("third attempt sent %s (the old minute should be dropped)", got)
	}
	if r.Pending() != 0 {
		t.Fatalf("%d pending after a successful flush", r.Pending())
	}
}

// Run flushes at every tick, and writes nothing when nothing was
// recorded.
func TestRecorderRunTicks(t *testing.T) {
	st := &fakeStore{called: make(chan struct{}, 10)}
	r := NewRecorder(st)
	ticks := make(chan time.Time)
	r.ticks = ticks
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	r.Record("usr_ann", t0, true)
	ticks <- t0
	<-st.called
	if got := rowsString(st.last()); got != "usr_ann@Nov21-23:59=1/0" {
		t.Fatalf("tick flushed %s", got)
	}
	// Run takes a tick only when the previous flush is done.
	ticks <- t0
	ticks <- t0
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st.calls() != 1 {
		t.Fatalf("%d writes, want 1: empty flushes wrote", st.calls())
	}
}

// When its context ends, Run flushes once more, on a context that is not
// cancelled, so that a shutdown loses no counts.
func TestRecorderRunFlushesAtEnd(t *testing.T) {
	st := &fakeStore{}
	r := NewRecorder(st)
	r.ticks = make(chan time.Time) // never ticks
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	r.Record("usr_ann", t0, false)
	r.Record("usr_bob", t0, true)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st.calls() != 1 || rowsString(st.last()) != "usr_ann@Nov21-23:59=0/1 usr_bob@Nov21-23:59=1/0" {
		t.Fatalf("%d batches, last %s", st.calls(), rowsString(st.last()))
	}
	if st.ctxErrs[0] != nil {
		t.Fatalf("the last flush ran on a cancelled context: %v", st.ctxErrs[0])
	}
}

// The last flush's failure is Run's error.
func TestRecorderRunLastFlushFails(t *testing.T) {
	st := &fakeStore{err: errors.New("database down")}
	r := NewRecorder(st)
	r.ticks = make(chan time.Time)
	r.Record("usr_ann", t0, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Run(ctx); err == nil || !strings.Contains(err.Error(), "database down") {
		t.Fatalf("Run: %v", err)
	}
}

// Requests recorded while flushes run are each counted exactly once.
func TestRecorderConcurrent(t *testing.T) {
	st := &fakeStore{}
	r := NewRecorder(st)
	const goroutines, each = 8, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				r.Record(fmt.Sprintf("usr_%d", i%5), t0.Add(time.Duration(i%3)*time.Minute), g%2 == 0)
			}
		})
	}
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
				if err := r.Flush(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-flushed
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var allowed, refused int64
	for _, b := range st.batches {
		for _, row := range b {
			allowed += row.Allowed
			refused += row.Refused
		}
	}
	if allowed != goroutines/2*each || refused != goroutines/2*each {
		t.Fatalf("stored %d allowed, %d refused; want %d each", allowed, refused, goroutines/2*each)
	}
}

func BenchmarkRecord(b *testing.B) {
	r := NewRecorder(&fakeStore{})
	accounts := make([]string, 64)
	for i := range accounts {
		accounts[i] = fmt.Sprintf("usr_%032d", i)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Record(accounts[i%len(accounts)], t0, true)
			i++
		}
	})
}
