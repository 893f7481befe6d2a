package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/jackc/pgx/v5"
)

// TestAuthGenerationAcrossHandles: two handles on one schema, as two
// processes. A revocation committed through one reaches the other by
// notification (read from memory, no query); while the other's listening
// connection is cut it reads the table, and once it listens again it is
// back in step; a change returns only once the listeners acknowledged it.
func TestAuthGenerationAcrossHandles(t *testing.T) {
	ctx := context.Background()
	open, url, schema := internalSchema(t)
	a, b := open(), open()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "two@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := b.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	newKey := func() *ams.APIKey {
		_, k := ams.NewAPIKey(u.ID, "k", ams.Permissions{ams.PermRead}, now, nil)
		if err := b.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	k1, k2 := newKey(), newKey()
	g0, err := a.AuthGeneration(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitLive := func() {
		t.Helper()
		wait.Eventually(t, "a's listener to come up", a.auth.live.Load)
	}
	waitLive()
	// Moves within the time a notification takes, with no query by a.
	waitGen := func(above int64) int64 {
		t.Helper()
		var g int64
		if !wait.Until(func() bool {
			var err error
			if g, err = a.AuthGeneration(ctx); err != nil {
				t.Fatal(err)
			}
			return g > above
		}) {
			t.Fatalf("the generation stayed at %d after the other handle's change", g)
		}
		return g
	}
	if _, err := b.RevokeKey(ctx, "", k1.ID, now); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	g1 := waitGen(g0)
	t.Logf("a saw the revocation %v after it returned in b", time.Since(start))

	// Cut a's listening connection: until it listens again a reads the
	// table, so a change made meanwhile is seen at once.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var cut bool
	if err := conn.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int64(a.auth.pid.Load())).Scan(&cut); err != nil || !cut {
		t.Fatalf("terminate a's listening connection: %v %v", cut, err)
	}
	wait.Eventually(t, "a to notice its listener was cut", func() bool { return !a.auth.live.Load() })
	if _, err := b.RevokeKey(ctx, "", k2.ID, now); err != nil {
		t.Fatal(err)
	}
	if g, err := a.AuthGeneration(ctx); err != nil || g <= g1 {
		t.Fatalf("while a does not listen: %d %v, want more than %d", g, err, g1)
	}
	waitLive()
	plan := ams.PlanProfessional
	if _, err := b.UpdateUser(ctx, u.ID, ams.UserUpdate{Plan: &plan}, now); err != nil {
		t.Fatal(err)
	}
	g2, _ := b.Store.AuthGeneration(ctx) // the table
	// b's UpdateUser returned once a had acknowledged: a knows already.
	if g, err := a.AuthGeneration(ctx); err != nil || g != g2 {
		t.Errorf("after listening again: %d %v, the table says %d", g, err, g2)
	}
	var heard int64
	if err := conn.QueryRow(ctx, `SELECT heard FROM `+pgx.Identifier{schema, "auth_listeners"}.Sanitize()+` WHERE process = $1`,
		a.auth.process).Scan(&heard); err != nil || heard != g2 {
		t.Errorf("a's acknowledgement: %d %v, want %d", heard, err, g2)
	}
	// Closed, a no longer holds up changes.
	a.Close()
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "auth_listeners"}.Sanitize()+` WHERE process = $1`,
		a.auth.process).Scan(&n); err != nil || n != 0 {
		t.Errorf("a's row after Close: %d %v", n, err)
	}
}
