package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/wait"
)

// Faulty is a store that a test can break as a failing database would:
// Break makes it unable to write (a full disk, the server gone), Mend
// undoes that.
type Faulty struct {
	Store       ams.Store
	Break, Mend func(t *testing.T)
}

// writeChecker is what a store that tracks its writes' health has (the
// engines, through sqlstore.Store.CheckWrites).
type writeChecker interface {
	CheckWrites(ctx context.Context) error
}

// RunFaults runs the fault tests (issue 26, point 8): a write to a
// database that cannot write fails with ams.Unavailable (503
// service_unavailable, not an internal error) and leaves nothing stored;
// CheckWrites reports the process unable to write until a write (its
// probe) succeeds again.
func RunFaults(t *testing.T, open func(t *testing.T) Faulty) {
	t.Run("WritesUnavailable", func(t *testing.T) {
		t.Parallel()
		testWritesUnavailable(t, open(t))
	})
}

func testWritesUnavailable(t *testing.T, f Faulty) {
	ctx := context.Background()
	s := f.Store
	wc, ok := s.(writeChecker)
	if !ok {
		t.Fatalf("%T has no CheckWrites", s)
	}
	if err := wc.CheckWrites(ctx); err != nil {
		t.Fatalf("CheckWrites on a sound store: %v", err)
	}
	// Rows of a few kilobytes, so that a full database runs out of pages
	// soon (its free pages are used first).
	hash := strings.Repeat("h", 3000)
	user := func(i int) *ams.User {
		return &ams.User{ID: ams.NewID(ams.PrefixUser), Email: fmt.Sprintf("fault%d@example.com", i), PasswordHash: hash,
			Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0}
	}
	if err := s.CreateUser(ctx, user(0)); err != nil {
		t.Fatal(err)
	}
	f.Break(t)
	created := 1
	var err error
	for ; created < 2000; created++ {
		if err = s.CreateUser(ctx, user(created)); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("2000 users written to a database that cannot write")
	}
	if !ams.IsStorageUnavailable(err) {
		t.Fatalf("a write to a database that cannot write: %v (kind %v), want ams.Unavailable", err, ams.ErrorKindOf(err))
	}
	var ae *ams.Error
	if !errors.As(err, &ae) || strings.Contains(ae.Message, "SQL") || strings.Contains(ae.Message, "full") {
		t.Fatalf("the error's message is not the generic one: %#v", err)
	}
	if err := wc.CheckWrites(ctx); err == nil {
		t.Fatal("CheckWrites reports a database that cannot write as sound")
	}
	f.Mend(t)
	// The first use of a pool whose connections were cut may fail once.
	if !wait.Until(func() bool { err = wc.CheckWrites(ctx); return err == nil }) {
		t.Fatalf("CheckWrites once the database can write again: %v", err)
	}
	if err := s.CreateUser(ctx, user(created)); err != nil {
		t.Fatalf("a write once the database can write again: %v", err)
	}
	n := 0
	for after := ""; ; {
		us, more, err := s.ListUsers(ctx, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			if strings.HasPrefix(u.Email, "fault") {
				n++
			}
			after = u.ID
		}
		if !more {
			break
		}
	}
	if n != created+1 {
		t.Fatalf("%d users stored, want the %d whose writes succeeded", n, created+1)
	}
}
