package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/webhook"
)

// TestNoisyNeighbour is the fairness scenario of issue 13, on both
// engines: account A has 100 webhooks to a receiver that does not answer
// and a backlog of 1,000 deliveries; account B's 100 events must still
// reach B's receiver while every one of A's deliveries is still waiting
// for its answer. The worker's timeout is set far beyond the test, so that
// no slot of A's is freed during it: without the per-account cap A would
// hold every slot, and B's deliveries would wait for A's to time out;
// without taking accounts in turn, for A's whole backlog. Either way B's
// events would not arrive. The test asserts that mechanism, not a latency
// figure (which a loaded machine can break).
func TestNoisyNeighbour(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := sqlitetest.Open(t)
		noisyNeighbour(t, db)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		noisyNeighbour(t, pgtest.Open(t))
	})
}

func noisyNeighbour(t *testing.T, s ams.Store) {
	const (
		hooksA  = 100
		backlog = 1000
		eventsB = 100
	)
	ctx := context.Background()
	now := time.Now()
	user := func(email string) *ams.User {
		u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: email, Plan: ams.PlanEnterprise, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	hook := func(u *ams.User, url string) {
		w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: url, Events: []string{ams.EventTaskCreated},
			Active: true, Status: ams.WebhookActive, Secret: "a-very-secret-signing-key", CreatedAt: now, UpdatedAt: now}
		if err := s.CreateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	event := func(u *ams.User) *ams.Event {
		return &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskCreated,
			Data: map[string]any{"task_id": ams.NewID(ams.PrefixTask)}, CreatedAt: time.Now()}
	}

	const perAccount = webhook.DefaultPerAccount
	release := make(chan struct{})
	var openA, maxOpenA int
	var mu sync.Mutex
	aHeld := make(chan struct{}, hooksA*8)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		openA++
		maxOpenA = max(maxOpenA, openA)
		mu.Unlock()
		aHeld <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		mu.Lock()
		openA--
		mu.Unlock()
	}))
	arrivedB := make(chan string, eventsB)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrivedB <- r.Header.Get("Webhook-Id")
	}))
	t.Cleanup(fast.Close)

	a, b := user("noisy@example.com"), user("quiet@example.com")
	for range hooksA {
		hook(a, slow.URL)
	}
	hook(b, fast.URL)
	for range backlog / hooksA { // each event reaches A's 100 webhooks
		if err := s.Emit(ctx, event(a)); err != nil {
			t.Fatal(err)
		}
	}
	// The client's and the worker's timeouts outlast the test.
	client := (&ssrf.Guard{AllowPrivate: true}).Client(ssrf.Limits{Timeout: time.Hour})
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	w := &webhook.Worker{Queue: s, Users: s, Client: client, Clock: time.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Timeout: time.Hour, PerAccount: perAccount}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(runCtx); close(done) }()
	t.Cleanup(func() { close(release); cancel(); <-done; slow.Close() })
	// A's deliveries now take every slot A may hold.
	for range perAccount {
		select {
		case <-aHeld:
		case <-time.After(60 * time.Second):
			t.Fatal("A's deliveries did not start")
		}
	}
	want := map[string]bool{}
	for range eventsB {
		e := event(b)
		want[e.ID] = true
		if err := s.Emit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for len(want) > 0 {
		select {
		case id := <-arrivedB:
			delete(want, id)
		case <-time.After(60 * time.Second):
			t.Fatalf("%d of B's %d events did not arrive while A's deliveries held their slots", len(want), eventsB)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if openA != perAccount || maxOpenA != perAccount {
		t.Fatalf("A had %d deliveries open (at most %d); the per-account cap is %d", openA, maxOpenA, perAccount)
	}
}
