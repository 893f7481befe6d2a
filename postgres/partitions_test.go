package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/postgres"
	"github.com/jackc/pgx/v5"
)

// TestPartitionsByDay: the purge makes the partitions of today and the
// days ahead (moving rows of those days out of the DEFAULT partition),
// turn events of a day land in its partition, and once a day is wholly
// past the retention the purge drops its partition: its rows are gone,
// the next day's stay.
func TestPartitionsByDay(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	turn := ams.NewID(ams.PrefixTurn)
	seq := int64(0)
	add := func(at time.Time) int64 {
		t.Helper()
		seq++
		if err := db.AppendTurnEvents(ctx, []*ams.TurnEvent{{TurnID: turn, Seq: seq, Type: "message.delta",
			Data: json.RawMessage(`{"delta":"x"}`), CreatedAt: at}}); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	where := func(seq int64) string {
		t.Helper()
		var part string
		if err := db.Pool().QueryRow(ctx, `SELECT tableoid::regclass::text FROM turn_events WHERE turn_id = $1 AND seq = $2`, turn, seq).Scan(&part); err != nil {
			t.Fatal(err)
		}
		return part
	}
	early := add(day.Add(2 * time.Hour)) // before any partition: DEFAULT
	if got := where(early); got != "turn_events_default" {
		t.Fatalf("a row before maintenance is in %s, want turn_events_default", got)
	}
	if _, err := db.Purge(ctx, day.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := where(early); got != "turn_events_p20260310" {
		t.Fatalf("after maintenance the day's row is in %s, want turn_events_p20260310 (moved out of DEFAULT)", got)
	}
	next := add(day.Add(26 * time.Hour))
	if got := where(next); got != "turn_events_p20260311" {
		t.Fatalf("a row of the next day is in %s, want turn_events_p20260311", got)
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
	// partition; 11 March is kept (its rows are 30 days old only in part).
	if _, err := db.Purge(ctx, day.Add(24*time.Hour+ams.EventRetention+time.Hour)); err != nil {
		t.Fatal(err)
	}
	var exists bool
	if err := db.Pool().QueryRow(ctx, `SELECT to_regclass('turn_events_p20260310') IS NOT NULL`).Scan(&exists); err != nil || exists {
		t.Fatalf("the partition past retention still exists (%v)", err)
	}
	left, err := db.TurnEvents(ctx, turn, 0, 10)
	if err != nil || len(left) != 1 || left[0].Seq != next {
		t.Fatalf("after the drop %d rows left (%v), want the next day's", len(left), err)
	}
}

// TestPartitionMadeWhileWritten: a day's partition made while a
// transaction that wrote a row of that day into DEFAULT is still open
// (processes write history before their first purge makes today's
// partition) waits for it and takes its row along, instead of failing
// the ATTACH on a row it did not move (23514).
func TestPartitionMadeWhileWritten(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	day := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	turn := ams.NewID(ams.PrefixTurn)
	tx, pid := openTx(t, db)
	if _, err := tx.Exec(ctx, `INSERT INTO turn_events (turn_id, seq, type, data, created_at) VALUES ($1, 1, 'message.delta', '{}', $2)`,
		turn, day.Add(time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	made := make(chan error, 1)
	go func() { made <- db.EnsurePartitions(ctx, day, day) }()
	// The maintenance waits for the open writer: some backend is blocked
	// by it.
	wait.Eventually(t, "the partition maintenance to wait for the open writer", func() bool {
		var n int
		err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&n)
		return err == nil && n > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-made; err != nil {
		t.Fatalf("making the partition while a row of its day was being written: %v", err)
	}
	// Under a load that outlasts the lock timeout the maintenance gave up
	// for this run; the next one makes it.
	if err := db.EnsurePartitions(ctx, day, day); err != nil {
		t.Fatal(err)
	}
	var part string
	if err := db.Pool().QueryRow(ctx, `SELECT tableoid::regclass::text FROM turn_events WHERE turn_id = $1`, turn).Scan(&part); err != nil {
		t.Fatal(err)
	}
	if part != "turn_events_p20260401" {
		t.Fatalf("the row written while the partition was made is in %s, want turn_events_p20260401", part)
	}
}

// TestPartitionMadeByTwoProcessesAtOnce: two processes making the same
// day's partition at once (each process runs its purge at start, and a
// multi-process run starts them together) do not deadlock: one makes it,
// the other finds it made, and neither reports an error. Both are held
// behind an open writer first so that they reach the locks together.
func TestPartitionMadeByTwoProcessesAtOnce(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	day := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	tx, _ := openTx(t, db)
	if _, err := tx.Exec(ctx, `INSERT INTO turn_events (turn_id, seq, type, data, created_at) VALUES ($1, 1, 'message.delta', '{}', $2)`,
		ams.NewID(ams.PrefixTurn), day.Add(time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	made := make(chan error, 2)
	for range 2 {
		go func() { made <- db.EnsurePartitions(ctx, day, day) }()
	}
	// Both wait for the writer (the second one for the writer, or for
	// the first maker, which waits for the writer).
	wait.Eventually(t, "both makers to wait", func() bool {
		var n int
		err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE cardinality(pg_blocking_pids(pid)) > 0
			AND query LIKE 'LOCK TABLE%'`).Scan(&n)
		return err == nil && n >= 2
	})
	commitThenAnswers(t, tx, made, 2, "making a partition while another process makes it")
	if !partitionExists(t, db, "turn_events_p20260501") {
		t.Fatal("the day's partition was not made")
	}
}

// TestPartitionDroppedByTwoProcessesAtOnce: two purges dropping the same
// partition past the retention at once (both listed it) do not fail:
// the second finds it gone.
func TestPartitionDroppedByTwoProcessesAtOnce(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	day := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	if err := db.EnsurePartitions(ctx, day, day.Add(postgres.PartitionDaysAhead*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A reader of the tables holds both drops behind it.
	tx, pid := openTx(t, db)
	for _, table := range []string{"webhook_deliveries", "turn_events"} {
		if _, err := tx.Exec(ctx, `SELECT count(*) FROM `+table); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 2)
	for range 2 {
		// now is the first day: its partitions exist, nothing to make;
		// the cutoff is past the first day only.
		go func() { _, err := db.MaintainPartitions(ctx, day, day.Add(24*time.Hour)); done <- err }()
	}
	wait.Eventually(t, "both drops to wait for the reader", func() bool {
		var n int
		err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&n)
		return err == nil && n >= 2
	})
	commitThenAnswers(t, tx, done, 2, "dropping a partition while another process drops it")
	// Under a load that outlasts the lock timeout both gave up for this
	// run; the next one drops it.
	if _, err := db.MaintainPartitions(ctx, day, day.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if partitionExists(t, db, "turn_events_p20260601") {
		t.Fatal("the partition past retention still exists")
	}
}

// commitThenAnswers commits tx, which holds n partition maintenances
// back, and checks that each then answers nil on answers.
func commitThenAnswers(t *testing.T, tx pgx.Tx, answers <-chan error, n int, what string) {
	t.Helper()
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-answers; err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// partitionExists reports whether the partition (a table) exists.
func partitionExists(t *testing.T, db *postgres.DB, name string) bool {
	t.Helper()
	var exists bool
	if err := db.Pool().QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}

// openTx begins a transaction, rolled back at the test's end unless
// committed, and returns it with its backend's pid.
func openTx(t *testing.T, db *postgres.DB) (pgx.Tx, int) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) })
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return tx, pid
}
