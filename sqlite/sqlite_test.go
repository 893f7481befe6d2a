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
	"github.com/amsdev/ams/internal/testing/wait"
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
	// A TRUNCATE checkpoint that finds a reader of the store's (its pool,
	// its own checkpointer) in the way answers busy and leaves the WAL's
	// old frames, and their text, in place: it is run again until it
	// has copied every frame and emptied the WAL.
	var busy, frames, copied int
	done := wait.Until(func() bool {
		if err := c.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &copied); err != nil {
			t.Fatal(err)
		}
		return busy == 0 && frames == copied
	})
	if !done {
		t.Fatalf("the WAL could not be checkpointed: busy %d, %d frames, %d copied", busy, frames, copied)
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
