package oauth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/internal/testing/testclock"
	"github.com/amsdev/ams/password"
	"github.com/ory/fosite"
	foauth2 "github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/token/hmac"
	"golang.org/x/crypto/bcrypt"
)

// TestStorageClock: expiry follows the service clock, whether it is ahead
// of the wall clock or behind it. fosite sets and checks expiry on the
// wall clock; the adapter stores service time and shifts on the way.
func TestStorageClock(t *testing.T) {
	t.Parallel()
	for name, offset := range map[string]time.Duration{"ahead": 72 * time.Hour, "behind": -72 * time.Hour, "same": 0} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := sqlitetest.Open(t)
			clock := testclock.New(time.Now().Add(offset))
			now := clock.Now()
			u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "ann@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
			if err := db.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
			c, _, err := CreateClient(ctx, db, ClientParams{UserID: u.ID, Name: "A", RedirectURIs: []string{"https://a.example/cb"}}, now)
			if err != nil {
				t.Fatal(err)
			}
			st := &storage{store: db, clock: clock.Now}
			fc := &fosite.Config{GlobalSecret: make([]byte, 32), AccessTokenLifespan: time.Hour}
			strat := &tokenStrategy{base: foauth2.NewHMACSHAStrategyUnPrefixed(&hmac.HMACStrategy{Config: fc}, fc)}

			// What fosite does when it issues an access token.
			req := fosite.NewRequest()
			req.Client = client{c}
			req.GrantScope("read")
			req.Session = &fosite.DefaultSession{Subject: u.ID}
			req.Session.SetExpiresAt(fosite.AccessToken, time.Now().UTC().Add(time.Hour).Round(time.Second))
			token, sig, err := strat.GenerateAccessToken(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.CreateAccessTokenSession(ctx, sig, req); err != nil {
				t.Fatal(err)
			}
			// The caller's session is not changed.
			if d := time.Until(req.Session.GetExpiresAt(fosite.AccessToken)); d < 59*time.Minute || d > 61*time.Minute {
				t.Errorf("caller's session expiry moved: %v from now", d)
			}
			// Stored: service time.
			row, err := db.GetOAuthToken(ctx, ams.TokenAccess, sig)
			if err != nil {
				t.Fatal(err)
			}
			if d := row.ExpiresAt.Sub(clock.Now()); d < 59*time.Minute || d > 61*time.Minute {
				t.Errorf("stored expiry is %v after the service clock, want about 1h", d)
			}
			if row.UserID != u.ID || row.ClientID != c.ID || len(row.Scopes) != 1 || !row.Active {
				t.Errorf("row %+v", row)
			}

			check := func(wantExpired bool) {
				t.Helper()
				got, err := st.GetAccessTokenSession(ctx, sig, new(fosite.DefaultSession))
				if err != nil {
					t.Fatal(err)
				}
				err = strat.ValidateAccessToken(ctx, got, token)
				if expired := errors.Is(err, fosite.ErrTokenExpired); expired != wantExpired || (err != nil && !expired) {
					t.Errorf("validate at service time %s: %v, want expired %v", clock.Now().Format(time.TimeOnly), err, wantExpired)
				}
			}
			check(false)
			clock.Add(59 * time.Minute)
			check(false)
			clock.Add(2 * time.Minute)
			check(true)
		})
	}
}

func TestTokenStrategyPrefixes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fc := &fosite.Config{GlobalSecret: make([]byte, 32)}
	s := &tokenStrategy{base: foauth2.NewHMACSHAStrategyUnPrefixed(&hmac.HMACStrategy{Config: fc}, fc)}
	req := fosite.NewRequest()
	req.Session = new(fosite.DefaultSession)
	for _, c := range []struct {
		prefix string
		gen    func(context.Context, fosite.Requester) (string, string, error)
		sig    func(context.Context, string) string
	}{
		{ams.PrefixAccessToken, s.GenerateAccessToken, s.AccessTokenSignature},
		{ams.PrefixRefreshToken, s.GenerateRefreshToken, s.RefreshTokenSignature},
		{PrefixAuthorizeCode, s.GenerateAuthorizeCode, s.AuthorizeCodeSignature},
	} {
		tok, sig, err := c.gen(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if tok[:len(c.prefix)] != c.prefix || c.sig(ctx, tok) != sig || sig == "" {
			t.Errorf("token %q signature %q", tok, sig)
		}
		if c.sig(ctx, tok[len(c.prefix):]) != "" || c.sig(ctx, "ory_at_"+tok[len(c.prefix):]) != "" {
			t.Errorf("a token without the %s prefix has a signature", c.prefix)
		}
	}
	at, _, _ := s.GenerateAccessToken(ctx, req)
	if err := s.ValidateAccessToken(ctx, req, at); err != nil {
		t.Errorf("valid token: %v", err)
	}
	if err := s.ValidateRefreshToken(ctx, req, at); err == nil {
		t.Error("an access token validated as a refresh token")
	}
}

func TestSafeReturnTo(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/oauth/authorize?a=b": "/oauth/authorize?a=b",
		"/":                    "/",
		"":                     defaultReturnTo,
		"https://evil.example": defaultReturnTo,
		"//evil.example/x":     defaultReturnTo,
		"/\\evil.example":      defaultReturnTo,
		"/a\r\nLocation: x":    defaultReturnTo,
		"evil.example":         defaultReturnTo,
		"/%2F%2Fevil.example":  "/%2F%2Fevil.example", // a path of this site
	} {
		if got := safeReturnTo(in); got != want {
			t.Errorf("safeReturnTo(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDummyHashCost: the hash compared for unknown accounts costs what a
// real password check costs, so the answer time tells nothing.
func TestDummyHashCost(t *testing.T) {
	t.Parallel()
	if c, err := bcrypt.Cost([]byte(dummyHash)); err != nil || c != password.Cost {
		t.Errorf("dummy hash cost %d (%v), want password.Cost %d", c, err, password.Cost)
	}
}
