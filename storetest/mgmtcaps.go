package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
)

// testManagementCaps (issue 26, L7): CountActiveKeys and
// CountOAuthClients, called first in a transaction as the services do,
// count creations of one account one after the other: 12 concurrent
// capped creations against a cap of 5 store exactly 5 keys (and 5
// clients). Revoked and expired keys do not count; another account's
// records do not either.
func testManagementCaps(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "caps@example.com")
	other := mustUser(t, s, "other-caps@example.com")
	errCap := errors.New("cap reached")
	const max = 5
	race := func(create func(tx ams.Tx) error) (ok, refused int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, 12)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Update(ctx, func(tx ams.Tx) error { return create(tx) })
			}()
		}
		wg.Wait()
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, errCap):
				refused++
			default:
				t.Fatalf("create: %v", err)
			}
		}
		return ok, refused
	}
	// Keys: one revoked and one expired first, which do not count, and
	// one of another account.
	key := func(userID string, exp *time.Time) *ams.APIKey {
		_, k := ams.NewAPIKey(userID, "cap", ams.Permissions{ams.PermRead}, t0, exp)
		return k
	}
	revoked, expired := key(u.ID, nil), key(u.ID, ptr(t0.Add(time.Hour)))
	for _, k := range []*ams.APIKey{revoked, expired, key(other.ID, nil)} {
		if err := s.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RevokeKey(ctx, u.ID, revoked.ID, t0); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(2 * time.Hour)
	ok, refused := race(func(tx ams.Tx) error {
		n, err := tx.CountActiveKeys(ctx, u.ID, now)
		if err != nil {
			return err
		}
		if n >= max {
			return errCap
		}
		return tx.CreateKey(ctx, key(u.ID, nil))
	})
	keys, err := s.ListKeys(ctx, u.ID)
	if err != nil || ok != max || refused != 12-max || len(keys) != max+2 {
		t.Fatalf("keys: %d created, %d refused, %d stored (%v); want %d, %d, %d", ok, refused, len(keys), err, max, 12-max, max+2)
	}
	// Before the second key expired, it counted.
	err = s.Update(ctx, func(tx ams.Tx) error {
		n, err := tx.CountActiveKeys(ctx, u.ID, t0)
		if err == nil && n != max+1 {
			t.Errorf("active keys before the expiry: %d, want %d", n, max+1)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// OAuth clients.
	client := func(userID string) *ams.OAuthClient {
		return &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: userID, Name: "App",
			RedirectURIs: []string{"https://app.example/cb"}, SecretHash: ams.HashSecret("s"), CreatedAt: t0, UpdatedAt: t0}
	}
	if err := s.CreateOAuthClient(ctx, client(other.ID)); err != nil {
		t.Fatal(err)
	}
	ok, refused = race(func(tx ams.Tx) error {
		n, err := tx.CountOAuthClients(ctx, u.ID)
		if err != nil {
			return err
		}
		if n >= max {
			return errCap
		}
		return tx.CreateOAuthClient(ctx, client(u.ID))
	})
	clients, err := s.ListOAuthClients(ctx, u.ID)
	if err != nil || ok != max || refused != 12-max || len(clients) != max {
		t.Fatalf("clients: %d created, %d refused, %d stored (%v); want %d, %d, %d", ok, refused, len(clients), err, max, 12-max, max)
	}
}

// testManagementEvents (issue 26, L8): a management event
// (ams.ManagementEventTypes) is queued only for webhooks with
// ManagementEvents, whatever their subscription ("*" included), and
// recovered only for them; EventFilter.NoManagement leaves them out of
// the list; the flag is stored, read back and changed by UpdateWebhook.
func testManagementEvents(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "audit@example.com")
	mk := func(admin bool) *ams.Webhook {
		w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: u.ID, URL: "https://example.com/hook",
			Events: []string{ams.EventAll}, Active: true, Status: ams.WebhookActive, Secret: "secret-of-the-audit-test",
			ManagementEvents: admin, CreatedAt: t0, UpdatedAt: t0}
		if err := s.CreateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	plain, admin := mk(false), mk(true)
	if got, err := s.FindWebhook(ctx, u.ID, admin.ID); err != nil || !got.ManagementEvents {
		t.Fatalf("flag not stored: %+v %v", got, err)
	}
	_, k := ams.NewAPIKey(u.ID, "audited", ams.Permissions{ams.PermRead}, t0, nil)
	task := &ams.Task{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: u.ID, Title: "t", Status: "open", CreatedAt: t0, UpdatedAt: t0}
	if err := s.Emit(ctx, ams.APIKeyEvent(ams.EventAPIKeyCreated, k, t0), ams.TaskEvent(ams.EventTaskCreated, task, t0)); err != nil {
		t.Fatal(err)
	}
	queued := func() map[string][]string {
		t.Helper()
		jobs, err := s.ClaimJobs(ctx, t0.Add(time.Hour), ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for _, j := range jobs {
			got[j.WebhookID] = append(got[j.WebhookID], j.Event.Type)
		}
		for _, l := range got {
			slices.Sort(l)
		}
		return got
	}
	got := queued()
	if !slices.Equal(got[plain.ID], []string{ams.EventTaskCreated}) || !slices.Equal(got[admin.ID], []string{ams.EventAPIKeyCreated, ams.EventTaskCreated}) {
		t.Fatalf("queued: %v", got)
	}
	waitEvents(t, s, u.ID, 2)
	p, err := s.ListEvents(ctx, u.ID, ams.EventFilter{NoManagement: true}, ams.ListParams{Limit: 100})
	if err != nil || len(p.Data) != 1 || p.Data[0].Type != ams.EventTaskCreated {
		t.Fatalf("events without management: %v %v", p, err)
	}
	// Recovery of a fresh webhook of each kind.
	plain2, admin2 := mk(false), mk(true)
	for w, want := range map[string]int64{plain2.ID: 1, admin2.ID: 2} {
		if n, err := s.EnqueueRecovery(ctx, u.ID, w, t0.Add(-time.Minute), t0.Add(time.Minute), t0.Add(time.Hour)); err != nil || n != want {
			t.Fatalf("recovery: %d %v, want %d", n, err, want)
		}
	}
	on := true
	if w, err := s.UpdateWebhook(ctx, u.ID, plain.ID, ams.WebhookUpdate{ManagementEvents: &on}, t0); err != nil || !w.ManagementEvents {
		t.Fatalf("update: %+v %v", w, err)
	}
	if got, _ := s.FindWebhook(ctx, u.ID, plain.ID); !got.ManagementEvents {
		t.Fatal("update of the flag not stored")
	}
}

// waitEvents waits until the account's n events are listed (on
// PostgreSQL an event is listed a moment after its commit).
func waitEvents(t *testing.T, s ams.Store, userID string, n int) {
	t.Helper()
	wait.Eventually(t, fmt.Sprintf("%d events to be listed", n), func() bool {
		p, err := s.ListEvents(context.Background(), userID, ams.EventFilter{}, ams.ListParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Data) >= n
	})
}
