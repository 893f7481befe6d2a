// Package usage meters the API's requests per account and draws them.
//
// The Recorder counts, in memory, every /v1 request the rate limiter
// decided on, per account and clock minute (allowed, and refused with a
// 429), and adds its counts to the store every FlushInterval with one
// batch (ams.UsageStore.AddUsage). A request thus costs a map increment,
// never a database write, and since the store adds rather than sets,
// every process serving the database flushes its own counts and the
// stored rows are the sums.
//
// Load reads what the usage page shows (the last 24 hours by the minute,
// the last 30 UTC days by the day), and Chart draws a series against its
// limit as an inline SVG with a data table beside it.
package usage

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"time"
	"unsafe"

	"github.com/amsdev/ams"
)

// FlushInterval is how often Run writes the counts to the store when
// Recorder.Interval is not set: the usage page lags at most this much.
const FlushInterval = 10 * time.Second

// finalFlushTimeout bounds the flush of Run when its context ends (at
// shutdown), which runs on a context of its own.
const finalFlushTimeout = 10 * time.Second

// Adder stores counts: ams.UsageStore's AddUsage.
type Adder interface {
	AddUsage(ctx context.Context, rows []ams.UsageCount) error
}

const shardCount = 32

type key struct {
	account string
	minute  int64 // Unix minutes
}

type counts struct{ allowed, refused int64 }

type shardState struct {
	mu sync.Mutex
	m  map[key]*counts
}

// shard pads its state to its own cache lines, so that neighbouring locks
// do not share one.
type shard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte
}

// Recorder aggregates request counts in memory and flushes them to a
// store. Its methods are safe for concurrent use. Create it with
// NewRecorder.
type Recorder struct {
	// Interval is the time between two flushes of Run (default
	// FlushInterval).
	Interval time.Duration
	// Clock tells which counts that could not be stored are too old to
	// keep retrying (older than ams.UsageRetention); nil is the wall clock.
	Clock  ams.Clock
	Logger *slog.Logger

	store  Adder
	seed   maphash.Seed
	shards [shardCount]shard

	flushMu sync.Mutex
	unsaved []ams.UsageCount // counts of failed flushes, retried by the next

	ticks <-chan time.Time // tests: replaces Run's ticker
}

// NewRecorder returns a Recorder that flushes to store.
func NewRecorder(store Adder) *Recorder {
	return &Recorder{store: store, seed: maphash.MakeSeed()}
}

// Record counts one request of account at at: allowed by the rate limiter,
// or refused. It is called on every rate-limited request: it takes one
// short lock of one of many shards and allocates only for the first
// request of an account in a minute.
func (r *Recorder) Record(account string, at time.Time, allowed bool) {
	k := key{account, minuteOf(at)}
	s := &r.shards[maphash.String(r.seed, account)%shardCount]
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[key]*counts)
	}
	c := s.m[k]
	if c == nil {
		c = &counts{}
		s.m[k] = c
	}
	if allowed {
		c.allowed++
	} else {
		c.refused++
	}
	s.mu.Unlock()
}

// minuteOf returns the Unix minute of t (floored, also before 1970).
func minuteOf(t time.Time) int64 {
	s := t.Unix()
	m := s / 60
	if s%60 < 0 {
		m--
	}
	return m
}

// take removes and returns the counts recorded so far.
func (r *Recorder) take() []ams.UsageCount {
	var rows []ams.UsageCount
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		m := s.m
		if len(m) == 0 {
			s.mu.Unlock()
			continue
		}
		s.m = make(map[key]*counts, len(m))
		s.mu.Unlock()
		// m is this function's alone now.
		for k, c := range m {
			rows = append(rows, ams.UsageCount{UserID: k.account, Minute: time.Unix(k.minute*60, 0).UTC(), Allowed: c.allowed, Refused: c.refused})
		}
	}
	return rows
}

// Pending returns the number of (account, minute) counts not yet stored.
func (r *Recorder) Pending() int {
	n := 0
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	r.flushMu.Lock()
	n += len(r.unsaved)
	r.flushMu.Unlock()
	return n
}

// Flush adds the counts recorded since the last flush to the store, in one
// batch. If the store fails, the counts are kept and added to the next
// flush (those older than ams.UsageRetention are dropped then).
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	rows := append(r.unsaved, r.take()...)
	r.unsaved = nil
	if len(rows) == 0 {
		return nil
	}
	rows = ams.MergeUsage(rows)
	if err := r.store.AddUsage(ctx, rows); err != nil {
		cutoff := r.Clock.Now().Add(-ams.UsageRetention)
		for _, row := range rows {
			if !row.Minute.Before(cutoff) {
				r.unsaved = append(r.unsaved, row)
			}
		}
		return err
	}
	return nil
}

// Run flushes every Interval until ctx ends, then flushes a last time (on
// a context of its own, for at most 10 s) so that a shutdown loses no
// counts; it returns the error of that last flush. A failed periodic
// flush is logged and retried by the next.
func (r *Recorder) Run(ctx context.Context) error {
	ticks := r.ticks
	if ticks == nil {
		every := r.Interval
		if every <= 0 {
			every = FlushInterval
		}
		t := time.NewTicker(every)
		defer t.Stop()
		ticks = t.C
	}
	logger := r.Logger
	if logger == nil {
		logger = slog.Default()
	}
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
			defer cancel()
			if err := r.Flush(fctx); err != nil {
				return fmt.Errorf("usage: last flush: %w", err)
			}
			return nil
		case <-ticks:
			if err := r.Flush(ctx); err != nil && ctx.Err() == nil {
				logger.Warn("store usage counts; retrying at the next flush", "err", err, "pending", r.Pending())
			}
		}
	}
}
