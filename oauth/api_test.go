package oauth_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// TestTokenOnAPI: an access token on /v1 is limited to its scopes, counts
// against its user's rate limit, and is refused once expired on the
// service clock.
func TestTokenOnAPI(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)
	r := h.exchange(t, h.code(t, h.Client, "scope", "read"))
	at := r.JSON["access_token"].(string)

	// scope read: reads, but cannot send a message.
	if st, code := h.apiStatus(t, at); st != http.StatusOK {
		t.Fatalf("GET /v1/assistants: %d %s", st, code)
	}
	resp := h.Do("POST", "/v1/messages", at, `{"assistant_id": "`+h.Assistant.ID+`", "message": "hello"}`)
	if resp.Status != http.StatusForbidden {
		t.Fatalf("POST /v1/messages with scope read: %d %s", resp.Status, resp.Body)
	}
	if e := resp.JSON(t)["error"].(map[string]any); e["code"] != "insufficient_scope" || e["type"] != "permission_error" {
		t.Errorf("error %v", e)
	}
	if wa := resp.Header.Get("WWW-Authenticate"); !strings.Contains(wa, `error="insufficient_scope"`) || !strings.Contains(wa, "messages") {
		t.Errorf("WWW-Authenticate %q", wa)
	}

	// The token and the user's API key share one rate limit.
	remaining := func(cred string) int {
		t.Helper()
		resp := h.Do("GET", "/v1/assistants", cred, "")
		if resp.Status != http.StatusOK {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
		n, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := remaining(h.Key)
	if got := remaining(at); got != n-1 {
		t.Errorf("token: remaining %d, want %d", got, n-1)
	}
	if got := remaining(h.Key); got != n-2 {
		t.Errorf("key after token: remaining %d, want %d", got, n-2)
	}

	// A token with messages sends.
	at2 := h.exchange(t, h.code(t, h.Client, "scope", "messages")).JSON["access_token"].(string)
	if resp := h.Do("POST", "/v1/messages", at2, `{"assistant_id": "`+h.Assistant.ID+`", "message": "hello"}`); resp.Status != http.StatusCreated {
		t.Errorf("POST /v1/messages with scope messages: %d %s", resp.Status, resp.Body)
	}

	// Expiry on the injected clock: one hour.
	h.Clock.Add(59 * time.Minute)
	if st, _ := h.apiStatus(t, at); st != http.StatusOK {
		t.Errorf("at 59 min: %d", st)
	}
	h.Clock.Add(time.Minute + time.Second)
	resp = h.Do("GET", "/v1/assistants", at, "")
	if resp.Status != http.StatusUnauthorized {
		t.Fatalf("expired token: %d %s", resp.Status, resp.Body)
	}
	if e := resp.JSON(t)["error"].(map[string]any); e["code"] != "token_expired" || e["type"] != "authentication_error" {
		t.Errorf("error %v", e)
	}
	if wa := resp.Header.Get("WWW-Authenticate"); !strings.Contains(wa, `error="invalid_token"`) {
		t.Errorf("WWW-Authenticate %q", wa)
	}
	// The refresh token still works (30 days), and its new access token.
	rr := h.tokenRequest(t, "", map[string][]string{"grant_type": {"refresh_token"}, "refresh_token": {r.JSON["refresh_token"].(string)}}, h.Client.ID, h.Secret)
	if rr.Status != http.StatusOK {
		t.Fatalf("refresh after the access token expired: %d %s", rr.Status, rr.Raw)
	}
	if st, _ := h.apiStatus(t, rr.JSON["access_token"].(string)); st != http.StatusOK {
		t.Errorf("refreshed token: %d", st)
	}
}

// TestAuthenticateToken covers the tokens the API refuses.
func TestAuthenticateToken(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)
	r := h.exchange(t, h.code(t, h.Client, "scope", "read+write"))
	at, rt := r.JSON["access_token"].(string), r.JSON["refresh_token"].(string)
	ctx := context.Background()

	auth, err := h.OAuth.AuthenticateToken(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	if auth.User.ID != h.User.ID || auth.ClientID != h.Client.ID || auth.KeyID != "" || auth.Permissions.String() != "read,write" {
		t.Errorf("auth %+v %v", auth, auth.Permissions)
	}
	// Tampered, wrong kind (a refresh token, or a code, dressed as an
	// access token), unknown, malformed: invalid_token.
	for name, tok := range map[string]string{
		"tampered":          at[:len(at)-2] + "xx",
		"refresh as access": ams.PrefixAccessToken + strings.TrimPrefix(rt, ams.PrefixRefreshToken),
		"refresh token":     rt,
		"unknown":           ams.PrefixAccessToken + "AAAA.BBBB",
		"malformed":         ams.PrefixAccessToken + "nodot",
		"empty":             ams.PrefixAccessToken,
	} {
		_, err := h.OAuth.AuthenticateToken(ctx, tok)
		if e, ok := err.(*ams.Error); !ok || e.Kind != ams.EUNAUTHENTICATED || e.Code != "invalid_token" {
			t.Errorf("%s: %v, want EUNAUTHENTICATED invalid_token", name, err)
		}
	}
	// Through the API: 401 with the documented body.
	if st, code := h.apiStatus(t, ams.PrefixAccessToken+"AAAA.BBBB"); st != 401 || code != "invalid_token" {
		t.Errorf("unknown token on /v1: %d %s", st, code)
	}
}
