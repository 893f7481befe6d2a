package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/amsdev/ams/internal/dump"
)

// Schema tells how an engine describes its tables, for the dump's schema
// check (dump.CheckSchema).
type Schema struct {
	// Query lists the live columns: table, column, declared type, not
	// null, part of the primary key; in table and column order.
	Query string
	// TypeOK reports whether a column of a declared type holds values of
	// kind k.
	TypeOK func(k dump.Kind, declared string) bool
	// TextOrder is appended to a text column in ORDER BY so that both
	// engines order text byte by byte (PostgreSQL: COLLATE "C").
	TextOrder string
}

// liveSchema reads the tables and columns of the store's schema.
func (s *Store) liveSchema(ctx context.Context, c Conn) (map[string][]dump.LiveColumn, error) {
	type col struct {
		table string
		c     dump.LiveColumn
	}
	cols, err := collect(ctx, c, "schema", func(r scanner) (col, error) {
		var x col
		var pk bool
		err := r.Scan(&x.table, &x.c.Name, &x.c.Type, &x.c.NotNull, &pk)
		// A primary key column is never NULL; SQLite lets one be unless
		// declared NOT NULL, but ams never writes one.
		x.c.NotNull = x.c.NotNull || pk
		return x, err
	}, s.d.Schema.Query)
	if err != nil {
		return nil, err
	}
	live := map[string][]dump.LiveColumn{}
	for _, x := range cols {
		live[x.table] = append(live[x.table], x.c)
	}
	return live, nil
}

// checkSchema compares the tables and columns c sees with the export
// format (dump.Tables).
func (s *Store) checkSchema(ctx context.Context, c Conn) error {
	live, err := s.liveSchema(ctx, c)
	if err != nil {
		return err
	}
	return dump.CheckSchema(live, s.d.Schema.TypeOK)
}

// CheckSchema compares the store's tables and columns with the export
// format (dump.Tables): an unknown table or column, which an export would
// leave behind, is an error.
func (s *Store) CheckSchema(ctx context.Context) error { return s.checkSchema(ctx, s.r) }

// ExportFrom calls fn with every row of every table of dump.Tables, in
// their order, each table's rows in its stable order, read through c (the
// engine's snapshot transaction). Webhook and integration secrets are
// passed in plaintext. Rows are streamed, never held.
func (s *Store) ExportFrom(ctx context.Context, c Conn, fn dump.RowFunc) error {
	if err := s.checkSchema(ctx, c); err != nil {
		return err
	}
	for _, t := range dump.Tables {
		if err := s.exportTable(ctx, c, t, fn); err != nil {
			return fmt.Errorf("%s: export %s: %w", s.d.Name, t.Name, err)
		}
	}
	return nil
}

func (s *Store) exportTable(ctx context.Context, c Conn, t *dump.Table, fn dump.RowFunc) error {
	sel := make([]string, len(t.Columns))
	dest := make([]any, len(t.Columns))
	for i, col := range t.Columns {
		sel[i] = col.SQL
		switch col.Kind {
		case dump.Int:
			dest[i] = new(*int64)
		case dump.Bool:
			dest[i] = new(*bool)
		case dump.Bytes:
			dest[i] = new([]byte)
		case dump.JSON:
			sel[i] = "CAST(" + col.SQL + " AS TEXT)" // kept exactly as written
			dest[i] = new(*string)
		default:
			dest[i] = new(*string)
		}
	}
	order := make([]string, len(t.OrderBy))
	for i, name := range t.OrderBy {
		order[i] = name
		for _, col := range t.Columns {
			if col.SQL == name && col.Kind != dump.Int {
				order[i] += s.d.Schema.TextOrder
			}
		}
	}
	rows, err := c.Query(ctx, `SELECT `+strings.Join(sel, ", ")+` FROM `+t.Name+` ORDER BY `+strings.Join(order, ", "))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		vals := make([]any, len(t.Columns))
		for i, col := range t.Columns {
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
					vals[i] = append([]byte(nil), *d...)
				case !col.Null:
					vals[i] = []byte{} // an empty BLOB may read as nil
				}
			}
		}
		if err := dump.OpenSecrets(t, vals, s.sealer); err != nil {
			return fmt.Errorf("%w (is this the store's secret key?)", err)
		}
		s.idempotencyAnswer(t, vals, s.openAnswer)
		if err := fn(t, vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

// idempotencyAnswer replaces the answer of a row of idempotency_keys by
// f of it: opened for the dump (the answers kept with keys are sealed at
// rest, sqlstore/idempotency.go), sealed again with this store's key on
// import.
func (s *Store) idempotencyAnswer(t *dump.Table, vals []any, f func(userID, key string, body []byte) []byte) {
	if t.Name != "idempotency_keys" {
		return
	}
	u, k, b := t.Index("user_id"), t.Index("key"), t.Index("body")
	if u < 0 || k < 0 || b < 0 {
		return
	}
	body, ok := vals[b].([]byte)
	if !ok || body == nil {
		return
	}
	user, _ := vals[u].(string)
	key, _ := vals[k].(string)
	vals[b] = f(user, key, body)
}

// BeginImport checks, in the import's transaction c, that the schema is
// the export format's and that every table is empty.
func (s *Store) BeginImport(ctx context.Context, c Conn) error {
	if err := s.checkSchema(ctx, c); err != nil {
		return err
	}
	for _, t := range dump.Tables {
		var has bool
		if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t.Name+`)`).Scan(&has); err != nil {
			return fmt.Errorf("%s: import: %w", s.d.Name, err)
		}
		if has {
			return fmt.Errorf("%s: import: %w: table %s has rows; import only into a new, migrated store", s.d.Name, dump.ErrNotEmpty, t.Name)
		}
	}
	return nil
}

// ImportRow turns a row of a dump into what the store keeps: secrets
// sealed with this store's key, e-mails lower-cased (the store compares
// them lower-cased; an older SQLite row may have capitals).
func (s *Store) ImportRow(t *dump.Table, vals []any) error {
	if err := dump.SealSecrets(t, vals, s.sealer); err != nil {
		return err
	}
	s.idempotencyAnswer(t, vals, s.sealAnswer)
	if t.Name == "users" {
		if i := t.Index("email"); i >= 0 {
			if e, ok := vals[i].(string); ok {
				vals[i] = strings.ToLower(e)
			}
		}
	}
	return nil
}
