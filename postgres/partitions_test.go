package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
)

// TestPartitionsByDay: the purge makes the partitions of today and the
// days ahead (moving rows of those days out of the DEFAULT partition),
// events of a day land in its partition, and once a day is wholly past
// the retention the purge drops its partition: its events are gone, the
// next day's stay.
func TestPartitionsByDay(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "part@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: day, UpdatedAt: day}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	emit := func(at time.Time) *ams.Event {
		t.Helper()
		e := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: u.ID, Type: ams.EventTaskCreated,
			Data: map[string]any{"task_id": ams.NewID(ams.PrefixTask)}, CreatedAt: at}
		if err := db.Emit(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	where := func(e *ams.Event) string {
		t.Helper()
		var part string
		if err := db.Pool().QueryRow(ctx, `SELECT tableoid::regclass::text FROM events WHERE id = $1`, e.ID).Scan(&part); err != nil {
			t.Fatal(err)
		}
		return part
	}
	early := emit(day.Add(2 * time.Hour)) // before any partition: DEFAULT
	if got := where(early); got != "events_default" {
		t.Fatalf("an event before maintenance is in %s, want events_default", got)
	}
	if _, err := db.Purge(ctx, day.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := where(early); got != "events_p20260310" {
		t.Fatalf("after maintenance the day's event is in %s, want events_p20260310 (moved out of DEFAULT)", got)
	}
	next := emit(day.Add(26 * time.Hour))
	if got := where(next); got != "events_p20260311" {
		t.Fatalf("an event of the next day is in %s, want events_p20260311", got)
	}
	for _, table := range []string{"webhook_deliveries", "turn_events"} {
		var n int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent
			WHERE p.relname = $1 AND p.relnamespace = current_schema()::regnamespace`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1+1+3 { // DEFAULT, today, 3 days ahead
			t.Fatalf("%s has %d partitions, want 5", table, n)
		}
	}

	// A purge when 10 March is wholly past the retention drops its
	// partition; 11 March is kept (its events are 30 days old only in
	// part).
	if _, err := db.Purge(ctx, day.Add(24*time.Hour+ams.EventRetention+time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FindEvent(ctx, u.ID, early.ID); !ams.IsNotFound(err) {
		t.Fatalf("an event of a dropped day: %v", err)
	}
	var exists bool
	if err := db.Pool().QueryRow(ctx, `SELECT to_regclass('events_p20260310') IS NOT NULL`).Scan(&exists); err != nil || exists {
		t.Fatalf("the partition past retention still exists (%v)", err)
	}
	if _, err := db.FindEvent(ctx, u.ID, next.ID); err != nil {
		t.Fatalf("an event within the retention: %v", err)
	}
}
