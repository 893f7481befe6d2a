//go:build unix

package sqlite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAuthWatchHeader: once the watch has checked twice, calls with nothing
// committed anywhere answer from the wal-index header without a query; a
// commit through another handle on the file (as another process) makes the
// very next call query, and a revocation there moves the generation that
// call returns.
func TestAuthWatchHeader(t *testing.T) {
	ctx := context.Background()
	a, b, _ := twoHandles(t)
	now := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)
	k := keyAt(t, b, now)
	gen := func() int64 {
		t.Helper()
		g, err := a.AuthGeneration(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g0 := gen()
	if a.auth.wal == nil {
		t.Fatal("the wal-index header was not mapped after the first check")
	}
	gen()
	checks := a.auth.checks.Load()
	for range 100 {
		if g := gen(); g != g0 {
			t.Fatalf("nothing committed: generation %d, want %d", g, g0)
		}
	}
	if n := a.auth.checks.Load() - checks; n != 0 {
		t.Fatalf("%d checks queried with nothing committed, want 0", n)
	}

	if err := b.TouchKey(ctx, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if g := gen(); g != g0 {
		t.Fatalf("after a touch in the other handle: %d, want %d", g, g0)
	}
	if n := a.auth.checks.Load() - checks; n != 1 {
		t.Fatalf("after a commit in the other handle %d checks queried, want 1", n)
	}
	gen()
	if n := a.auth.checks.Load() - checks; n != 1 {
		t.Fatalf("a second call after the commit queried (%d checks), want none", n-1)
	}

	if _, err := b.RevokeKey(ctx, "", k.ID, now); err != nil {
		t.Fatal(err)
	}
	if g := gen(); g <= g0 {
		t.Fatalf("after a revocation in the other handle: %d, want more than %d", g, g0)
	}
}

// TestWALIndexMissing: a database without a wal-index file cannot be
// mapped, and the watch then keeps querying.
func TestWALIndexMissing(t *testing.T) {
	w, err := openWALIndex(filepath.Join(t.TempDir(), "none.db"))
	w.release()
	if err == nil {
		t.Fatal("mapped the wal-index of a database that does not exist")
	}
}

// TestWALIndexKeepsSQLiteLocks: mapping the wal-index, a failed check
// and the closing of one of two handles on the file leave this process's
// lock on the wal-index's "dead man's switch" byte, which another process
// (here a child) sees. Closing a descriptor of the -shm file would drop
// it, and the next process to open the database would then truncate and
// rebuild the wal-index under this one (walindex_unix.go).
func TestWALIndexKeepsSQLiteLocks(t *testing.T) {
	if path := os.Getenv("AMS_TEST_SHM_LOCK"); path != "" {
		// The child: who holds the byte? (A process never sees its own
		// locks, so this looks at the parent's.)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: shmDMS, Len: 1}
		if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
			t.Fatal(err)
		}
		if lk.Type != syscall.F_RDLCK {
			t.Fatalf("the dead man's switch is not read-locked by another process (lock type %d)", lk.Type)
		}
		return
	}
	ctx := context.Background()
	a, b, path := twoHandles(t)
	for range 3 {
		for _, db := range []*DB{a, b} {
			if _, err := db.AuthGeneration(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !a.auth.walOK || !b.auth.walOK || a.auth.wal != b.auth.wal {
		t.Fatalf("the two handles do not share one view of the wal-index: %v %v", a.auth.wal, b.auth.wal)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	a.auth.mu.Lock()
	a.auth.hdrOK = false // so that the next call checks, and fails
	a.auth.mu.Unlock()
	if _, err := a.AuthGeneration(cancelled); err == nil {
		t.Fatal("a check with a cancelled context succeeded")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AuthGeneration(ctx); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALIndexKeepsSQLiteLocks$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AMS_TEST_SHM_LOCK="+path+"-shm")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
}

// shmDMS is the offset of the wal-index's "dead man's switch" byte in the
// -shm file (UNIX_SHM_DMS of SQLite's os_unix.c: (22+8)*4+8).
const shmDMS = 128
