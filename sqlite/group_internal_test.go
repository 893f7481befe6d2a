package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/sqlstore"
)

// taskStore opens a store with an account and an assistant, and returns
// it, the account, and a function that makes a task of the assistant.
func taskStore(t *testing.T) (*DB, *ams.User, func(title string) *ams.Task) {
	t.Helper()
	ctx := context.Background()
	db := tempDB(t)
	now := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "group@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: u.ID, Name: "A", Model: ams.ModelBuiltin, CreatedAt: now, UpdatedAt: now}
	if err := db.CreateAssistant(ctx, a); err != nil {
		t.Fatal(err)
	}
	return db, u, func(title string) *ams.Task {
		return &ams.Task{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: u.ID, AssistantID: a.ID, Title: title,
			Status: ams.TaskOpen, CreatedAt: now, UpdatedAt: now}
	}
}

// TestGroupCommit holds the write connection with one transaction while
// 200 more queue up, then lets them run: they commit in two groups (of at
// most maxGroup), each caller gets its own function's outcome, the writes
// of a failed or panicking function are undone and the others' kept, and
// a panic reaches its caller.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	db, u, task := taskStore(t)
	txs0, commits0 := db.GroupCommits()
	release := make(chan struct{})
	holding := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := db.Update(ctx, func(tx ams.Tx) error {
			close(holding)
			<-release
			return tx.CreateTask(ctx, task("first"))
		})
		if err != nil {
			t.Errorf("first: %v", err)
		}
	}()
	<-holding

	const n = 200
	errBad := errors.New("bad input")
	results := make([]error, n)
	panics := make([]any, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[i] = recover() }()
			results[i] = db.Update(ctx, func(tx ams.Tx) error {
				if err := tx.CreateTask(ctx, task(fmt.Sprintf("t%03d", i))); err != nil {
					return err
				}
				switch {
				case i%7 == 3: // wrote, then failed: its task must go
					return errBad
				case i == 100:
					panic("boom")
				}
				return nil
			})
		}()
	}
	// Wait until the 200 are queued behind the first, then let it go.
	wait.Eventually(t, fmt.Sprintf("%d transactions to be queued", n), func() bool { return db.group.group.Queued() == n })
	close(release)
	wg.Wait()

	want := map[string]bool{"first": true}
	for i := range n {
		title := fmt.Sprintf("t%03d", i)
		switch {
		case i%7 == 3:
			if !errors.Is(results[i], errBad) {
				t.Errorf("%s: %v, want its own error", title, results[i])
			}
		case i == 100:
			if panics[i] != "boom" {
				t.Errorf("%s: panic %v, want boom", title, panics[i])
			}
		default:
			if results[i] != nil || panics[i] != nil {
				t.Errorf("%s: %v %v", title, results[i], panics[i])
			}
			want[title] = true
		}
	}
	got := map[string]bool{}
	for p := (ams.ListParams{Limit: 100}); ; {
		page, err := db.ListTasks(ctx, u.ID, ams.TaskFilter{}, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range page.Data {
			got[tk.Title] = true
		}
		if !page.HasMore {
			break
		}
		p.After = page.Data[len(page.Data)-1].ID
	}
	if len(got) != len(want) {
		t.Errorf("%d tasks stored, want %d", len(got), len(want))
	}
	for title := range want {
		if !got[title] {
			t.Errorf("task %s missing", title)
		}
	}
	txs, commits := db.GroupCommits()
	if txs-txs0 != int64(len(want)) || commits-commits0 != 3 { // the first alone, then 128 and 72
		t.Errorf("%d transactions in %d commits, want %d in 3", txs-txs0, commits-commits0, len(want))
	}
}

// TestGroupCommitCancelled: a caller whose context ends while it waits
// gets its context's error, and its function never runs.
func TestGroupCommitCancelled(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	release, holding := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.Update(ctx, func(tx ams.Tx) error { close(holding); <-release; return nil })
	}()
	<-holding
	cctx, cancel := context.WithCancel(ctx)
	ran := false
	errc := make(chan error, 1)
	go func() { errc <- db.Update(cctx, func(tx ams.Tx) error { ran = true; return nil }) }()
	wait.Eventually(t, "the caller to be queued", func() bool { return db.group.group.Queued() == 1 })
	cancel()
	close(release)
	if err := <-errc; !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("cancelled caller: %v, ran %v", err, ran)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitCallerCancelsMidway: a caller whose context ends while
// its function runs in a group does not touch the group's transaction
// (SQLite would roll all of it back on an interrupted statement): its
// statements run to their end, and it and the others commit.
func TestGroupCommitCallerCancelsMidway(t *testing.T) {
	ctx := context.Background()
	db, u, task := taskStore(t)
	release, holding := make(chan struct{}), make(chan struct{})
	errs := make(chan error, 3)
	go func() {
		errs <- db.Update(ctx, func(tx ams.Tx) error { close(holding); <-release; return tx.CreateTask(ctx, task("first")) })
	}()
	<-holding
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		errs <- db.Update(cctx, func(tx ams.Tx) error {
			cancel() // the caller goes away while its function runs
			return tx.CreateTask(cctx, task("cancelled midway"))
		})
	}()
	go func() { errs <- db.Update(ctx, func(tx ams.Tx) error { return tx.CreateTask(ctx, task("other")) }) }()
	wait.Eventually(t, "two callers to be queued", func() bool { return db.group.group.Queued() == 2 })
	close(release)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	page, err := db.ListTasks(ctx, u.ID, ams.TaskFilter{}, ams.ListParams{Limit: 10})
	if err != nil || len(page.Data) != 3 {
		t.Fatalf("%d tasks stored (%v), want 3", len(page.Data), err)
	}
}

// TestCheckpointer: with the automatic checkpoint at its high threshold,
// the checkpointer's connection copies the WAL written by the write
// connection into the database, without the writer's help.
func TestCheckpointer(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	var pages int
	if err := db.write.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&pages); err != nil || pages != autoCheckpointPages {
		t.Fatalf("wal_autocheckpoint %d (%v), want %d", pages, err, autoCheckpointPages)
	}
	before := db.ckpt.full.Load()
	now := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	for i := range 50 {
		u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: fmt.Sprintf("ckpt%d@example.com", i), Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
		if err := db.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	wait.Eventually(t, "a checkpoint to copy the WAL", func() bool { return db.ckpt.full.Load() != before })
}

// TestWritesWaiting: the engine tells the purge that other writes
// wanted the writer while one is queued behind a transaction in
// progress, and once they have run beside it; a transaction alone is
// none.
func TestWritesWaiting(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	e := &engine{group: db.group}
	mark := e.WriteMark()
	if err := db.group.run(ctx, func(sqlstore.Conn) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if e.WritesWaiting(mark) {
		t.Fatal("writes waiting after one transaction alone")
	}
	mark = e.WriteMark()
	holding, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- db.group.run(ctx, func(sqlstore.Conn) error { close(holding); <-release; return nil })
	}()
	<-holding
	second := make(chan error, 1)
	go func() { second <- db.group.run(ctx, func(sqlstore.Conn) error { return nil }) }()
	wait.Eventually(t, "a write to wait behind the one in progress", func() bool { return db.group.group.Queued() == 1 })
	if !e.WritesWaiting(mark) {
		t.Fatal("no writes waiting while one is queued")
	}
	close(release)
	for _, c := range []chan error{first, second} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if !e.WritesWaiting(mark) {
		t.Fatal("no writes counted after another ran beside the first")
	}
}

// TestCloseTwice: closing a store twice is harmless.
func TestCloseTwice(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "ams.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db.Close()
}

// TestCheckpointerTruncatesQuietWAL: a WAL grown large by writes while a
// reader kept it from starting over keeps its file's size while writes
// go on; once the store has been quiet for a second, the checkpointer
// truncates the file to nothing, and the store goes on as before. Its
// connection has no busy timeout, so that it never holds writers while
// it waits.
func TestCheckpointerTruncatesQuietWAL(t *testing.T) {
	ctx := context.Background()
	db := tempDB(t)
	db.ckpt.over.Store(1 << 20)
	var timeout int
	if err := db.ckpt.db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&timeout); err != nil || timeout != 0 {
		t.Fatalf("the checkpointer's busy timeout %d (%v), want 0", timeout, err)
	}
	if _, err := db.write.ExecContext(ctx, `CREATE TABLE scratch (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	// A reader in the WAL: the WAL cannot start over while it reads.
	rtx, err := db.read.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rtx.QueryRowContext(ctx, `SELECT count(*) FROM scratch`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	for range 40 {
		if _, err := db.write.ExecContext(ctx, `INSERT INTO scratch (b) VALUES (randomblob(65536))`); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		st, err := os.Stat(db.path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	if s := size(); s <= 2<<20 {
		t.Fatalf("the WAL is %d bytes after 2.5 MiB written behind a reader", s)
	}
	rtx.Rollback()
	wait.Eventually(t, "the quiet store's WAL to be truncated", func() bool { return db.ckpt.truncated.Load() > 0 && size() == 0 })
	if _, err := db.write.ExecContext(ctx, `INSERT INTO scratch (b) VALUES (x'01')`); err != nil {
		t.Fatal(err)
	}
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM scratch`).Scan(&n); err != nil || n != 41 {
		t.Fatalf("%d rows after the truncation (%v), want 41", n, err)
	}
}
