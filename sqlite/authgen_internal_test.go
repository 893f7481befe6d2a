package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAuthWatchRecovers: when a check fails (here its context is already
// cancelled when the check starts), the caller gets the error, the watch drops its
// connection, and the next call opens another and reads the generation
// afresh, a revocation made meanwhile included.
func TestAuthWatchRecovers(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	now := time.Date(2026, 11, 24, 21, 0, 0, 0, time.UTC)
	k := keyAt(t, db, now)
	g0, err := db.AuthGeneration(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := db.AuthGeneration(ctx); err != nil || g != g0 {
		t.Fatalf("nothing committed: %d %v, want %d", g, err, g0)
	}
	first := db.auth.conn.dc
	// A commit, so that the next call checks rather than answering from
	// the wal-index header.
	if err := db.TouchKey(ctx, k.ID, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
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

// TestAuthWatchClosed: after DB.Close the watch answers an error and opens
// no connection (one opened then would outlive the wal-index view).
func TestAuthWatchClosed(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	if _, err := db.AuthGeneration(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AuthGeneration(ctx); !errors.Is(err, errClosed) {
		t.Errorf("after Close: %v, want %v", err, errClosed)
	}
	if db.auth.conn.dc != nil {
		t.Error("the watch opened a connection after Close")
	}
}
