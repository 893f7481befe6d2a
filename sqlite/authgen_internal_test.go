package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// TestAuthWatchRecovers: when a check fails (here its context is already
// cancelled when the query starts), the caller gets the error, the watch drops its
// connection, and the next call opens another and reads the generation
// afresh, a revocation made meanwhile included.
func TestAuthWatchRecovers(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "ams.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 11, 24, 21, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "watch@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	_, k := ams.NewAPIKey(u.ID, "k", ams.Permissions{ams.PermRead}, now, nil)
	if err := db.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	g0, err := db.AuthGeneration(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := db.AuthGeneration(ctx); err != nil || g != g0 {
		t.Fatalf("nothing committed: %d %v, want %d", g, err, g0)
	}
	first := db.auth.conn.dc
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.AuthGeneration(cancelled); err == nil {
		t.Fatal("a check with a cancelled context succeeded")
	}
	if _, err := db.RevokeKey(ctx, "", k.ID, now); err != nil {
		t.Fatal(err)
	}
	if g, err := db.AuthGeneration(ctx); err != nil || g <= g0 {
		t.Fatalf("after the error and a revocation: %d %v, want more than %d", g, err, g0)
	}
	if db.auth.conn.dc == first {
		t.Error("the watch kept the connection of the failed check")
	}
}
