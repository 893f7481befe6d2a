package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// testIdempotencyWithChange (issue 26, M2): in the context of an
// idempotent request, the store records the request's key in the
// transaction of its change, so that a crash between the change and the
// storing of the answer leaves the key done: a retry, even once a running
// claim would count as abandoned, finds the record and never makes the
// change again. A transaction that rolls back, or that only reads,
// leaves the key running (taken over once abandoned). A write outside a
// transaction records the key as well. A record done without an answer
// may be released; one with its answer stays.
func testIdempotencyWithChange(t *testing.T, s ams.Store) {
	u := mustUser(t, s, "idem-change@example.com")
	a := mustAssistant(t, s, u, "A")
	later := t0.Add(ams.IdempotencyAbandoned + time.Second) // the retry, after the first request's process died
	claim := func(key string) (context.Context, *ams.IdempotentRequest) {
		t.Helper()
		if old, err := s.BeginIdempotent(context.Background(), &ams.IdempotencyRecord{UserID: u.ID, Key: key, RequestHash: "h", CreatedAt: t0}); err != nil || old != nil {
			t.Fatalf("claim %s: %+v %v", key, old, err)
		}
		req := &ams.IdempotentRequest{UserID: u.ID, Key: key, RequestHash: "h"}
		return ams.WithIdempotentRequest(context.Background(), req), req
	}
	retry := func(key string) *ams.IdempotencyRecord {
		t.Helper()
		old, err := s.BeginIdempotent(context.Background(), &ams.IdempotencyRecord{UserID: u.ID, Key: key, RequestHash: "h", CreatedAt: later})
		if err != nil {
			t.Fatalf("retry %s: %v", key, err)
		}
		return old
	}
	task := func() *ams.Task {
		return &ams.Task{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: u.ID, AssistantID: a.ID, Title: "t",
			Status: ams.TaskOpen, CreatedAt: t0, UpdatedAt: t0}
	}

	// The change commits, then the process dies before storing the answer.
	ctx, req := claim("k-change")
	tk := task()
	if err := s.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateTask(ctx, tk); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.TaskEvent(ams.EventTaskCreated, tk, t0))
	}); err != nil {
		t.Fatal(err)
	}
	if !req.Committed() {
		t.Error("a committed change did not report its key recorded")
	}
	if old := retry("k-change"); old == nil || !old.Done || old.Response != nil {
		t.Fatalf("retry after a crash that followed the change: %+v, want the record done without an answer (nil: the change is made twice)", old)
	}

	// The answer its service keeps (ams.KeepAnswer) is stored with the
	// key in the transaction of the change: a retry after the crash
	// replays it.
	ctx, req = claim("k-kept")
	req.Answer = func(v any) []byte {
		if t, ok := v.(*ams.Task); ok {
			return []byte("task " + t.ID)
		}
		return nil
	}
	kept := task()
	if err := s.Update(ctx, func(tx ams.Tx) error {
		ams.KeepAnswer(ctx, kept)
		return tx.CreateTask(ctx, kept)
	}); err != nil {
		t.Fatal(err)
	}
	if old := retry("k-kept"); old == nil || !old.Done || string(old.Response) != "task "+kept.ID {
		t.Fatalf("retry after a crash that followed a change whose answer was kept: %+v, want the record done with %q", old, "task "+kept.ID)
	}

	// A rolled-back transaction records nothing.
	ctx, req = claim("k-rollback")
	rollback := errors.New("roll back")
	if err := s.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateTask(ctx, task()); err != nil {
			return err
		}
		return rollback
	}); !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if req.Committed() {
		t.Error("a rolled-back transaction reported its key recorded")
	}
	if old := retry("k-rollback"); old != nil {
		t.Fatalf("retry after a rolled-back change: %+v, want the abandoned claim taken over", old)
	}

	// A transaction that only reads records nothing.
	ctx, req = claim("k-read")
	if err := s.Update(ctx, func(tx ams.Tx) error {
		_, err := tx.FindAssistant(ctx, u.ID, a.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if req.Committed() {
		t.Error("a read-only transaction reported its key recorded")
	}
	if old := retry("k-read"); old != nil {
		t.Fatalf("retry after a read: %+v, want the abandoned claim taken over", old)
	}

	// A write outside a transaction records the key too.
	ctx, req = claim("k-single")
	b := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: u.ID, Name: "B", Model: ams.ModelBuiltin, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateAssistant(ctx, b); err != nil {
		t.Fatal(err)
	}
	if !req.Committed() {
		t.Error("a single write did not report its key recorded")
	}
	if old := retry("k-single"); old == nil || !old.Done {
		t.Fatalf("retry after a single write: %+v, want the record done", old)
	}
	// A failed single write (a duplicate id) records nothing.
	ctx, req = claim("k-single-fails")
	if err := s.CreateAssistant(ctx, b); err == nil {
		t.Fatal("an assistant stored twice")
	}
	if req.Committed() {
		t.Error("a failed write reported its key recorded")
	}

	// The answer, stored after the commit, is what a retry replays; a
	// release keeps it.
	ctx, req = claim("k-answered")
	if err := s.CreateTask(ctx, task()); err != nil {
		t.Fatal(err)
	}
	if !req.Committed() {
		t.Fatal("CreateTask did not report its key recorded")
	}
	if err := s.FinishIdempotent(context.Background(), &ams.IdempotencyRecord{UserID: u.ID, Key: "k-answered", RequestHash: "h",
		Done: true, Response: []byte("answer")}); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseIdempotent(context.Background(), u.ID, "k-answered"); err != nil {
		t.Fatal(err)
	}
	if old := retry("k-answered"); old == nil || !old.Done || string(old.Response) != "answer" {
		t.Fatalf("retry of an answered request: %+v", old)
	}
	// A record done without an answer (a secret not kept) may be released.
	if err := s.ReleaseIdempotent(context.Background(), u.ID, "k-change"); err != nil {
		t.Fatal(err)
	}
	if old := retry("k-change"); old != nil {
		t.Fatalf("a released record without an answer still holds its key: %+v", old)
	}
	// Only one task was made per key that committed.
	pg, err := s.ListTasks(context.Background(), u.ID, ams.TaskFilter{}, ams.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Data) != 3 {
		t.Errorf("%d tasks stored, want 3 (k-change, k-kept, k-answered)", len(pg.Data))
	}
}
