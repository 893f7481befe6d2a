package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlite"
)

// TestFilesReadableByOwnerOnly (L5): the database file and the -wal and
// -shm files SQLite makes beside it are 0600 whatever the umask lets
// through; an existing database or -wal file with a wider mode is
// tightened when the store is opened.
func TestFilesReadableByOwnerOnly(t *testing.T) {
	wantModes := func(t *testing.T, dir string) {
		t.Helper()
		for _, name := range []string{"ams.db", "ams.db-wal", "ams.db-shm", "secret.key"} {
			st, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v, want -rw-------", name, st.Mode().Perm())
			}
		}
	}
	write := func(t *testing.T, db *sqlite.DB) {
		t.Helper()
		now := time.Now().UTC()
		u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: ams.NewID("x") + "@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
		if err := db.CreateUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("new", func(t *testing.T) {
		dir := t.TempDir()
		db, err := sqlite.Open(context.Background(), filepath.Join(dir, "ams.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		write(t, db)
		wantModes(t, dir)
	})
	t.Run("existing with a wider mode", func(t *testing.T) {
		dir := t.TempDir()
		db, err := sqlite.Open(context.Background(), filepath.Join(dir, "ams.db"))
		if err != nil {
			t.Fatal(err)
		}
		write(t, db)
		db.Close()
		for _, name := range []string{"ams.db", "secret.key"} {
			if err := os.Chmod(filepath.Join(dir, name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if db, err = sqlite.Open(context.Background(), filepath.Join(dir, "ams.db")); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		write(t, db)
		wantModes(t, dir)
	})
}
