package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
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
