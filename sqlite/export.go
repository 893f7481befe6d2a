package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"

	"github.com/amsdev/ams/internal/dump"
)

var (
	_ dump.Exporter = (*DB)(nil)
	_ dump.Importer = (*DB)(nil)
)

// Engine is the engine name written in the headers of exports.
const Engine = "sqlite"

// liveSchema reads the tables and columns of the database.
func liveSchema(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}) (map[string][]dump.LiveColumn, error) {
	rows, err := q.QueryContext(ctx, `SELECT m.name, c.name, c.type, c."notnull", c.pk
		FROM sqlite_master m JOIN pragma_table_info(m.name) c
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\'
		ORDER BY m.name, c.cid`)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	defer rows.Close()
	live := map[string][]dump.LiveColumn{}
	for rows.Next() {
		var table string
		var c dump.LiveColumn
		var pk int
		if err := rows.Scan(&table, &c.Name, &c.Type, &c.NotNull, &pk); err != nil {
			return nil, fmt.Errorf("read schema: %w", err)
		}
		// An INTEGER PRIMARY KEY is the rowid, never NULL; SQLite lets
		// other key columns be NULL unless declared NOT NULL, but ams never
		// writes one (and the export refuses a NULL in a NOT NULL column).
		c.NotNull = c.NotNull || pk > 0
		live[table] = append(live[table], c)
	}
	return live, rows.Err()
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

// CheckSchema compares the database's tables and columns with the export
// format (dump.Tables): an unknown table or column, which an export would
// leave behind, is an error.
func (db *DB) CheckSchema(ctx context.Context) error {
	live, err := liveSchema(ctx, db.read)
	if err != nil {
		return err
	}
	return dump.CheckSchema(live, typeOK)
}

// Export calls fn with every row of every table of dump.Tables, in their
// order, each table's rows in its stable order, from one snapshot (a read
// transaction: writers may go on meanwhile and are not seen). Webhook
// secrets are passed in plaintext. Rows are streamed, never held.
func (db *DB) Export(ctx context.Context, fn dump.RowFunc) error {
	tx, err := db.read.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: export: begin: %w", err)
	}
	defer tx.Rollback()
	live, err := liveSchema(ctx, tx)
	if err != nil {
		return fmt.Errorf("sqlite: export: %w", err)
	}
	if err := dump.CheckSchema(live, typeOK); err != nil {
		return err
	}
	for _, t := range dump.Tables {
		if err := db.exportTable(ctx, tx, t, fn); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) exportTable(ctx context.Context, tx *sql.Tx, t *dump.Table, fn dump.RowFunc) error {
	rows, err := tx.QueryContext(ctx, `SELECT `+strings.Join(t.SQLColumns(), ", ")+` FROM `+t.Name+
		` ORDER BY `+strings.Join(t.OrderBy, ", "))
	if err != nil {
		return fmt.Errorf("sqlite: export %s: %w", t.Name, err)
	}
	defer rows.Close()
	dest := make([]any, len(t.Columns))
	for i, c := range t.Columns {
		switch c.Kind {
		case dump.Int:
			dest[i] = new(sql.NullInt64)
		case dump.Bool:
			dest[i] = new(sql.NullBool)
		case dump.Bytes:
			dest[i] = new([]byte)
		default:
			dest[i] = new(sql.NullString)
		}
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("sqlite: export %s: %w", t.Name, err)
		}
		vals := make([]any, len(t.Columns))
		for i, c := range t.Columns {
			switch d := dest[i].(type) {
			case *sql.NullInt64:
				if d.Valid {
					vals[i] = d.Int64
				}
			case *sql.NullBool:
				if d.Valid {
					vals[i] = d.Bool
				}
			case *sql.NullString:
				if d.Valid {
					vals[i] = d.String
				}
			case *[]byte:
				switch {
				case *d != nil:
					vals[i] = *d
				case !c.Null:
					vals[i] = []byte{} // an empty BLOB may read as nil
				}
			}
		}
		if err := dump.OpenSecrets(t, vals, db.Sealer()); err != nil {
			return fmt.Errorf("sqlite: export: %w (is this the store's secret key?)", err)
		}
		if err := fn(t, vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: export %s: %w", t.Name, err)
	}
	return nil
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
	live, err := liveSchema(ctx, tx)
	if err != nil {
		return fmt.Errorf("sqlite: import: %w", err)
	}
	if err := dump.CheckSchema(live, typeOK); err != nil {
		return err
	}
	for _, t := range dump.Tables {
		var has bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+t.Name+`)`).Scan(&has); err != nil {
			return fmt.Errorf("sqlite: import: %w", err)
		}
		if has {
			return fmt.Errorf("sqlite: import: %w: table %s has rows; import only into a new store (an empty --data-dir)", dump.ErrNotEmpty, t.Name)
		}
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
			s, err = tx.PrepareContext(ctx, `INSERT INTO `+t.Name+` (`+strings.Join(t.SQLColumns(), ", ")+`) VALUES (?`+
				strings.Repeat(", ?", len(t.Columns)-1)+`)`)
			if err != nil {
				return fmt.Errorf("sqlite: import %s: %w", t.Name, err)
			}
			stmts[t] = s
		}
		if err := dump.SealSecrets(t, vals, db.Sealer()); err != nil {
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
