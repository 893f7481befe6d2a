package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/sqlite"
	"github.com/amsdev/ams/storetest"
)

func open(t *testing.T) *sqlite.DB {
	t.Helper()
	db := sqlitetest.Open(t)
	return db
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ams.Store { return searchable{open(t)} })
}

// searchable is a test store that can search its files for a text
// (storetest.TextHolder): the database file and its write-ahead log,
// after a checkpoint that empties the log into the file. Deleted content
// is overwritten (secure_delete on the writer), so a text found is a text
// still held.
type searchable struct{ *sqlite.DB }

func (s searchable) HoldsText(t *testing.T, text string) bool {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{s.Path(), s.Path() + "-wal"} {
		b, err := os.ReadFile(name)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(text)) {
			return true
		}
	}
	return false
}

func TestMigrationsIdempotent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ams.db")
	for range 2 {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		v, err := db.SchemaVersion(context.Background())
		if err != nil || v != latestMigration(t) {
			t.Fatalf("schema version %d, %v", v, err)
		}
		db.Close()
	}
}

// latestMigration is the number of the newest migration file in
// migrations/: the schema version a fresh store reaches.
func latestMigration(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	latest := 0
	for _, e := range entries {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "%d_", &n); err == nil && n > latest {
			latest = n
		}
	}
	return latest
}
