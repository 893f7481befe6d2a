package storetest

import (
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// OldLayout returns an engine's migrations (fsys, migrations/*.sql) as an
// older layout numbered them, for tests of the upgrade from it: renamed
// maps a file's name now to its name then ("": the layout had no such
// file), and only the files numbered up to upTo then are kept. The files'
// text is the same: a migration is never edited once applied.
func OldLayout(t testing.TB, fsys fs.FS, upTo int, renamed map[string]string) fs.FS {
	t.Helper()
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for _, n := range names {
		old := path.Base(n)
		if m, ok := renamed[old]; ok {
			old = m
		}
		if old == "" {
			continue
		}
		if v, _ := strconv.Atoi(old[:4]); v > upTo {
			continue
		}
		body, err := fs.ReadFile(fsys, n)
		if err != nil {
			t.Fatal(err)
		}
		out["migrations/"+old] = &fstest.MapFile{Data: body}
	}
	return out
}

// SameSchema fails t unless an upgraded store's schema (one line per
// object) and migration records are a new store's (want, wantRecords).
func SameSchema(t testing.TB, schema, records, want, wantRecords []string) {
	t.Helper()
	if len(want) < 50 || len(wantRecords) < 24 {
		t.Fatalf("a new store's schema: %d objects, %d migrations", len(want), len(wantRecords))
	}
	if !slices.Equal(schema, want) {
		t.Errorf("schema after the upgrade differs from a new store's:\n%s\nwant\n%s", missing(schema, want), missing(want, schema))
	}
	if !slices.Equal(records, wantRecords) {
		t.Errorf("schema_migrations after the upgrade:\n%v\nwant\n%v", records, wantRecords)
	}
}

// missing returns the lines of a that b lacks.
func missing(a, b []string) string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n")
}
