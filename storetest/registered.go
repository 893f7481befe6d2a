package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// testRegisteredClients: a client that registered itself (RFC 7591) has no
// account (UserID ""): it is stored and found so, listed as no account's
// own, holds tokens of the users who authorize it, shows in their grants,
// and is purged a day after it registered while it holds no token.
func testRegisteredClients(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "registered@example.com")
	newClient := func(name string, at time.Time) *ams.OAuthClient {
		c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", Name: name,
			RedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback"}, Public: true, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateOAuthClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	used, idle := newClient("Claude", t0), newClient("Idle", t0)
	got, err := s.FindOAuthClient(ctx, used.ID)
	if err != nil || got.UserID != "" || got.Name != "Claude" || !got.Public {
		t.Fatalf("find a registered client: %+v %v", got, err)
	}
	if l, err := s.ListOAuthClients(ctx, u.ID); err != nil || len(l) != 0 {
		t.Fatalf("the user's own clients: %v %v", l, err)
	}
	tk := &ams.OAuthToken{Signature: "reg-a1", Kind: ams.TokenRefresh, RequestID: "reg-r1", ClientID: used.ID, UserID: u.ID,
		Scopes: []string{"read"}, Active: true, Data: []byte(`{}`), ExpiresAt: t0.Add(30 * 24 * time.Hour), CreatedAt: t0}
	if err := s.CreateOAuthToken(ctx, tk); err != nil {
		t.Fatal(err)
	}
	grants, err := s.ListGrants(ctx, u.ID, t0.Add(time.Minute))
	if err != nil || len(grants) != 1 || grants[0].ClientID != used.ID || grants[0].ClientName != "Claude" {
		t.Fatalf("grants: %+v %v", grants, err)
	}
	// Within a day both stay; after it, only the one holding a token.
	if _, err := s.Purge(ctx, t0.Add(23*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindOAuthClient(ctx, idle.ID); err != nil {
		t.Fatalf("an idle client purged within its day: %v", err)
	}
	if _, err := s.Purge(ctx, t0.Add(25*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindOAuthClient(ctx, idle.ID); !ams.IsNotFound(err) {
		t.Fatalf("an idle client a day later: %v", err)
	}
	if _, err := s.FindOAuthClient(ctx, used.ID); err != nil {
		t.Fatalf("an authorized client was purged: %v", err)
	}
}
