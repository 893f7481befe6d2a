package http_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/sqlite"
)

// twoHandles returns two handles on one new database of the engine, as
// two processes would hold.
func twoHandles(t *testing.T, engine string) (a, b ams.Store) {
	t.Helper()
	if engine == "postgres" {
		url := pgtest.URL(t)
		schema := pgtest.FreshSchema(t, url)
		return pgtest.OpenSchema(t, url, schema), pgtest.OpenSchema(t, url, schema)
	}
	path := filepath.Join(t.TempDir(), "ams.db")
	open := func() ams.Store {
		db := sqlitetest.OpenFile(t, path)
		return db
	}
	return open(), open()
}

// TestAuthCacheAcrossProcesses: two servers on two handles of one
// database (SQLite file, PostgreSQL schema), as two processes. A key
// authenticated (and cached) by server A stops working at A's very next
// request once it is revoked through B, or expires on the clock; and a
// plan change made through B sets A's next rate limit.
func TestAuthCacheAcrossProcesses(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			sa, sb := twoHandles(t, engine)
			f := amstest.New(t, amstest.OnStore(sa))
			p := f.Peer(sb)
			get := func(fx *amstest.Fixture, key string) *amstest.Response {
				t.Helper()
				return fx.Do("GET", "/v1/assistants/"+f.Assistant.ID, key, "")
			}
			wantStatus := func(r *amstest.Response, status int, code string) {
				t.Helper()
				if r.Status != status {
					t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
				}
				if code != "" {
					if e, _ := r.JSON(t)["error"].(map[string]any); e["code"] != code {
						t.Fatalf("error %v, want code %s", e, code)
					}
				}
			}
			newKey := func(expires *time.Time) (string, *ams.APIKey) {
				secret, k := ams.NewAPIKey(f.User.ID, "k", ams.Permissions{ams.PermRead}, f.Clock.Now(), expires)
				if err := sb.CreateKey(ctx, k); err != nil {
					t.Fatal(err)
				}
				return secret, k
			}

			// Authenticated in A (then cached), and in B.
			secret, k := newKey(nil)
			for range 2 {
				r := get(f, secret)
				wantStatus(r, 200, "")
				if r.Header.Get("X-RateLimit-Limit") != "60" {
					t.Fatalf("standard plan: X-RateLimit-Limit %q", r.Header.Get("X-RateLimit-Limit"))
				}
			}
			wantStatus(get(p, secret), 200, "")

			// The plan changes in B (as `ams users update` would): A's
			// next request counts against the new limits.
			plan := ams.PlanProfessional
			if _, err := sb.UpdateUser(ctx, f.User.ID, ams.UserUpdate{Plan: &plan}, f.Clock.Now()); err != nil {
				t.Fatal(err)
			}
			if r := get(f, secret); r.Status != 200 || r.Header.Get("X-RateLimit-Limit") != "120" {
				t.Fatalf("after the plan change in B: %d, X-RateLimit-Limit %q, want 120", r.Status, r.Header.Get("X-RateLimit-Limit"))
			}

			// Revoked in B: refused by A's next request.
			if _, err := sb.RevokeKey(ctx, "", k.ID, f.Clock.Now()); err != nil {
				t.Fatal(err)
			}
			wantStatus(get(f, secret), 401, "api_key_revoked")
			wantStatus(get(f, secret), 401, "api_key_revoked")

			// Expiry is the clock's, cached or not.
			exp := f.Clock.Now().Add(time.Hour)
			secret2, _ := newKey(&exp)
			wantStatus(get(f, secret2), 200, "")
			f.Clock.Add(time.Hour)
			wantStatus(get(f, secret2), 401, "api_key_expired")
		})
	}
}

// countingStore counts AuthenticateKey calls.
type countingStore struct {
	ams.Store
	lookups atomic.Int64
}

func (s *countingStore) AuthenticateKey(ctx context.Context, hash string) (*ams.APIKey, *ams.User, error) {
	s.lookups.Add(1)
	return s.Store.AuthenticateKey(ctx, hash)
}

// TestAuthCacheNoLookup: a key is looked up in the store once; later
// requests authenticate from the cache while nothing changes, and the
// lookup happens again after a change of authentication (another key
// revoked) and after the cache's minute. With the cache off every
// request looks it up.
func TestAuthCacheNoLookup(t *testing.T) {
	t.Parallel()
	var cs *countingStore
	f := amstest.New(t, amstest.WithStore(func(db *sqlite.DB) ams.Store {
		cs = &countingStore{Store: db}
		return cs
	}))
	get := func() {
		t.Helper()
		if r := f.Do("GET", "/v1/assistants/"+f.Assistant.ID, f.Key, ""); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	want := func(n int64) {
		t.Helper()
		if got := cs.lookups.Load(); got != n {
			t.Fatalf("%d key lookups, want %d", got, n)
		}
	}
	for range 5 {
		get()
	}
	want(1)
	// Another key revoked: the generation moves, the cache is dropped.
	_, k := ams.NewAPIKey(f.User.ID, "other", ams.Permissions{ams.PermRead}, f.Clock.Now(), nil)
	if err := f.Store.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	get()
	want(1) // creating a key changes nothing cached
	if _, err := f.Store.RevokeKey(context.Background(), "", k.ID, f.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	get()
	get()
	want(2)
	// The safety net: a minute on the clock.
	f.Clock.Add(time.Minute)
	get()
	get()
	want(3)

	// Off: every request looks the key up.
	f = amstest.New(t, amstest.WithStore(func(db *sqlite.DB) ams.Store {
		cs = &countingStore{Store: db}
		return cs
	}))
	f.API.AuthCacheSize = -1
	for range 3 {
		get()
	}
	want(3)
}
