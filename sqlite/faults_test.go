package sqlite_test

import (
	"context"
	"testing"

	"github.com/amsdev/ams/storetest"
)

// TestFaults: the shared fault tests, with a full disk played by
// PRAGMA max_page_count on the write connection (FillForTest).
func TestFaults(t *testing.T) {
	storetest.RunFaults(t, func(t *testing.T) storetest.Faulty {
		db := open(t)
		return storetest.Faulty{Store: db,
			Break: func(t *testing.T) {
				if err := db.FillForTest(context.Background()); err != nil {
					t.Fatal(err)
				}
			},
			Mend: func(t *testing.T) {
				if err := db.UnfillForTest(context.Background()); err != nil {
					t.Fatal(err)
				}
			}}
	})
}
