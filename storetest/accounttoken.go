package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/password"
)

func issue(t *testing.T, s ams.Store, u *ams.User, purpose ams.TokenPurpose, secret string, at time.Time, life time.Duration, max int) bool {
	t.Helper()
	tok := &ams.AccountToken{Hash: ams.HashSecret(secret), UserID: u.ID, Purpose: purpose, Email: u.Email, CreatedAt: at, ExpiresAt: at.Add(life)}
	ok, err := s.IssueAccountToken(context.Background(), tok, keyEmail(u.Email, string(purpose)+" "+secret), at.Add(-time.Hour), max)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// testAccountTokens: a reset token is stored hashed with its e-mail, is
// used once, not after it expires, not for another purpose; using it sets
// the password, ends every session and the account's other reset links.
// A verification token verifies the address it was sent to, once. The cap
// counts an account's recent tokens of one purpose.
func testAccountTokens(t *testing.T, s ams.Store) {
	ctx := context.Background()
	now := t0
	since := now.Add(-time.Hour)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "reset@example.com", Plan: ams.PlanStandard, Timezone: "UTC",
		CreatedAt: t0, UpdatedAt: t0, UnverifiedSince: &now}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.FindUser(ctx, u.ID); got.Verified() || got.UnverifiedSince == nil || !got.UnverifiedSince.Equal(now) {
		t.Fatalf("unverified_since not stored: %+v", got.UnverifiedSince)
	}
	other := mustUser(t, s, "other-reset@example.com")
	if !other.Verified() {
		t.Fatal("an account made without UnverifiedSince is not verified")
	}
	for _, sid := range []string{"s1", "s2"} {
		if err := s.CreateLoginSession(ctx, &ams.LoginSession{IDHash: ams.HashSecret(sid), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateLoginSession(ctx, &ams.LoginSession{IDHash: ams.HashSecret("o1"), UserID: other.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}

	if !issue(t, s, u, ams.TokenPasswordReset, "reset-1", now, time.Hour, 3) || !issue(t, s, u, ams.TokenPasswordReset, "reset-2", now, time.Hour, 3) {
		t.Fatal("tokens under the cap were not issued")
	}
	// Each token queued its e-mail.
	emails, err := s.ClaimEmails(ctx, now, time.Minute, 10)
	if err != nil || len(emails) != 2 || emails[0].To != u.Email {
		t.Fatalf("queued e-mails %+v, %v", emails, err)
	}
	tok, err := s.FindAccountToken(ctx, ams.HashSecret("reset-1"), ams.TokenPasswordReset)
	if err != nil || tok.UserID != u.ID || tok.Email != u.Email || !tok.ExpiresAt.Equal(now.Add(time.Hour)) || !tok.Usable(now) {
		t.Fatalf("found %+v, %v", tok, err)
	}
	if _, err := s.FindAccountToken(ctx, ams.HashSecret("reset-1"), ams.TokenEmailVerification); !ams.IsNotFound(err) {
		t.Fatalf("a reset token found as a verification token: %v", err)
	}
	if _, err := s.FindAccountToken(ctx, "reset-1", ams.TokenPasswordReset); !ams.IsNotFound(err) {
		t.Fatalf("a token found by its secret rather than its hash: %v", err)
	}
	// Wrong token, wrong purpose, expired: refused, nothing changes.
	h, _ := password.Hash("a new password 1")
	for _, c := range []struct {
		hash string
		at   time.Time
	}{{ams.HashSecret("nope"), now}, {ams.HashSecret("reset-1"), now.Add(time.Hour)}} {
		if _, err := s.ResetPassword(ctx, c.hash, h, c.at); !ams.IsNotFound(err) {
			t.Fatalf("reset with %s at %v: %v", c.hash, c.at, err)
		}
	}
	if _, err := s.VerifyEmail(ctx, ams.HashSecret("reset-1"), now); !ams.IsNotFound(err) {
		t.Fatalf("a reset token verified the address: %v", err)
	}
	if got, _ := s.FindUser(ctx, u.ID); got.PasswordHash != "" {
		t.Fatal("a refused reset changed the password")
	}
	// Used once, just before it expires.
	at := now.Add(time.Hour - time.Millisecond)
	got, err := s.ResetPassword(ctx, ams.HashSecret("reset-1"), h, at)
	if err != nil || got.ID != u.ID || got.PasswordHash != h {
		t.Fatalf("reset: %+v, %v", got, err)
	}
	if _, err := s.ResetPassword(ctx, ams.HashSecret("reset-1"), "x", at); !ams.IsNotFound(err) {
		t.Fatalf("reset token used twice: %v", err)
	}
	// The other reset link is used up too; sessions of the account ended,
	// the other account's kept.
	if _, err := s.ResetPassword(ctx, ams.HashSecret("reset-2"), "x", at); !ams.IsNotFound(err) {
		t.Fatalf("the second reset link still works: %v", err)
	}
	if tok, _ := s.FindAccountToken(ctx, ams.HashSecret("reset-1"), ams.TokenPasswordReset); tok.Usable(at) || !tok.UsedAt.Equal(at) {
		t.Fatalf("used token: %+v", tok)
	}
	for sid, want := range map[string]bool{"s1": false, "s2": false, "o1": true} {
		_, err := s.FindLoginSession(ctx, ams.HashSecret(sid), at)
		if (err == nil) != want {
			t.Fatalf("session %s after the reset: %v", sid, err)
		}
	}
	if got, _ := s.FindUser(ctx, u.ID); got.PasswordHash != h {
		t.Fatal("password not kept")
	}

	// The cap: 2 issued in the last hour; the third is the last allowed.
	if !issue(t, s, u, ams.TokenPasswordReset, "reset-3", now, time.Hour, 3) {
		t.Fatal("third token refused")
	}
	if issue(t, s, u, ams.TokenPasswordReset, "reset-4", now, time.Hour, 3) {
		t.Fatal("fourth token within an hour issued")
	}
	if _, err := s.FindAccountToken(ctx, ams.HashSecret("reset-4"), ams.TokenPasswordReset); !ams.IsNotFound(err) {
		t.Fatal("a capped token was stored")
	}
	if emails, _ := s.ClaimEmails(ctx, now, time.Minute, 10); len(emails) != 1 {
		t.Fatalf("capped token queued e-mails: %d, want 1", len(emails))
	}
	// Verification tokens are counted apart; another account's too.
	if !issue(t, s, u, ams.TokenEmailVerification, "verify-1", now, 24*time.Hour, 3) || !issue(t, s, other, ams.TokenPasswordReset, "o-reset", now, time.Hour, 3) {
		t.Fatal("tokens of another purpose or account counted")
	}
	// An hour later the window has moved.
	if !issue(t, s, u, ams.TokenPasswordReset, "reset-5", now.Add(time.Hour+time.Millisecond), time.Hour, 3) {
		t.Fatal("token refused after the window")
	}

	// Verification: once; the account is then verified.
	v, err := s.VerifyEmail(ctx, ams.HashSecret("verify-1"), now.Add(23*time.Hour))
	if err != nil || !v.Verified() {
		t.Fatalf("verify: %+v, %v", v, err)
	}
	if _, err := s.VerifyEmail(ctx, ams.HashSecret("verify-1"), now.Add(23*time.Hour)); !ams.IsNotFound(err) {
		t.Fatalf("verification used twice: %v", err)
	}
	if _, err := s.IssueAccountToken(ctx, &ams.AccountToken{Hash: "h", UserID: "usr_nobody", Purpose: ams.TokenPasswordReset, Email: "x@example.com",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, keyEmail("x@example.com", "x"), since, 3); !ams.IsNotFound(err) {
		t.Fatalf("token of an unknown account: %v", err)
	}
}

// testAccountTokenExpiry: a verification token expires; one sent to an
// address the account no longer has is used but verifies nothing.
func testAccountTokenExpiry(t *testing.T, s ams.Store) {
	ctx := context.Background()
	now := t0
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "late@example.com", Plan: ams.PlanStandard, Timezone: "UTC",
		CreatedAt: t0, UpdatedAt: t0, UnverifiedSince: &now}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	issue(t, s, u, ams.TokenEmailVerification, "v-late", now, 24*time.Hour, 3)
	if _, err := s.VerifyEmail(ctx, ams.HashSecret("v-late"), now.Add(24*time.Hour)); !ams.IsNotFound(err) {
		t.Fatalf("expired verification used: %v", err)
	}
	if got, _ := s.FindUser(ctx, u.ID); got.Verified() {
		t.Fatal("verified by an expired link")
	}
	old := &ams.AccountToken{Hash: ams.HashSecret("v-old"), UserID: u.ID, Purpose: ams.TokenEmailVerification, Email: "previous@example.com",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if _, err := s.IssueAccountToken(ctx, old, keyEmail("previous@example.com", "v"), now.Add(-time.Hour), 3); err != nil {
		t.Fatal(err)
	}
	if got, err := s.VerifyEmail(ctx, ams.HashSecret("v-old"), now); err != nil || got.Verified() {
		t.Fatalf("a link sent to another address verified the account: %v", err)
	}
	// The purge deletes links expired for as long as events are kept.
	if _, err := s.Purge(ctx, now.Add(24*time.Hour+ams.EventRetention-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindAccountToken(ctx, ams.HashSecret("v-late"), ams.TokenEmailVerification); err != nil {
		t.Fatalf("a link purged before its time: %v", err)
	}
	if _, err := s.Purge(ctx, now.Add(24*time.Hour+ams.EventRetention+time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"v-late", "v-old"} {
		if _, err := s.FindAccountToken(ctx, ams.HashSecret(h), ams.TokenEmailVerification); !ams.IsNotFound(err) {
			t.Fatalf("link %s not purged: %v", h, err)
		}
	}
}

// testAccountTokenRace: one reset link used by several requests at once
// works for exactly one.
func testAccountTokenRace(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "race-reset@example.com")
	issue(t, s, u, ams.TokenPasswordReset, "race", t0, time.Hour, 3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.ResetPassword(ctx, ams.HashSecret("race"), "hash-"+string(rune('a'+i)), t0)
			if err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !ams.IsNotFound(err) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok != 1 {
		t.Fatalf("%d resets succeeded with one link", ok)
	}
}
