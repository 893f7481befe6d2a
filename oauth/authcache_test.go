package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
)

// TestTokenRevokedAcrossProcesses: server A authenticates (and caches) an
// access token; the token is revoked through server B, a second process
// on the same database (SQLite file, PostgreSQL schema): A's next request
// with it is refused. Likewise for a token whose grant is revoked by a
// refresh in B (the old access token goes), and for the tokens of a
// client deleted through B.
func TestTokenRevokedAcrossProcesses(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var opts []amstest.Option
			var second func() ams.Store
			if engine == "postgres" {
				u := pgtest.URL(t)
				schema := pgtest.FreshSchema(t, u)
				opts = append(opts, amstest.OnStore(pgtest.OpenSchema(t, u, schema)))
				second = func() ams.Store { return pgtest.OpenSchema(t, u, schema) }
			}
			h := setup(t, opts...)
			if second == nil {
				second = func() ams.Store {
					db := sqlitetest.OpenFile(t, h.Store.Path())
					return db
				}
			}
			sb := second()
			b := h.Peer(sb)
			h.login(t, h.Browser, "ann@example.com", testPassword)
			token := func() (string, string) {
				r := h.exchange(t, h.code(t, h.Client, "scope", "read"))
				return r.JSON["access_token"].(string), r.JSON["refresh_token"].(string)
			}
			ok := func(at string) {
				t.Helper()
				for range 2 {
					if st, code := h.apiStatus(t, at); st != http.StatusOK {
						t.Fatalf("A: %d %s", st, code)
					}
				}
				if r := b.Do("GET", "/v1/assistants", at, ""); r.Status != http.StatusOK {
					t.Fatalf("B: %d %s", r.Status, r.Body)
				}
			}
			refused := func(at, why string) {
				t.Helper()
				if st, code := h.apiStatus(t, at); st != http.StatusUnauthorized || code != "invalid_token" {
					t.Fatalf("A, after %s in B: %d %s, want 401 invalid_token", why, st, code)
				}
			}
			post := func(path string, form url.Values) {
				t.Helper()
				req, _ := http.NewRequest("POST", b.Server.URL+path, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth(h.Client.ID, h.Secret)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("POST %s on B: %d", path, resp.StatusCode)
				}
			}

			at, _ := token()
			ok(at)
			post("/oauth/revoke", url.Values{"token": {at}})
			refused(at, "POST /oauth/revoke")

			at, rt := token()
			ok(at)
			post("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
			refused(at, "a refresh")

			at, _ = token()
			ok(at)
			if err := sb.DeleteOAuthClient(ctx, h.User.ID, h.Client.ID, time.Now()); err != nil {
				t.Fatal(err)
			}
			refused(at, "deleting the client")
		})
	}
}
