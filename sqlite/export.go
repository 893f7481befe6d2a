package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"

	"github.com/amsdev/ams/internal/dump"
	"github.com/amsdev/ams/sqlstore"
)

var (
	_ dump.Exporter = (*DB)(nil)
	_ dump.Importer = (*DB)(nil)
)

// Engine is the engine name written in the headers of exports.
const Engine = "sqlite"

// schema describes SQLite's tables to the dump: their columns from
// pragma_table_info (pk > 0: part of the primary key).
var schema = sqlstore.Schema{
	Query: `SELECT m.name, c.name, c.type, c."notnull", c.pk > 0
		FROM sqlite_master m JOIN pragma_table_info(m.name) c
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\'
		ORDER BY m.name, c.cid`,
	TypeOK: typeOK,
}

// typeOK reports whether a column of the declared SQLite type holds values
// of kind k.
func typeOK(k dump.Kind, declared string) bool {
	switch strings.ToUpper(declared) {
	case "TEXT":
		return k == dump.Text || k == dump.JSON || k == dump.Secret
	case "INTEGER":
		return k == dump.Int || k == dump.Bool
	case "BLOB":
		return k == dump.Bytes
	}
	return false
}

// Export calls fn with every row of every table of dump.Tables, in their
// order, each table's rows in its stable order, from one snapshot (a read
// transaction: writers may go on meanwhile and are not seen). Webhook
// secrets are passed in plaintext. Rows are streamed, never held.
func (db *DB) Export(ctx context.Context, fn dump.RowFunc) error {
	tx, err := db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("sqlite: export: begin: %w", err)
	}
	defer tx.Rollback()
	return db.ExportFrom(ctx, conn{db: tx}, fn)
}

// Import loads the dump r into the store, which must be empty (every table
// of dump.Tables without rows): all of it in one transaction, committed
// only once the dump has been read to its end and its trailer matches, so
// that a failed import writes nothing. It keeps ids, seq values and times,
// and seals webhook secrets with this store's key.
func (db *DB) Import(ctx context.Context, r *dump.Reader) error {
	tx, err := db.write.BeginTx(ctx, nil) // BEGIN IMMEDIATE: no other writer meanwhile
	if err != nil {
		return fmt.Errorf("sqlite: import: begin: %w", err)
	}
	defer tx.Rollback()
	if err := db.BeginImport(ctx, conn{db: tx}); err != nil {
		return err
	}
	stmts := map[*dump.Table]*sql.Stmt{}
	defer func() {
		for _, s := range stmts {
			s.Close()
		}
	}()
	for {
		t, vals, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		s := stmts[t]
		if s == nil {
			s, err = tx.PrepareContext(ctx, `INSERT INTO `+t.Name+` (`+strings.Join(t.SQLColumns(), ", ")+`) VALUES (`+
				sqlstore.Placeholders(len(t.Columns))+`)`)
			if err != nil {
				return fmt.Errorf("sqlite: import %s: %w", t.Name, err)
			}
			stmts[t] = s
		}
		if err := db.ImportRow(t, vals); err != nil {
			return err
		}
		if _, err := s.ExecContext(ctx, vals...); err != nil {
			return fmt.Errorf("sqlite: import %s (row %d of the table): %w", t.Name, r.Counts()[t.Name], err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: import: commit: %w", err)
	}
	return nil
}
