package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/webhook"
)

// TestOrderedDelivery: an ordered webhook's receiver, which fails a third
// of the deliveries at random, gets its first successful arrivals in the
// order the events were emitted, never two at once, while two workers
// deliver (on PostgreSQL, each on its own store: two processes) and the
// events are emitted as they run. An unordered webhook of the same
// account gets every event too.
func TestOrderedDelivery(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := sqlitetest.Open(t)
		orderedDelivery(t, db, db)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := pgtest.URL(t)
		schema := pgtest.FreshSchema(t, url)
		orderedDelivery(t, pgtest.OpenSchema(t, url, schema), pgtest.OpenSchema(t, url, schema))
	})
}

func orderedDelivery(t *testing.T, s1, s2 ams.Store) {
	const events = 300
	ctx := context.Background()
	now := time.Now()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "ordered@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := s1.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var arrived []string // first successful arrivals at the ordered receiver
	seen := map[string]bool{}
	open, maxOpen := 0, 0
	done := make(chan struct{})
	ordered := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		open++
		maxOpen = max(maxOpen, open)
		fail := rand.IntN(3) == 0
		mu.Unlock()
		defer func() { mu.Lock(); open--; mu.Unlock() }()
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		mu.Lock()
		if id := r.Header.Get("Webhook-Id"); !seen[id] {
			seen[id] = true
			arrived = append(arrived, id)
			if len(arrived) == events {
				close(done)
			}
		}
		mu.Unlock()
	}))
	t.Cleanup(ordered.Close)
	unordered := make(chan string, 2*events)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		unordered <- r.Header.Get("Webhook-Id")
	}))
	t.Cleanup(plain.Close)
	for _, h := range []*ams.Webhook{
		{URL: ordered.URL, Ordered: true},
		{URL: plain.URL},
	} {
		h.ID, h.UserID, h.Events, h.Active, h.Status, h.Secret, h.CreatedAt, h.UpdatedAt = ams.NewID(ams.PrefixWebhook), u.ID,
			[]string{ams.EventTaskCreated}, true, ams.WebhookActive, "a-very-secret-signing-key", now, now
		if err := s1.CreateWebhook(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	client := (&ssrf.Guard{AllowPrivate: true}).Client(ssrf.Limits{Timeout: time.Minute})
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, s := range []ams.Store{s1, s2} {
		// Failures are retried at once, 30 times at most: the order
		// holds across retries, and no event exhausts its attempts.
		w := &webhook.Worker{Queue: s, Users: s, Client: client, Clock: time.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Schedule: make([]time.Duration, 30), PollInterval: 20 * time.Millisecond}
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(runCtx) }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	var want []string
	for i := range events {
		e := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskCreated,
			Data: map[string]any{"task_id": ams.NewID(ams.PrefixTask)}, CreatedAt: time.Now()}
		// Emitted through both stores in turn, one after the other: the
		// event log's order is this order.
		if err := []ams.Store{s1, s2}[i%2].Emit(ctx, e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e.ID)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d events reached the ordered receiver", len(arrived), events)
	}
	mu.Lock()
	got, most := slices.Clone(arrived), maxOpen
	mu.Unlock()
	if !slices.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("arrival %d is %s, want %s (the %d-th emitted)", i, got[i], want[i], i+1)
			}
		}
	}
	if most != 1 {
		t.Fatalf("the ordered receiver had %d deliveries open at once", most)
	}
	plainSeen := map[string]bool{}
	for len(plainSeen) < events {
		select {
		case id := <-unordered:
			plainSeen[id] = true
		case <-time.After(time.Minute):
			t.Fatalf("%d of %d events reached the unordered receiver", len(plainSeen), events)
		}
	}
}

// BenchmarkOrderedDelivery measures an ordered webhook's deliveries per
// second (one in flight at a time) on SQLite, to a receiver that answers
// after 1 ms and after 50 ms: b.N events emitted, then delivered by one
// worker; the figure is bounded by one round trip, plus a claim and a
// record, per event.
func BenchmarkOrderedDelivery(b *testing.B) {
	for _, delay := range []time.Duration{time.Millisecond, 50 * time.Millisecond} {
		b.Run(delay.String(), func(b *testing.B) {
			s := sqlitetest.Open(b)
			ctx := context.Background()
			now := time.Now()
			u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "bench@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
			if err := s.CreateUser(ctx, u); err != nil {
				b.Fatal(err)
			}
			arrived := make(chan struct{}, b.N)
			rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				time.Sleep(delay)
				arrived <- struct{}{}
			}))
			b.Cleanup(rc.Close)
			h := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: rc.URL, Events: []string{ams.EventTaskCreated}, Active: true,
				Status: ams.WebhookActive, Secret: "a-very-secret-signing-key", Ordered: true, CreatedAt: now, UpdatedAt: now}
			if err := s.CreateWebhook(ctx, h); err != nil {
				b.Fatal(err)
			}
			for range b.N {
				e := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskCreated,
					Data: map[string]any{"task_id": ams.NewID(ams.PrefixTask)}, CreatedAt: time.Now()}
				if err := s.Emit(ctx, e); err != nil {
					b.Fatal(err)
				}
			}
			client := (&ssrf.Guard{AllowPrivate: true}).Client(ssrf.Limits{Timeout: time.Minute})
			w := &webhook.Worker{Queue: s, Users: s, Client: client, Clock: time.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			b.ResetTimer()
			go func() { w.Run(runCtx); close(done) }()
			for range b.N {
				<-arrived
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
			cancel()
			<-done
		})
	}
}
