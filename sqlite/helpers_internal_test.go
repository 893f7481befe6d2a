package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// tempDB opens a handle on a new database file, closed when the test ends.
func tempDB(t *testing.T) *DB {
	t.Helper()
	db, _, _ := openHandles(t, 1)
	return db
}

// twoHandles opens two handles on one new database file, as two processes
// would, closed when the test ends (a second Close is harmless).
func twoHandles(t *testing.T) (a, b *DB, path string) {
	t.Helper()
	return openHandles(t, 2)
}

func openHandles(t *testing.T, n int) (a, b *DB, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "ams.db")
	for _, db := range []**DB{&a, &b}[:n] {
		var err error
		if *db, err = Open(context.Background(), path); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*db).Close() })
	}
	return a, b, path
}

// keyAt creates an account with a read key in db, at now.
func keyAt(t *testing.T, db *DB, now time.Time) *ams.APIKey {
	t.Helper()
	ctx := context.Background()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: ams.NewID("u") + "@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	_, k := ams.NewAPIKey(u.ID, "k", ams.Permissions{ams.PermRead}, now, nil)
	if err := db.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	return k
}
