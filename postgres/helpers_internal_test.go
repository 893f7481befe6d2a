package postgres

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/jackc/pgx/v5"
)

// internalSchema returns a function that opens handles on one new schema
// (dropped when the test ends), as separate processes would, with the
// server's URL and the schema's name; the test is skipped without
// AMS_TEST_DATABASE_URL. (pgtest imports this package, so the internal
// tests have their own.)
func internalSchema(t *testing.T) (open func() *DB, url, schema string) {
	t.Helper()
	url = os.Getenv("AMS_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("PostgreSQL tests skipped: set AMS_TEST_DATABASE_URL")
	}
	schema = "test_" + strings.ToLower(ams.NewSecret("")[:16])
	t.Cleanup(func() {
		if c, err := pgx.Connect(context.Background(), url); err == nil {
			c.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			c.Close(context.Background())
		}
	})
	key := make([]byte, 32)
	rand.Read(key)
	open = func() *DB {
		db, err := Open(context.Background(), url, WithSecretKey(key), WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	return open, url, schema
}
