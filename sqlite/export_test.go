package sqlite_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/dump"
	"github.com/amsdev/ams/internal/dump/dumptest"
	"github.com/amsdev/ams/sqlite"
)

// raw opens a plain connection to the store's file, for what ams.Store
// cannot do (read sealed values, alter the schema).
func raw(t *testing.T, db *sqlite.DB) *sql.DB {
	t.Helper()
	r, err := sql.Open("sqlite", "file:"+db.Path()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// filled returns a store holding the dumptest fixture.
func filled(t *testing.T) (*sqlite.DB, *dumptest.Fixture) {
	t.Helper()
	db := open(t)
	return db, dumptest.Fill(t, db)
}

func exportAll(t *testing.T, db *sqlite.DB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := dump.NewWriter(&buf, dump.Header{Engine: sqlite.Engine})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Export(context.Background(), w.Write); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func importAll(db dump.Importer, b []byte) error {
	r, err := dump.NewReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return db.Import(context.Background(), r)
}

// A store exported and imported into a new store (with another secret
// key) reads back the same through ams.Store, exports the same rows, and
// goes on working: pending deliveries are claimed with their secrets, new
// rows are listed after the imported ones.
func TestExportImportRoundTrip(t *testing.T) {
	src, f := filled(t)
	b := exportAll(t, src)
	if !bytes.Contains(b, []byte(`"secret":"whsec_c2VjcmV0LXNpZ25pbmcta2V5LTEyMzQ1Ng=="`)) {
		t.Fatal("the dump does not carry the webhook secret in plaintext")
	}
	dst := open(t) // another directory: another secret.key
	if err := importAll(dst, b); err != nil {
		t.Fatal(err)
	}
	dumptest.SameLines(t, dumptest.Lines(t, src), dumptest.Lines(t, dst))
	dumptest.Compare(t, src, dst, f)

	// The secret was sealed again with the target's key.
	var a, c string
	raw(t, src).QueryRow(`SELECT secret_sealed FROM webhooks WHERE id = ?`, f.Webhooks[0].ID).Scan(&a)
	raw(t, dst).QueryRow(`SELECT secret_sealed FROM webhooks WHERE id = ?`, f.Webhooks[0].ID).Scan(&c)
	if a == "" || c == "" || a == c || strings.Contains(c, f.Webhooks[0].Secret) {
		t.Fatalf("sealed secrets: source %q, target %q", a, c)
	}
	// So was a replaced secret still within its overlap.
	var prev string
	raw(t, dst).QueryRow(`SELECT previous_secret_sealed FROM webhooks WHERE id = ?`, f.Webhooks[2].ID).Scan(&prev)
	if f.Webhooks[2].PreviousSecret == "" || !strings.HasPrefix(prev, "v1:") || strings.Contains(prev, f.Webhooks[2].PreviousSecret) {
		t.Fatalf("sealed previous secret: %q", prev)
	}
	dumptest.CheckMoved(t, dst, f)
}

// A store opened with another key than its own cannot be exported: its
// webhook secrets would not open.
func TestExportWrongKey(t *testing.T) {
	src, _ := filled(t)
	path := src.Path()
	src.Close()
	key := make([]byte, 32)
	rand.Read(key)
	db, err := sqlite.Open(context.Background(), path, sqlite.WithSecretKey(key))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Export(context.Background(), func(*dump.Table, []any) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "cannot open") {
		t.Fatalf("export with the wrong key: %v", err)
	}
}

// Every refused import says why and writes nothing.
func TestImportRefusals(t *testing.T) {
	src, _ := filled(t)
	good := exportAll(t, src)
	lines := strings.SplitAfter(strings.TrimSuffix(string(good), "\n"), "\n")
	header, rows, trailer := lines[0], lines[1:len(lines)-1], lines[len(lines)-1]
	body := strings.Join(rows, "")
	var email string // the one row of emails (no foreign key), and the others
	var notEmail []string
	for _, l := range rows {
		if strings.HasPrefix(l, `{"table":"emails"`) {
			email = l
		} else {
			notEmail = append(notEmail, l)
		}
	}
	cases := []struct {
		name, dump, want string
	}{
		{"empty", "", "empty"},
		{"not an export", "hello\nworld\n", "not an ams export"},
		{"newer version", strings.Replace(header, `"version":1`, `"version":2`, 1) + body + trailer, "format version 2 is newer"},
		{"no trailer", header + body, "truncated"},
		{"cut mid-line", header + body[:len(body)-40], "malformed"},
		{"wrong counts", header + body + strings.Replace(trailer, `"users":2`, `"users":3`, 1), "users: 2 rows, the trailer says 3"},
		{"a row missing", header + strings.Join(rows[:len(rows)-1], "") + trailer, "do not match the trailer"},
		{"malformed JSON", header + rows[0] + "{\"table\":\"users\",\"row\":{\n" + strings.Join(rows[1:], "") + trailer, "line 3: malformed"},
		{"unknown table", header + rows[0] + `{"table":"gadgets","row":{}}` + "\n" + strings.Join(rows[1:], "") + trailer, `unknown table "gadgets"`},
		{"unknown column", header + strings.Replace(rows[0], `"seq":1,`, `"seq":1,"nickname":"x",`, 1) + strings.Join(rows[1:], "") + trailer, `unknown column "nickname"`},
		{"wrong type", header + strings.Replace(rows[0], `"seq":1,`, `"seq":"1",`, 1) + strings.Join(rows[1:], "") + trailer, "want an integer"},
		{"out of order", header + email + strings.Join(notEmail, "") + trailer, "a row of users after rows of emails"},
		{"data after the trailer", string(good) + rows[0], "data after the trailer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := open(t)
			err := importAll(dst, []byte(tc.dump))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("import: %v, want an error with %q", err, tc.want)
			}
			if n := len(dumptest.Lines(t, dst)); n != 0 {
				t.Fatalf("a refused import wrote %d rows", n)
			}
		})
	}

	t.Run("not empty", func(t *testing.T) {
		dst := open(t)
		u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "there@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: dumptest.T0, UpdatedAt: dumptest.T0}
		if err := dst.CreateUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
		err := importAll(dst, good)
		if !errors.Is(err, dump.ErrNotEmpty) || !strings.Contains(err.Error(), "users") {
			t.Fatalf("import into a store with a user: %v", err)
		}
		if n := len(dumptest.Lines(t, dst)); n != 1 {
			t.Fatalf("a refused import left %d rows, want the 1 there before", n)
		}
	})

	// A failure of the database (not of the dump) midway also writes
	// nothing: here a message whose conversation is not in the dump.
	t.Run("foreign key", func(t *testing.T) {
		var kept []string
		drop := ""
		for _, l := range rows {
			if strings.HasPrefix(l, `{"table":"conversations"`) && drop == "" {
				drop = l
				continue
			}
			kept = append(kept, l)
		}
		var end struct{ End dump.Trailer }
		json.Unmarshal([]byte(trailer), &end)
		end.End.Rows--
		end.End.Counts["conversations"]--
		fixed, _ := json.Marshal(map[string]any{"end": end.End})
		dst := open(t)
		err := importAll(dst, []byte(header+strings.Join(kept, "")+string(fixed)+"\n"))
		if err == nil || !strings.Contains(err.Error(), "import messages") {
			t.Fatalf("import with a dangling message: %v", err)
		}
		if n := len(dumptest.Lines(t, dst)); n != 0 {
			t.Fatalf("a failed import wrote %d rows", n)
		}
	})
}

// The export covers every table of the live schema: the tables of
// dump.Tables exist with exactly their columns, and any other table is
// one of dump.Ephemeral; a table or column the export does not know makes
// it fail rather than leave rows behind.
func TestExportCoversSchema(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	if err := db.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	r := raw(t, db)
	var tables []string
	rows, err := r.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		t.Fatal(err)
	}
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
			t.Errorf("exported table %s is not in the SQLite schema", tb.Name)
		}
	}

	export := func() error {
		return db.Export(ctx, func(*dump.Table, []any) error { return nil })
	}
	if _, err := r.Exec(`CREATE TABLE IF NOT EXISTS rate_windows (k TEXT)`); err != nil {
		t.Fatal(err)
	}
	if err := export(); err != nil {
		t.Fatalf("an ephemeral table stops the export: %v", err)
	}
	if _, err := r.Exec(`CREATE TABLE gadgets (id TEXT)`); err != nil {
		t.Fatal(err)
	}
	if err := export(); err == nil || !strings.Contains(err.Error(), "table gadgets is unknown") {
		t.Fatalf("export with an unknown table: %v", err)
	}
	if err := importAll(db, nil); err == nil {
		t.Fatal("import of nothing")
	}
	if _, err := r.Exec(`DROP TABLE gadgets; ALTER TABLE users ADD COLUMN nickname TEXT`); err != nil {
		t.Fatal(err)
	}
	if err := export(); err == nil || !strings.Contains(err.Error(), "users.nickname is unknown") {
		t.Fatalf("export with an unknown column: %v", err)
	}
	// Import checks the target's schema the same way.
	other := open(t)
	b := exportAll(t, other)
	if err := importAll(db, b); err == nil || !strings.Contains(err.Error(), "users.nickname") {
		t.Fatalf("import into a schema with an unknown column: %v", err)
	}
}
