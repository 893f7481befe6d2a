package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAuthCacheAcrossServeProcesses runs two `ams serve` processes on one
// store (one SQLite data directory; one PostgreSQL schema). Both
// authenticate an API key, and so cache it; the CLI, a third process,
// changes the account's plan and then revokes the key: the very next
// request to either server counts against the new plan's limits, then is
// refused with api_key_revoked.
func TestAuthCacheAcrossServeProcesses(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		a := startServe(t, dir)
		b := startServe(t, dir)
		checkAuthAcross(t, dir, a, b)
		stop(t, a, b)
	})
	t.Run("postgres", func(t *testing.T) {
		postgresSchemaEnv(t)
		a, b := startPair(t)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("logs of a:\n%s\nlogs of b:\n%s", a.logs, b.logs)
			}
		})
		checkAuthAcross(t, t.TempDir(), a, b)
		stop(t, a, b)
	})
}

var keyIDRE = regexp.MustCompile(`key_[A-Za-z0-9]+`)

func checkAuthAcross(t *testing.T, dir string, a, b *server) {
	t.Helper()
	email := "cache-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "@example.com"
	run(t, dir, "", "users", "create", "--email", email, "--plan", "standard")
	key := strings.TrimSpace(run(t, dir, "", "keys", "create", "--email", email, "--name", "cached", "--permissions", "read"))
	id := keyIDRE.FindString(run(t, dir, "", "keys", "list", "--email", email))
	if !strings.HasPrefix(key, "ams_sk_") || id == "" {
		t.Fatalf("keys create / list printed %q, %q", key, id)
	}
	limit := func(s *server, want int) {
		t.Helper()
		r := get(t, s.base+"/v1/assistants", key)
		if r.status != 200 || r.header.Get("X-RateLimit-Limit") != strconv.Itoa(want) {
			t.Fatalf("%s: %d, X-RateLimit-Limit %q, want 200 with %d: %v", s.base, r.status, r.header.Get("X-RateLimit-Limit"), want, r.body)
		}
	}
	// Several requests, so that both servers answer the later ones from
	// their caches with the authentication check skipped (on SQLite, the
	// wal-index header unchanged) before the changes below.
	for range 4 {
		limit(a, 60)
		limit(b, 60)
	}
	run(t, dir, "", "users", "update", "--email", email, "--plan", "professional")
	limit(a, 120)
	limit(b, 120)
	run(t, dir, "", "keys", "revoke", id)
	for _, s := range []*server{a, b, a} {
		r := get(t, s.base+"/v1/assistants", key)
		e, _ := r.body["error"].(map[string]any)
		if r.status != 401 || e["code"] != "api_key_revoked" {
			t.Fatalf("%s after the revocation: %d %v, want 401 api_key_revoked", s.base, r.status, r.body)
		}
	}
}
