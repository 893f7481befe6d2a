package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// BenchmarkCatchUpLatePage reads the page of the catch-up list
// (order=asc, after=) that follows an event near the end of an account's
// 100,000 events: its cost should not grow with the events before the
// cursor (issue 33's finding: on SQLite the (txid, seq) cursor read the
// account's events from its first one).
func BenchmarkCatchUpLatePage(b *testing.B) {
	db := open(&testing.T{})
	b.Cleanup(func() { db.Close() })
	ctx := context.Background()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "catchup@example.com", PasswordHash: "x", Plan: ams.PlanStandard,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := db.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	var cursor string
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += 1000 {
		evs := make([]*ams.Event, 1000)
		for j := range evs {
			evs[j] = &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskCreated,
				CreatedAt: at, Data: map[string]any{"i": i + j}}
			if i+j == n-100 {
				cursor = evs[j].ID
			}
		}
		if err := db.Emit(ctx, evs...); err != nil {
			b.Fatal(err)
		}
	}
	p := ams.ListParams{Limit: 20, Order: ams.OrderAsc, After: cursor}
	for b.Loop() {
		pg, err := db.ListEvents(ctx, u.ID, ams.EventFilter{}, p)
		if err != nil || len(pg.Data) != 20 {
			b.Fatalf("%d events, %v", len(pg.Data), err)
		}
	}
}
