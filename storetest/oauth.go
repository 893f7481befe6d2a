package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

func testOAuth(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "oauth@example.com")
	c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: u.ID, Name: "App",
		RedirectURIs: []string{"https://app.example/cb", "http://127.0.0.1:9/cb"}, SecretHash: ams.HashSecret("s"), CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateOAuthClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindOAuthClient(ctx, c.ID)
	if err != nil || got.Name != "App" || len(got.RedirectURIs) != 2 || got.RedirectURIs[1] != "http://127.0.0.1:9/cb" || got.SecretHash != c.SecretHash || got.Public {
		t.Fatalf("find client: %+v %v", got, err)
	}
	if _, err := s.FindOAuthClient(ctx, "cli_nothere"); !ams.IsNotFound(err) {
		t.Fatalf("unknown client: %v", err)
	}
	if l, err := s.ListOAuthClients(ctx, u.ID); err != nil || len(l) != 1 {
		t.Fatalf("list clients: %v %v", l, err)
	}
	tok := func(kind, sig, req string) *ams.OAuthToken {
		return &ams.OAuthToken{Signature: sig, Kind: kind, RequestID: req, ClientID: c.ID, UserID: u.ID, Scopes: []string{"read", "messages"},
			Active: true, Data: []byte(`{"k":"` + sig + `"}`), ExpiresAt: t0.Add(time.Hour), CreatedAt: t0}
	}
	for _, tk := range []*ams.OAuthToken{tok(ams.TokenAccess, "a1", "r1"), tok(ams.TokenRefresh, "f1", "r1"), tok(ams.TokenRefresh, "f2", "r1"),
		tok(ams.TokenAccess, "a2", "r2"), tok(ams.TokenAuthorizeCode, "c1", "r3")} {
		if err := s.CreateOAuthToken(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	a1, err := s.GetOAuthToken(ctx, ams.TokenAccess, "a1")
	if err != nil || !a1.Active || a1.RequestID != "r1" || string(a1.Data) != `{"k":"a1"}` || len(a1.Scopes) != 2 || !a1.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("get token: %+v %v", a1, err)
	}
	// The same signature of another kind is another token.
	if _, err := s.GetOAuthToken(ctx, ams.TokenRefresh, "a1"); !ams.IsNotFound(err) {
		t.Fatalf("kind ignored: %v", err)
	}
	if err := s.DeactivateOAuthToken(ctx, ams.TokenAuthorizeCode, "c1"); err != nil {
		t.Fatal(err)
	}
	if c1, err := s.GetOAuthToken(ctx, ams.TokenAuthorizeCode, "c1"); err != nil || c1.Active {
		t.Fatalf("deactivated code: %+v %v", c1, err)
	}
	if err := s.DeactivateGrant(ctx, ams.TokenRefresh, "r1"); err != nil {
		t.Fatal(err)
	}
	for sig, want := range map[string]bool{"f1": false, "f2": false} {
		if f, _ := s.GetOAuthToken(ctx, ams.TokenRefresh, sig); f == nil || f.Active != want {
			t.Fatalf("refresh %s after DeactivateGrant: %+v", sig, f)
		}
	}
	if a, _ := s.GetOAuthToken(ctx, ams.TokenAccess, "a1"); a == nil || !a.Active {
		t.Fatal("DeactivateGrant of refresh tokens touched an access token")
	}
	if a, _ := s.GetOAuthToken(ctx, ams.TokenAccess, "a2"); a == nil || !a.Active {
		t.Fatal("DeactivateGrant touched another grant")
	}
	if err := s.DeleteOAuthToken(ctx, ams.TokenAccess, "a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetOAuthToken(ctx, ams.TokenAccess, "a1"); !ams.IsNotFound(err) {
		t.Fatal("deleted token found")
	}
	if err := s.DeleteOAuthToken(ctx, ams.TokenAccess, "never"); err != nil {
		t.Fatalf("deleting a missing token: %v", err)
	}

	ls := &ams.LoginSession{IDHash: ams.HashSecret("cookie"), UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := s.CreateLoginSession(ctx, ls); err != nil {
		t.Fatal(err)
	}
	if got, err := s.FindLoginSession(ctx, ls.IDHash, t0.Add(59*time.Minute)); err != nil || got.UserID != u.ID {
		t.Fatalf("find session: %+v %v", got, err)
	}
	if _, err := s.FindLoginSession(ctx, ls.IDHash, t0.Add(time.Hour)); !ams.IsNotFound(err) {
		t.Fatal("expired session found")
	}
	if err := s.DeleteLoginSession(ctx, ls.IDHash); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindLoginSession(ctx, ls.IDHash, t0); !ams.IsNotFound(err) {
		t.Fatal("deleted session found")
	}
}

// testOAuthLocks: a credential lock is held by one owner at a time, racing
// owners get it exactly once, a released or expired lock is free again, and
// only its owner releases it.
func testOAuthLocks(t *testing.T, s ams.Store) {
	ctx := context.Background()
	until := t0.Add(30 * time.Second)
	take := func(name, owner string, now time.Time) bool {
		t.Helper()
		ok, err := s.AcquireOAuthLock(ctx, name, owner, now, now.Add(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !take("refresh:x", "p1", t0) {
		t.Fatal("a free lock was not taken")
	}
	if take("refresh:x", "p2", t0.Add(time.Second)) {
		t.Fatal("a held lock was taken by another owner")
	}
	if !take("refresh:y", "p2", t0) {
		t.Fatal("another name is another lock")
	}
	// Another owner's release leaves the hold in place.
	if err := s.ReleaseOAuthLock(ctx, "refresh:x", "p2"); err != nil {
		t.Fatal(err)
	}
	if take("refresh:x", "p3", t0.Add(time.Second)) {
		t.Fatal("a release by a non-owner freed the lock")
	}
	if err := s.ReleaseOAuthLock(ctx, "refresh:x", "p1"); err != nil {
		t.Fatal(err)
	}
	if !take("refresh:x", "p3", t0.Add(2*time.Second)) {
		t.Fatal("a released lock was not free")
	}
	// A holder that never releases blocks the name until its lease ends.
	// p3 took it at t0+2s, so its lease runs to t0+32s.
	if take("refresh:x", "p4", t0.Add(31*time.Second)) {
		t.Fatal("a live lease was taken over")
	}
	if !take("refresh:x", "p4", t0.Add(32*time.Second)) {
		t.Fatal("an expired lease was not taken over")
	}
	// Racing owners: exactly one wins.
	var wg sync.WaitGroup
	var won atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			ok, err := s.AcquireOAuthLock(ctx, "code:race", fmt.Sprint("r", i), t0, until)
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d of 8 racing owners took the lock, want 1", won.Load())
	}
}
