package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
)

// TestAuthGenerationAfterPause (issue 26, L1): a process paused longer
// than the acknowledgement wait, while another revoked a key, must not
// trust its memory of the generation when it resumes, even before its
// listener has read the notification waiting on its connection. The
// pause is played with a's clock (the test's) moved past ackWait while
// a's listener is held where it wakes, before it handles what woke it.
func TestAuthGenerationAfterPause(t *testing.T) {
	ctx := context.Background()
	open, _, _ := internalSchema(t)
	a, b := open(), open()
	var mu sync.Mutex
	clock := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	a.auth.now, a.auth.epoch = now, now()
	var hold sync.Mutex
	a.auth.pause = func() { hold.Lock(); hold.Unlock() } // set before a's listener starts

	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "paused@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: clock, UpdatedAt: clock}
	if err := b.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	_, k := ams.NewAPIKey(u.ID, "k", ams.Permissions{ams.PermRead}, clock, nil)
	if err := b.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AuthGeneration(ctx); err != nil { // starts a's listener
		t.Fatal(err)
	}
	wait.Eventually(t, "a's listener to come up", a.auth.live.Load)
	g0, err := a.AuthGeneration(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// a pauses: its listener stops at its next wake, before it handles
	// the notification of the revocation.
	hold.Lock()
	held := true
	defer func() {
		if held {
			hold.Unlock()
		}
	}()
	// b revokes; it waits ackWait for a's acknowledgement, in vain, then
	// returns.
	if _, err := b.RevokeKey(ctx, "", k.ID, clock); err != nil {
		t.Fatal(err)
	}
	// a resumes after more than ackWait, its listener not yet run.
	mu.Lock()
	clock = clock.Add(ackWait + time.Second)
	mu.Unlock()
	g, err := a.AuthGeneration(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g <= g0 {
		t.Fatalf("after a pause longer than ackWait, the generation is %d, the one before the revocation: the cache would serve the revoked key", g)
	}
	// Once the listener runs again it is trusted again, in step.
	hold.Unlock()
	held = false
	wait.Eventually(t, "a's listener to hear the revocation after it resumed", func() bool { return a.auth.heard.Load() >= g })
	if g2, err := a.AuthGeneration(ctx); err != nil || g2 != g {
		t.Fatalf("after the listener resumed: %d %v, want %d", g2, err, g)
	}
}
