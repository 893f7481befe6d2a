package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/dump"
	"github.com/amsdev/ams/internal/dump/dumptest"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/postgres"
	"github.com/amsdev/ams/sqlite"
)

func exportAll(t *testing.T, ex dump.Exporter, engine string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := dump.NewWriter(&buf, dump.Header{Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Export(context.Background(), w.Write); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func importAll(im dump.Importer, b []byte) error {
	r, err := dump.NewReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return im.Import(context.Background(), r)
}

// openSQLite returns a new SQLite store in a directory of the test's own.
func openSQLite(t *testing.T) *sqlite.DB {
	t.Helper()
	db := sqlitetest.Open(t)
	return db
}

// filledSQLite returns a SQLite store holding the dumptest fixture.
func filledSQLite(t *testing.T) (*sqlite.DB, *dumptest.Fixture) {
	t.Helper()
	db := openSQLite(t)
	return db, dumptest.Fill(t, db)
}

// SQLite to PostgreSQL: everything reads back the same through ams.Store
// and exports the same rows; the moved store claims the pending
// deliveries with their secrets (sealed again with the PostgreSQL key)
// and lists new rows after the imported ones. Then back to a new SQLite
// store, which exports the same rows again.
func TestImportFromSQLite(t *testing.T) {
	databaseURL(t)
	src, f := filledSQLite(t)
	b := exportAll(t, src, sqlite.Engine)
	dst := open(t)
	if err := importAll(dst, b); err != nil {
		t.Fatal(err)
	}
	want := dumptest.Lines(t, src)
	dumptest.SameLines(t, want, dumptest.Lines(t, dst))
	dumptest.Compare(t, src, dst, f)

	var sealed string
	if err := dst.Pool().QueryRow(context.Background(), `SELECT secret_sealed FROM webhooks WHERE id = $1`, f.Webhooks[0].ID).Scan(&sealed); err != nil ||
		!strings.HasPrefix(sealed, "v1:") || strings.Contains(sealed, f.Webhooks[0].Secret) {
		t.Fatalf("sealed secret in PostgreSQL: %q %v", sealed, err)
	}

	back := openSQLite(t)
	if err := importAll(back, exportAll(t, dst, postgres.Engine)); err != nil {
		t.Fatalf("PostgreSQL to SQLite: %v", err)
	}
	dumptest.SameLines(t, want, dumptest.Lines(t, back))

	dumptest.CheckMoved(t, dst, f)
	dumptest.CheckMoved(t, back, f)
}

// PostgreSQL to PostgreSQL (another schema, another key).
func TestImportPostgresToPostgres(t *testing.T) {
	url := databaseURL(t)
	sqliteSrc, f := filledSQLite(t)
	src := open(t)
	if err := importAll(src, exportAll(t, sqliteSrc, sqlite.Engine)); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	copy(key, "another key, another key, anoth")
	dst, err := postgres.Open(context.Background(), url, postgres.WithSecretKey(key), postgres.WithSchema(createSchema(t, url)))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := importAll(dst, exportAll(t, src, postgres.Engine)); err != nil {
		t.Fatal(err)
	}
	dumptest.SameLines(t, dumptest.Lines(t, src), dumptest.Lines(t, dst))
	dumptest.Compare(t, src, dst, f)
	dumptest.CheckMoved(t, dst, f)
}

// Refused imports write nothing: into a store with rows, a truncated
// dump, and a dump that PostgreSQL refuses midway (a NUL character, which
// SQLite stores and PostgreSQL text cannot hold).
func TestImportRefusalsPostgres(t *testing.T) {
	databaseURL(t)
	src, _ := filledSQLite(t)
	good := exportAll(t, src, sqlite.Engine)
	ctx := context.Background()

	dst := open(t)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "there@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: dumptest.T0, UpdatedAt: dumptest.T0}
	if err := dst.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := importAll(dst, good); !errors.Is(err, dump.ErrNotEmpty) {
		t.Fatalf("import into a store with a user: %v", err)
	}
	if n := len(dumptest.Lines(t, dst)); n != 1 {
		t.Fatalf("a refused import left %d rows, want the 1 there before", n)
	}

	lines := strings.SplitAfter(strings.TrimSuffix(string(good), "\n"), "\n")
	for name, tc := range map[string]struct{ dump, want string }{
		"truncated":    {strings.Join(lines[:len(lines)-1], ""), "truncated"},
		"wrong counts": {strings.Join(lines[:len(lines)-1], "") + strings.Replace(lines[len(lines)-1], `"login_sessions":1`, `"login_sessions":2`, 1), "do not match the trailer"},
		"NUL":          {strings.Replace(string(good), `"content":"Bob here"`, `"content":"Bob\u0000here"`, 1), "import messages"},
	} {
		t.Run(name, func(t *testing.T) {
			dst := open(t)
			err := importAll(dst, []byte(tc.dump))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("import: %v, want an error with %q", err, tc.want)
			}
			if n := len(dumptest.Lines(t, dst)); n != 0 {
				t.Fatalf("a refused import wrote %d rows", n)
			}
			// Nothing moved the seq identities either.
			var next int64
			if err := dst.Pool().QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('users', 'seq'))`).Scan(&next); err != nil || next != 1 {
				t.Fatalf("users seq after a refused import: %d %v", next, err)
			}
		})
	}
}

// The export covers every table of the live PostgreSQL schema; a table or
// column it does not know makes it fail.
func TestExportCoversSchemaPostgres(t *testing.T) {
	databaseURL(t)
	ctx := context.Background()
	db := open(t)
	if err := db.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Pool().Query(ctx, `SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	for _, n := range tables {
		if dump.Lookup(n) == nil && n != dump.Bookkeeping && !slices.Contains(dump.Ephemeral, n) {
			t.Errorf("table %s is neither exported nor ephemeral", n)
		}
	}
	for _, tb := range dump.Tables {
		if !slices.Contains(tables, tb.Name) {
			t.Errorf("exported table %s is not in the PostgreSQL schema", tb.Name)
		}
	}
	export := func() error { return db.Export(ctx, func(*dump.Table, []any) error { return nil }) }
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE gadgets (id TEXT)`); err != nil {
		t.Fatal(err)
	}
	if err := export(); err == nil || !strings.Contains(err.Error(), "table gadgets is unknown") {
		t.Fatalf("export with an unknown table: %v", err)
	}
	if _, err := db.Pool().Exec(ctx, `DROP TABLE gadgets; ALTER TABLE messages ADD COLUMN edited_at BIGINT`); err != nil {
		t.Fatal(err)
	}
	if err := export(); err == nil || !strings.Contains(err.Error(), "messages.edited_at is unknown") {
		t.Fatalf("export with an unknown column: %v", err)
	}
}
