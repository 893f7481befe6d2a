package sqlstore_test

import (
	"os"
	"slices"
	"testing"

	"github.com/amsdev/ams/sqlstore"
)

// TestMigrationsNumberedAlike holds the engines' migration folders to one
// numbering: the same names under the same numbers, so that a number
// means one change on both (a change one engine does not need is a file
// that does nothing there).
func TestMigrationsNumberedAlike(t *testing.T) {
	var files [2][]string
	for i, engine := range []string{"sqlite", "postgres"} {
		migs, err := sqlstore.Migrations(os.DirFS("../" + engine))
		if err != nil {
			t.Fatal(err)
		}
		for n, m := range migs {
			if m.Version != n+1 {
				t.Errorf("%s: migration %s: number %d expected (no gaps)", engine, m.File, n+1)
			}
			files[i] = append(files[i], m.File)
		}
	}
	if !slices.Equal(files[0], files[1]) {
		t.Errorf("the engines' migrations differ:\nsqlite   %v\npostgres %v", files[0], files[1])
	}
}
