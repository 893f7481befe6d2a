package storetest

import (
	"context"
	"fmt"
	"slices"
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
	// DeleteOtherLoginSessions keeps one session of the user and no other
	// user's sessions are touched.
	other := mustUser(t, s, "oauth-other@example.com")
	for _, x := range []*ams.LoginSession{
		{IDHash: ams.HashSecret("keep"), UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{IDHash: ams.HashSecret("old-1"), UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{IDHash: ams.HashSecret("old-2"), UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{IDHash: ams.HashSecret("theirs"), UserID: other.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
	} {
		if err := s.CreateLoginSession(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteOtherLoginSessions(ctx, u.ID, ams.HashSecret("keep")); err != nil {
		t.Fatal(err)
	}
	for cookie, alive := range map[string]bool{"keep": true, "old-1": false, "old-2": false, "theirs": true} {
		_, err := s.FindLoginSession(ctx, ams.HashSecret(cookie), t0)
		if alive != (err == nil) {
			t.Fatalf("session %s after DeleteOtherLoginSessions: %v (want alive %v)", cookie, err, alive)
		}
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

// testOAuthManagement: the account pages' management of clients and
// grants: rotating a secret, deleting a client with its tokens, listing
// the apps a user authorized and revoking them, each scoped to the user.
func testOAuthManagement(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "owner@example.com")
	other := mustUser(t, s, "other@example.com")
	newClient := func(owner *ams.User, name string, public bool) *ams.OAuthClient {
		t.Helper()
		c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: owner.ID, Name: name,
			RedirectURIs: []string{"https://app.example/cb"}, Public: public, CreatedAt: t0, UpdatedAt: t0}
		if !public {
			c.SecretHash = ams.HashSecret("old-" + name)
		}
		if err := s.CreateOAuthClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	app := newClient(u, "App", false)
	pub := newClient(u, "Public app", true)
	theirs := newClient(other, "Their app", false)

	// The redirect URIs of public clients, of every account, and only
	// theirs (the CORS policy's).
	spa := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: other.ID, Name: "SPA",
		RedirectURIs: []string{"http://localhost:5173/cb", "https://spa.example/callback"}, Public: true, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateOAuthClient(ctx, spa); err != nil {
		t.Fatal(err)
	}
	uris, err := s.PublicRedirectURIs(ctx)
	if err != nil || len(uris) != 2 || !slices.Equal(uris[pub.ID], []string{"https://app.example/cb"}) ||
		!slices.Equal(uris[spa.ID], []string{"http://localhost:5173/cb", "https://spa.example/callback"}) {
		t.Fatalf("public redirect uris: %v %v", uris, err)
	}

	// Rotation.
	got, err := s.SetOAuthClientSecret(ctx, u.ID, app.ID, ams.HashSecret("new"), t0.Add(time.Hour))
	if err != nil || got.SecretHash != ams.HashSecret("new") || !got.UpdatedAt.Equal(t0.Add(time.Hour)) || !got.CreatedAt.Equal(t0) || got.Name != "App" {
		t.Fatalf("rotate: %+v %v", got, err)
	}
	if c, _ := s.FindOAuthClient(ctx, app.ID); c.SecretHash != ams.HashSecret("new") {
		t.Fatal("rotated secret not stored")
	}
	_, err = s.SetOAuthClientSecret(ctx, u.ID, theirs.ID, ams.HashSecret("x"), t0)
	wantKind(t, err, ams.ENOTFOUND)
	if c, _ := s.FindOAuthClient(ctx, theirs.ID); c.SecretHash != ams.HashSecret("old-Their app") {
		t.Fatal("another account's client secret changed")
	}
	_, err = s.SetOAuthClientSecret(ctx, u.ID, "cli_missing", ams.HashSecret("x"), t0)
	wantKind(t, err, ams.ENOTFOUND)
	_, err = s.SetOAuthClientSecret(ctx, u.ID, pub.ID, ams.HashSecret("x"), t0)
	wantKind(t, err, ams.ECONFLICT)
	if c, _ := s.FindOAuthClient(ctx, pub.ID); c.SecretHash != "" {
		t.Fatal("a public client got a secret")
	}

	// Tokens: u granted app (two grants: read, then write+messages),
	// pub (an expired access token only, and an unused code), and
	// theirs; other granted app too.
	n := 0
	tok := func(c *ams.OAuthClient, user *ams.User, kind string, scopes []string, created, expires time.Time) *ams.OAuthToken {
		t.Helper()
		n++
		tk := &ams.OAuthToken{Signature: fmt.Sprint("sig", n), Kind: kind, RequestID: fmt.Sprint("req", n), ClientID: c.ID, UserID: user.ID,
			Scopes: scopes, Active: true, Data: []byte(`{}`), ExpiresAt: expires, CreatedAt: created}
		if err := s.CreateOAuthToken(ctx, tk); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	now := t0.Add(2 * time.Hour)
	hour, month := time.Hour, 30*24*time.Hour
	appOld := tok(app, u, ams.TokenRefresh, []string{"read"}, t0, t0.Add(month))
	appAccess := tok(app, u, ams.TokenAccess, []string{"write", "messages"}, t0.Add(90*time.Minute), t0.Add(90*time.Minute+hour))
	appRefresh := tok(app, u, ams.TokenRefresh, []string{"messages", "write"}, t0.Add(90*time.Minute), t0.Add(90*time.Minute+month))
	retired := tok(app, u, ams.TokenRefresh, []string{"admin"}, t0.Add(-time.Hour), t0.Add(month)) // rotated: inactive
	if err := s.DeactivateOAuthToken(ctx, ams.TokenRefresh, retired.Signature); err != nil {
		t.Fatal(err)
	}
	tok(pub, u, ams.TokenAccess, []string{"read"}, t0, t0.Add(hour)) // expired at now
	pubCode := tok(pub, u, ams.TokenAuthorizeCode, []string{"read"}, now, now.Add(10*time.Minute))
	theirsAccess := tok(theirs, u, ams.TokenAccess, []string{"integrations"}, t0.Add(time.Minute), t0.Add(3*hour))
	otherAccess := tok(app, other, ams.TokenAccess, []string{"admin"}, t0, t0.Add(3*hour))

	grants, err := s.ListGrants(ctx, u.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) != 2 {
		t.Fatalf("grants of %s: %d, want 2 (app, their app): %+v", u.Email, len(grants), grants)
	}
	g := grants[0] // most recently granted first
	if g.ClientID != app.ID || g.ClientName != "App" || fmt.Sprint(g.Scopes) != "[read write messages]" ||
		!g.FirstGrantedAt.Equal(t0.Add(-time.Hour)) || !g.LastGrantedAt.Equal(t0.Add(90*time.Minute)) {
		t.Fatalf("grant of app: %+v (want scopes of live tokens only, in canonical order)", g)
	}
	if g := grants[1]; g.ClientID != theirs.ID || g.ClientName != "Their app" || fmt.Sprint(g.Scopes) != "[integrations]" ||
		!g.FirstGrantedAt.Equal(t0.Add(time.Minute)) || !g.LastGrantedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("grant of their app: %+v", g)
	}
	if og, err := s.ListGrants(ctx, other.ID, now); err != nil || len(og) != 1 || og[0].ClientID != app.ID || fmt.Sprint(og[0].Scopes) != "[admin]" {
		t.Fatalf("grants of %s: %+v %v", other.Email, og, err)
	}
	if later, err := s.ListGrants(ctx, u.ID, t0.Add(3*time.Hour)); err != nil || len(later) != 1 || later[0].ClientID != app.ID ||
		fmt.Sprint(later[0].Scopes) != "[read write messages]" {
		// At t0+3h theirs's only token and app's access token have
		// expired; app's refresh tokens are live.
		t.Fatalf("grants after expiry: %+v %v", later, err)
	}

	active := func(tk *ams.OAuthToken) bool {
		t.Helper()
		got, err := s.GetOAuthToken(ctx, tk.Kind, tk.Signature)
		if err != nil {
			t.Fatalf("token %s: %v", tk.Signature, err)
		}
		return got.Active
	}
	// Revoking: every token of the user for the client, not another
	// user's, not another client's.
	if err := s.RevokeGrants(ctx, u.ID, app.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tk := range []*ams.OAuthToken{appOld, appAccess, appRefresh} {
		if active(tk) {
			t.Fatalf("token %s (%s) still active after RevokeGrants", tk.Signature, tk.Kind)
		}
	}
	if !active(otherAccess) || !active(theirsAccess) || !active(pubCode) {
		t.Fatal("RevokeGrants touched another user's or another client's tokens")
	}
	if grants, _ := s.ListGrants(ctx, u.ID, now); len(grants) != 1 || grants[0].ClientID != theirs.ID {
		t.Fatalf("grants after revoking app: %+v", grants)
	}
	wantKind(t, s.RevokeGrants(ctx, u.ID, app.ID, time.Now()), ams.ENOTFOUND) // nothing left to revoke
	wantKind(t, s.RevokeGrants(ctx, other.ID, pub.ID, time.Now()), ams.ENOTFOUND)
	// An unused code is revoked too, so it cannot be exchanged later.
	if err := s.RevokeGrants(ctx, u.ID, pub.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if active(pubCode) {
		t.Fatal("RevokeGrants left a code active")
	}

	// Deleting: only the owner, and every token of the client goes,
	// whoever's it is.
	wantKind(t, s.DeleteOAuthClient(ctx, other.ID, app.ID, time.Now()), ams.ENOTFOUND)
	if _, err := s.FindOAuthClient(ctx, app.ID); err != nil {
		t.Fatalf("another account deleted the client: %v", err)
	}
	wantKind(t, s.DeleteOAuthClient(ctx, u.ID, "cli_missing", time.Now()), ams.ENOTFOUND)
	if err := s.DeleteOAuthClient(ctx, u.ID, app.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindOAuthClient(ctx, app.ID); !ams.IsNotFound(err) {
		t.Fatalf("deleted client found: %v", err)
	}
	for _, tk := range []*ams.OAuthToken{appOld, appAccess, appRefresh, retired, otherAccess} {
		if _, err := s.GetOAuthToken(ctx, tk.Kind, tk.Signature); !ams.IsNotFound(err) {
			t.Fatalf("token %s of the deleted client: %v", tk.Signature, err)
		}
	}
	if og, _ := s.ListGrants(ctx, other.ID, now); len(og) != 0 {
		t.Fatalf("grants of a deleted client: %+v", og)
	}
	if !active(theirsAccess) {
		t.Fatal("deleting a client touched another client's token")
	}
	if l, _ := s.ListOAuthClients(ctx, u.ID); len(l) != 1 || l[0].ID != pub.ID {
		t.Fatalf("clients after delete: %+v", l)
	}
	wantKind(t, s.DeleteOAuthClient(ctx, u.ID, app.ID, time.Now()), ams.ENOTFOUND)
}
