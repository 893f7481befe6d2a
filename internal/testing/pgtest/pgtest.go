// Package pgtest gives tests a PostgreSQL store of their own: a fresh
// schema on the database AMS_TEST_DATABASE_URL names, dropped when the
// test ends. Without the variable the tests that ask for one skip.
package pgtest

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/postgres"
	"github.com/jackc/pgx/v5"
)

// URL returns the test database's URL, or skips the test.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("AMS_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("PostgreSQL tests skipped: set AMS_TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them")
	}
	return url
}

// Key is the secret key the tests' stores seal with.
var Key = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// FreshSchema returns the name of a schema of the test's own, which does
// not exist yet and is dropped with everything in it when the test ends.
func FreshSchema(t testing.TB, url string) string {
	t.Helper()
	name := "test_" + strings.ToLower(ams.NewSecret("")[:16])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// OpenSchema returns a store in schema (created if missing), closed when
// the test ends; several stores on one schema act as several processes.
func OpenSchema(t testing.TB, url, schema string, opts ...postgres.Option) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, append([]postgres.Option{postgres.WithSecretKey(Key), postgres.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Open returns an empty store in a fresh schema, or skips the test: the
// PostgreSQL twin of sqlitetest.Open.
func Open(t testing.TB, opts ...postgres.Option) *postgres.DB {
	t.Helper()
	url := URL(t)
	return OpenSchema(t, url, FreshSchema(t, url), opts...)
}
