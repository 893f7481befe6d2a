package sqlite

import (
	"context"
	"fmt"
)

// FillForTest makes the database full, as a full disk would, for tests of
// how ams answers then: the write connection may grow the file by no
// page (PRAGMA max_page_count, which holds for that connection only), so
// a write that needs a new page fails with SQLITE_FULL. UnfillForTest
// lifts the limit.
func (db *DB) FillForTest(ctx context.Context) error {
	var n int64
	if err := db.write.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&n); err != nil {
		return err
	}
	_, err := db.write.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, n))
	return err
}

// UnfillForTest lifts FillForTest's limit: space is free again.
func (db *DB) UnfillForTest(ctx context.Context) error {
	_, err := db.write.ExecContext(ctx, `PRAGMA max_page_count = 4294967294`)
	return err
}
