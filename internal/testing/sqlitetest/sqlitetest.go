// Package sqlitetest gives tests a SQLite store of their own, in a
// temporary directory, closed when the test ends: the SQLite twin of
// pgtest.Open.
package sqlitetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/amsdev/ams/sqlite"
)

// Open returns an empty store in a file of the test's own (Path tells
// which), closed when the test ends.
func Open(t testing.TB, opts ...sqlite.Option) *sqlite.DB {
	t.Helper()
	return OpenFile(t, filepath.Join(t.TempDir(), "ams.db"), opts...)
}

// OpenFile opens the store in path (created if missing), as another
// process or a restart would. It is closed when the test ends unless the
// test closed it (to reopen the file, say).
func OpenFile(t testing.TB, path string, opts ...sqlite.Option) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Close twice blocks: a store the test closed answers no ping.
		if db.Ping(context.Background()) == nil {
			db.Close()
		}
	})
	return db
}
