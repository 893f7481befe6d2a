package postgres

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/amsdev/ams/internal/dump"
	"github.com/amsdev/ams/sqlstore"
	"github.com/jackc/pgx/v5"
)

var (
	_ dump.Exporter = (*DB)(nil)
	_ dump.Importer = (*DB)(nil)
)

// Engine is the engine name written in the headers of exports.
const Engine = "postgres"

// schema describes PostgreSQL's tables to the dump: the columns of the
// tables of the store's schema (the first of search_path).
var schema = sqlstore.Schema{
	Query: `SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
			EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary AND a.attnum = ANY(i.indkey))
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY c.relname, a.attnum`,
	TypeOK:    typeOK,
	TextOrder: ` COLLATE "C"`,
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
	return db.ExportFrom(ctx, conn{q: tx}, fn)
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
	// EXCLUSIVE mode lets readers in and keeps writers (a server started
	// too early) out until the import commits.
	if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(dump.TableNames(), ", ")+` IN EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("postgres: import: lock tables: %w", err)
	}
	if err := db.BeginImport(ctx, conn{q: tx}); err != nil {
		return err
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
	if err := s.db.ImportRow(s.t, vals); err != nil {
		s.err, s.end = err, err
		return false
	}
	s.cur = vals
	return true
}

func (s *copySource) Values() ([]any, error) { return s.cur, nil }

func (s *copySource) Err() error { return s.err }
