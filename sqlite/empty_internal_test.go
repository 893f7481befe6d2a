package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/amsdev/ams/internal/dump"
)

// EmptyForTest deletes every row of the dump's tables (dependents first)
// and the AUTOINCREMENT counters, in one transaction, so that a test may
// import into the store again without opening a new one (FuzzImport:
// opening a store runs the migrations, which costs far more than an
// import).
func (db *DB) EmptyForTest(ctx context.Context) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i := len(dump.Tables) - 1; i >= 0; i-- {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+dump.Tables[i].Name); err != nil {
			return fmt.Errorf("empty %s: %w", dump.Tables[i].Name, err)
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sqlite_sequence`); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// RowsForTest counts the rows of the dump's tables in one query: the
// emptiness check of FuzzImport, cheaper than an export.
func (db *DB) RowsForTest(ctx context.Context) (int, error) {
	parts := make([]string, len(dump.Tables))
	for i, t := range dump.Tables {
		parts[i] = `(SELECT count(*) FROM ` + t.Name + `)`
	}
	var n int
	err := db.write.QueryRowContext(ctx, `SELECT `+strings.Join(parts, " + ")).Scan(&n)
	return n, err
}
