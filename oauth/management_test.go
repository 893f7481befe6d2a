package oauth_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// TestTokenCannotOutliveItself: an access token granted admin reaches the
// management API, but a key it creates may not outlive the token (one
// hour): no expiry, or a later one, is 403 lifetime_not_held naming
// expires_at; a key that expires with the token is created. A token
// without admin is 403 insufficient_scope.
func TestTokenCannotOutliveItself(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.login(t, h.Browser, "ann@example.com", testPassword)
	tok := h.exchange(t, h.code(t, h.Client, "scope", "admin")).JSON
	at, _ := tok["access_token"].(string)
	if tok["scope"] != "admin" || at == "" {
		t.Fatalf("token: %v", tok)
	}
	expires := h.Clock.Now().Add(ams.AccessTokenLifetime)
	create := func(token, expiresAt string) (int, map[string]any) {
		t.Helper()
		body := `{"name":"from an app","permissions":["read"]` + expiresAt + `}`
		r := h.Do("POST", "/v1/keys", token, body)
		e, _ := r.JSON(t)["error"].(map[string]any)
		return r.Status, e
	}
	for _, exp := range []string{"", fmt.Sprintf(`,"expires_at":%q`, expires.Add(time.Second).Format(time.RFC3339))} {
		if st, e := create(at, exp); st != http.StatusForbidden || e["code"] != "lifetime_not_held" || e["param"] != "expires_at" {
			t.Fatalf("key outliving the token (%s): %d %v", exp, st, e)
		}
	}
	if st, e := create(at, fmt.Sprintf(`,"expires_at":%q`, expires.Add(-time.Minute).Format(time.RFC3339))); st != http.StatusCreated {
		t.Fatalf("key within the token's life: %d %v", st, e)
	}

	read := h.exchange(t, h.code(t, h.Client, "scope", "read")).JSON["access_token"].(string)
	if st, e := create(read, ""); st != http.StatusForbidden || e["code"] != "insufficient_scope" {
		t.Fatalf("token without admin: %d %v", st, e)
	}
}
