package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
)

// testKeyGrants: an API key an OAuth grant made (APIKey.OAuthClientID,
// OAuthGrantID) is revoked with the grant, in the same transaction, with
// its api_key.revoked event and a move of the authentication generation:
// by RevokeGrant (RFC 7009 revocation, refresh-token reuse), by
// RevokeGrants (the user revokes the app) and by DeleteOAuthClient. Keys
// the account holder made, keys of another grant and another account's
// keys stay (until the client itself is deleted). A refresh's DeactivateGrant leaves the grant's keys alone. A
// key of a grant with no live token is refused and not stored.
func testKeyGrants(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "grantkeys@example.com")
	other := mustUser(t, s, "grantkeys2@example.com")
	client := func(owner *ams.User, name string) *ams.OAuthClient {
		t.Helper()
		c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: owner.ID, Name: name,
			RedirectURIs: []string{"https://app.example/cb"}, SecretHash: ams.HashSecret("s"), CreatedAt: t0, UpdatedAt: t0}
		if err := s.CreateOAuthClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	app, app2 := client(u, "App"), client(u, "Other app")
	grant := func(c *ams.OAuthClient, user *ams.User, req string) {
		t.Helper()
		for _, kind := range []string{ams.TokenAccess, ams.TokenRefresh} {
			if err := s.CreateOAuthToken(ctx, &ams.OAuthToken{Signature: kind + "-" + req, Kind: kind, RequestID: req, ClientID: c.ID,
				UserID: user.ID, Scopes: []string{"admin"}, Active: true, Data: []byte(`{}`), ExpiresAt: t0.Add(time.Hour), CreatedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
	}
	grant(app, u, "g1")
	grant(app, u, "g2")
	grant(app2, u, "g3")
	grant(app, other, "g4") // another account's grant of the same app
	exp := t0.Add(time.Hour)
	key := func(owner *ams.User, name string, c *ams.OAuthClient, req string) *ams.APIKey {
		t.Helper()
		_, k := ams.NewAPIKey(owner.ID, name, ams.Permissions{ams.PermAdmin}, t0, &exp)
		if c != nil {
			k.OAuthClientID, k.OAuthGrantID = c.ID, req
		}
		if err := s.CreateKey(ctx, k); err != nil {
			t.Fatalf("create key %s: %v", name, err)
		}
		return k
	}
	k1, k1b := key(u, "by g1", app, "g1"), key(u, "by g1 too", app, "g1")
	k2 := key(u, "by g2", app, "g2")
	k3 := key(u, "by g3", app2, "g3")
	k4 := key(other, "other's by g4", app, "g4")
	own := key(u, "the holder's", nil, "")
	if got, err := s.FindKey(ctx, k1.ID); err != nil || got.OAuthClientID != app.ID || got.OAuthGrantID != "g1" {
		t.Fatalf("stored key's grant: %+v %v", got, err)
	}
	if r := k1.Record(t0); r.OAuthClientID == nil || *r.OAuthClientID != app.ID {
		t.Fatalf("record of a grant's key: %+v", r)
	}
	if r := own.Record(t0); r.OAuthClientID != nil {
		t.Fatalf("record of the holder's key names a client: %+v", r)
	}

	gen := func() int64 {
		t.Helper()
		g, err := s.AuthGeneration(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	revoked := func(what string, want ...*ams.APIKey) {
		t.Helper()
		for _, k := range []*ams.APIKey{k1, k1b, k2, k3, k4, own} {
			got, err := s.FindKey(ctx, k.ID)
			if err != nil {
				t.Fatal(err)
			}
			if w := slices.Contains(want, k); (got.RevokedAt != nil) != w {
				t.Errorf("%s: key %q revoked at %v, want revoked %v", what, k.Name, got.RevokedAt, w)
			}
		}
	}
	// revokedEvents lists the user's api_key.revoked events (key ids),
	// once at least want are listed or after a while: on PostgreSQL a
	// list shows an event once no transaction that began before it is
	// still running, and the other tests run transactions meanwhile.
	revokedEvents := func(user *ams.User, want int) []string {
		t.Helper()
		var ids []string
		wait.Until(func() bool {
			pg, err := s.ListEvents(ctx, user.ID, ams.EventFilter{Type: ams.EventAPIKeyRevoked}, ams.ListParams{Limit: 50, Order: ams.OrderAsc})
			if err != nil {
				t.Fatal(err)
			}
			ids = nil
			for _, e := range pg.Data {
				id, _ := e.Data["id"].(string)
				ids = append(ids, id)
			}
			return len(ids) >= want
		})
		return ids
	}

	// A refresh retires the grant's tokens; its keys live on.
	if err := s.DeactivateGrant(ctx, ams.TokenAccess, "g1"); err != nil {
		t.Fatal(err)
	}
	revoked("a refresh")

	// Revoking the grant (RFC 7009, refresh-token reuse) revokes its keys.
	g := gen()
	if err := s.RevokeGrant(ctx, ams.TokenRefresh, "g1", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	revoked("revoke grant g1", k1, k1b)
	if got := gen(); got <= g {
		t.Errorf("revoking a grant's keys left the auth generation at %d", got)
	}
	if got, _ := s.FindKey(ctx, k1.ID); got.RevokedAt == nil || !got.RevokedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("revoked_at %v, want %v", got.RevokedAt, t0.Add(time.Minute))
	}
	if ev := revokedEvents(u, 2); len(ev) != 2 || !slices.Contains(ev, k1.ID) || !slices.Contains(ev, k1b.ID) {
		t.Errorf("api_key.revoked events after revoking g1: %v", ev)
	}
	// Again: nothing more, no event.
	if err := s.RevokeGrant(ctx, ams.TokenAccess, "g1", t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ev := revokedEvents(u, 2); len(ev) != 2 {
		t.Errorf("revoking g1 again emitted events: %v", ev)
	}
	// A grant with no live token makes no key.
	_, late := ams.NewAPIKey(u.ID, "late", ams.Permissions{ams.PermRead}, t0, &exp)
	late.OAuthClientID, late.OAuthGrantID = app.ID, "g1"
	if err := s.CreateKey(ctx, late); ams.ErrorKindOf(err) != ams.EFORBIDDEN {
		t.Fatalf("key of a revoked grant: %v, want EFORBIDDEN", err)
	}
	if _, err := s.FindKey(ctx, late.ID); !ams.IsNotFound(err) {
		t.Fatalf("a refused key was stored: %v", err)
	}

	// The user revokes the app: the keys of every grant of it go, the
	// other account's grant of it stays.
	g = gen()
	if err := s.RevokeGrants(ctx, u.ID, app.ID, t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	revoked("revoke the app", k1, k1b, k2)
	if got := gen(); got <= g {
		t.Errorf("revoking the app's keys left the auth generation at %d", got)
	}
	if ev := revokedEvents(u, 3); len(ev) != 3 || !slices.Contains(ev, k2.ID) {
		t.Errorf("api_key.revoked events after revoking the app: %v", ev)
	}

	// Deleting a client revokes its grants' keys.
	g = gen()
	if err := s.DeleteOAuthClient(ctx, u.ID, app2.ID, t0.Add(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	revoked("delete the other app", k1, k1b, k2, k3)
	if got := gen(); got <= g {
		t.Errorf("deleting a client left the auth generation at %d", got)
	}
	if ev := revokedEvents(u, 4); len(ev) != 4 || !slices.Contains(ev, k3.ID) {
		t.Errorf("api_key.revoked events after deleting the client: %v", ev)
	}
	if ev := revokedEvents(other, 0); len(ev) != 0 {
		t.Errorf("another account's keys revoked: %v", ev)
	}
	// A failed deletion (another account's client) changes nothing.
	wantKind(t, s.DeleteOAuthClient(ctx, other.ID, app.ID, t0.Add(5*time.Minute)), ams.ENOTFOUND)
	revoked("a refused deletion", k1, k1b, k2, k3)
	// In a transaction that rolls back, nothing is revoked.
	rollback := errors.New("roll back")
	if err := s.Update(ctx, func(tx ams.Tx) error {
		if err := tx.DeleteOAuthClient(ctx, u.ID, app.ID, t0.Add(6*time.Minute)); err != nil {
			t.Fatal(err)
		}
		return rollback
	}); !errors.Is(err, rollback) {
		t.Fatalf("rolled-back deletion: %v", err)
	}
	revoked("a rolled-back deletion", k1, k1b, k2, k3)
	if err := s.DeleteOAuthClient(ctx, u.ID, app.ID, t0.Add(7*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Every account's grants of a deleted client go, and their keys.
	revoked("delete the app", k1, k1b, k2, k3, k4)
	if ev := revokedEvents(other, 1); len(ev) != 1 || ev[0] != k4.ID {
		t.Errorf("api_key.revoked events of the other account: %v", ev)
	}
}
