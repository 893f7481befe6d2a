package sqlite_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlite"
)

// TestAuthGenerationAcrossHandles: two handles on one file, as two
// processes. A change of authentication committed through one moves the
// generation the other reads on its very next call (PRAGMA data_version
// on its watching connection), while other commits (a key touched) leave
// it; and concurrent readers all see it.
func TestAuthGenerationAcrossHandles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ams.db")
	a, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "two@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := b.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	_, k := ams.NewAPIKey(u.ID, "k", ams.Permissions{ams.PermRead}, now, nil)
	if err := b.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	g0, err := a.AuthGeneration(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.TouchKey(ctx, k.ID, now); err != nil {
		t.Fatal(err)
	}
	if g, err := a.AuthGeneration(ctx); err != nil || g != g0 {
		t.Fatalf("after a touch in the other handle: %d %v, want %d", g, err, g0)
	}
	if _, err := b.RevokeKey(ctx, "", k.ID, now); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if g, err := a.AuthGeneration(ctx); err != nil || g <= g0 {
				t.Errorf("after a revocation in the other handle: %d %v, want more than %d", g, err, g0)
			}
		}()
	}
	wg.Wait()
}
