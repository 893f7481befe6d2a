package postgres

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/amsdev/ams/internal/dump"
	"github.com/jackc/pgx/v5"
)

var (
	_ dump.Exporter = (*DB)(nil)
	_ dump.Importer = (*DB)(nil)
)

// Engine is the engine name written in the headers of exports.
const Engine = "postgres"

// liveSchema reads the tables and columns of the store's schema (the
// first of search_path).
func liveSchema(ctx context.Context, q querier) (map[string][]dump.LiveColumn, error) {
	rows, err := q.Query(ctx, `SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY c.relname, a.attnum`)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	defer rows.Close()
	live := map[string][]dump.LiveColumn{}
	for rows.Next() {
		var table string
		var c dump.LiveColumn
		if err := rows.Scan(&table, &c.Name, &c.Type, &c.NotNull); err != nil {
			return nil, fmt.Errorf("read schema: %w", err)
		}
		live[table] = append(live[table], c)
	}
	return live, rows.Err()
}

// typeOK reports whether a column of the PostgreSQL type holds values of
// kind k.
func typeOK(k dump.Kind, typ string) bool {
	switch typ {
	case "text":
		return k == dump.Text || k == dump.Secret
	case "bigint", "integer":
		return k == dump.Int
	case "boolean":
		return k == dump.Bool
	case "json", "jsonb":
		return k == dump.JSON
	case "bytea":
		return k == dump.Bytes
	}
	return false
}

// CheckSchema compares the store's tables and columns with the export
// format (dump.Tables): an unknown table or column, which an export would
// leave behind, is an error.
func (db *DB) CheckSchema(ctx context.Context) error {
	live, err := liveSchema(ctx, db.pool)
	if err != nil {
		return err
	}
	return dump.CheckSchema(live, typeOK)
}

// selectList returns the SELECT list of t's columns, JSON ones as their
// text (kept exactly as written).
func selectList(t *dump.Table) string {
	parts := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		parts[i] = c.SQL
		if c.Kind == dump.JSON {
			parts[i] += "::text"
		}
	}
	return strings.Join(parts, ", ")
}

// orderBy returns t's ORDER BY list, text compared byte by byte (as
// SQLite does), so that both engines export rows in the same order.
func orderBy(t *dump.Table) string {
	parts := make([]string, len(t.OrderBy))
	for i, name := range t.OrderBy {
		parts[i] = name
		for _, c := range t.Columns {
			if c.SQL == name && c.Kind != dump.Int {
				parts[i] += ` COLLATE "C"`
			}
		}
	}
	return strings.Join(parts, ", ")
}

// Export calls fn with every row of every table of dump.Tables, in their
// order, each table's rows in its stable order, from one snapshot (a
// read-only REPEATABLE READ transaction: writers may go on meanwhile and
// are not seen). Webhook secrets are passed in plaintext. Rows are
// streamed, never held.
func (db *DB) Export(ctx context.Context, fn dump.RowFunc) error {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("postgres: export: begin: %w", err)
	}
	defer tx.Rollback(ctx)
	live, err := liveSchema(ctx, tx)
	if err != nil {
		return fmt.Errorf("postgres: export: %w", err)
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

func (db *DB) exportTable(ctx context.Context, tx pgx.Tx, t *dump.Table, fn dump.RowFunc) error {
	rows, err := tx.Query(ctx, `SELECT `+selectList(t)+` FROM `+t.Name+` ORDER BY `+orderBy(t))
	if err != nil {
		return fmt.Errorf("postgres: export %s: %w", t.Name, err)
	}
	defer rows.Close()
	dest := make([]any, len(t.Columns))
	for i, c := range t.Columns {
		switch c.Kind {
		case dump.Int:
			dest[i] = new(*int64)
		case dump.Bool:
			dest[i] = new(*bool)
		case dump.Bytes:
			dest[i] = new([]byte)
		default:
			dest[i] = new(*string)
		}
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("postgres: export %s: %w", t.Name, err)
		}
		vals := make([]any, len(t.Columns))
		for i, c := range t.Columns {
			switch d := dest[i].(type) {
			case **int64:
				if *d != nil {
					vals[i] = **d
				}
			case **bool:
				if *d != nil {
					vals[i] = **d
				}
			case **string:
				if *d != nil {
					vals[i] = **d
				}
			case *[]byte:
				switch {
				case *d != nil:
					vals[i] = *d
				case !c.Null:
					vals[i] = []byte{}
				}
			}
		}
		if err := dump.OpenSecrets(t, vals, db.Sealer()); err != nil {
			return fmt.Errorf("postgres: export: %w (is --secret-key the store's key?)", err)
		}
		if err := fn(t, vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: export %s: %w", t.Name, err)
	}
	return nil
}

// Import loads the dump r into the store, which must be empty (every table
// of dump.Tables without rows): each table with COPY, all in one
// transaction that holds the tables locked against writers and commits
// only once the dump has been read to its end and its trailer matches, so
// that a failed import writes nothing. It keeps ids, seq values and times,
// moves each seq identity past the imported values, and seals webhook
// secrets with this store's key.
func (db *DB) Import(ctx context.Context, r *dump.Reader) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: import: begin: %w", err)
	}
	defer tx.Rollback(ctx)
	live, err := liveSchema(ctx, tx)
	if err != nil {
		return fmt.Errorf("postgres: import: %w", err)
	}
	if err := dump.CheckSchema(live, typeOK); err != nil {
		return err
	}
	// EXCLUSIVE mode lets readers in and keeps writers (a server started
	// too early) out until the import commits.
	if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(dump.TableNames(), ", ")+` IN EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("postgres: import: lock tables: %w", err)
	}
	for _, t := range dump.Tables {
		var has bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t.Name+`)`).Scan(&has); err != nil {
			return fmt.Errorf("postgres: import: %w", err)
		}
		if has {
			return fmt.Errorf("postgres: import: %w: table %s has rows; import only into a new database or schema, after ams migrate", dump.ErrNotEmpty, t.Name)
		}
	}
	t, vals, err := r.Next()
	for err == nil {
		src := &copySource{r: r, t: t, first: vals, db: db}
		if _, cerr := tx.CopyFrom(ctx, pgx.Identifier{t.Name}, t.SQLColumns(), src); cerr != nil {
			if src.err != nil {
				return src.err // the dump's error, not COPY's report of it
			}
			return fmt.Errorf("postgres: import %s: %w", t.Name, cerr)
		}
		t, vals, err = src.nextTable, src.nextVals, src.end
	}
	if err != io.EOF {
		return err
	}
	for _, t := range dump.Tables {
		if !t.Seq {
			continue
		}
		if _, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, 'seq'), coalesce((SELECT max(seq) FROM `+t.Name+`), 0) + 1, false)`,
			t.Name); err != nil {
			return fmt.Errorf("postgres: import %s: move the seq identity: %w", t.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: import: commit: %w", err)
	}
	return nil
}

// copySource feeds COPY the rows of one table from the dump. It stops at
// the first row of the next table (kept in nextTable and nextVals) or at
// the end of the dump (end is io.EOF, or the reader's error).
type copySource struct {
	db    *DB
	r     *dump.Reader
	t     *dump.Table
	first []any
	cur   []any
	err   error // an error of the dump or of preparing a row: COPY fails with it

	nextTable *dump.Table
	nextVals  []any
	end       error
}

func (s *copySource) Next() bool {
	vals := s.first
	if vals != nil {
		s.first = nil
	} else {
		t, v, err := s.r.Next()
		if err == io.EOF {
			s.end = io.EOF
			return false
		}
		if err != nil {
			s.err, s.end = err, err
			return false
		}
		if t != s.t {
			s.nextTable, s.nextVals = t, v
			return false
		}
		vals = v
	}
	if err := s.db.prepareRow(s.t, vals); err != nil {
		s.err, s.end = err, err
		return false
	}
	s.cur = vals
	return true
}

func (s *copySource) Values() ([]any, error) { return s.cur, nil }

func (s *copySource) Err() error { return s.err }

// prepareRow turns a row of the dump into what this engine stores: the
// webhook secret sealed with this store's key, and the e-mail lower-cased
// (the PostgreSQL engine compares e-mails lower-cased; SQLite compares
// them with NOCASE, so an older SQLite row may have capitals).
func (db *DB) prepareRow(t *dump.Table, vals []any) error {
	if err := dump.SealSecrets(t, vals, db.Sealer()); err != nil {
		return err
	}
	if t.Name == "users" {
		if i := t.Index("email"); i >= 0 {
			if s, ok := vals[i].(string); ok {
				vals[i] = strings.ToLower(s)
			}
		}
	}
	return nil
}
