package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// testAuthGeneration: the authentication generation (ams.AuthWatch) moves,
// as the same store handle sees at once, with every change that alters
// what a key or access token authenticates as — a key revoked, an account
// changed, an access token deactivated or deleted (alone, by grant, by
// revoking the user's grants, with its client) — and with nothing else
// done to keys and tokens: creating them, touching a key, re-revoking a
// revoked key, deactivating refresh tokens and codes.
func testAuthGeneration(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "gen@example.com")
	gen := func() int64 {
		t.Helper()
		g, err := s.AuthGeneration(ctx)
		if err != nil {
			t.Fatalf("auth generation: %v", err)
		}
		return g
	}
	g := gen()
	step := func(what string, err error, moves bool) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := gen()
		if moves && got <= g {
			t.Errorf("%s: the generation stayed at %d, want it moved", what, got)
		}
		if !moves && got != g {
			t.Errorf("%s: the generation moved from %d to %d, want it kept", what, g, got)
		}
		// Read again: a second call agrees.
		if again := gen(); again != got {
			t.Errorf("%s: the generation read %d then %d", what, got, again)
		}
		g = got
	}

	_, k := ams.NewAPIKey(u.ID, "k", ams.Permissions{ams.PermRead}, t0, nil)
	step("create a key", s.CreateKey(ctx, k), false)
	step("touch the key", s.TouchKey(ctx, k.ID, t0.Add(time.Minute)), false)
	_, err := s.RevokeKey(ctx, u.ID, k.ID, t0.Add(2*time.Minute))
	step("revoke the key", err, true)
	_, err = s.RevokeKey(ctx, u.ID, k.ID, t0.Add(3*time.Minute))
	step("revoke the key again", err, false)
	plan := ams.PlanProfessional
	_, err = s.UpdateUser(ctx, u.ID, ams.UserUpdate{Plan: &plan}, t0)
	step("change the account's plan", err, true)

	c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: u.ID, Name: "App",
		RedirectURIs: []string{"https://app.example/cb"}, SecretHash: ams.HashSecret("s"), CreatedAt: t0, UpdatedAt: t0}
	step("create a client", s.CreateOAuthClient(ctx, c), false)
	n := 0
	tok := func(kind, req string) string {
		t.Helper()
		n++
		sig := kind + "-" + string(rune('a'+n))
		step("create a token", s.CreateOAuthToken(ctx, &ams.OAuthToken{Signature: sig, Kind: kind, RequestID: req, ClientID: c.ID, UserID: u.ID,
			Scopes: []string{"read"}, Active: true, Data: []byte(`{}`), ExpiresAt: t0.Add(time.Hour), CreatedAt: t0}), false)
		return sig
	}
	step("deactivate a code", s.DeactivateOAuthToken(ctx, ams.TokenAuthorizeCode, tok(ams.TokenAuthorizeCode, "r0")), false)
	step("deactivate a refresh token", s.DeactivateOAuthToken(ctx, ams.TokenRefresh, tok(ams.TokenRefresh, "r1")), false)
	step("deactivate an access token", s.DeactivateOAuthToken(ctx, ams.TokenAccess, tok(ams.TokenAccess, "r1")), true)
	step("delete an access token", s.DeleteOAuthToken(ctx, ams.TokenAccess, tok(ams.TokenAccess, "r2")), true)
	tok(ams.TokenAccess, "r3")
	step("deactivate a grant's access tokens", s.DeactivateGrant(ctx, ams.TokenAccess, "r3"), true)
	tok(ams.TokenAccess, "r4")
	step("revoke the user's grants of the client", s.RevokeGrants(ctx, u.ID, c.ID, time.Now()), true)
	tok(ams.TokenAccess, "r5")
	step("delete the client", s.DeleteOAuthClient(ctx, u.ID, c.ID, time.Now()), true)
}
