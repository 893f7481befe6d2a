package sqlstore

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Migration is one numbered file of an engine's migrations folder,
// NNNN_name.sql. A number means the same change on both engines (the
// folders hold the same names; a change one engine does not need is a
// file that does nothing there); the name, without its number, is what
// the runner knows a migration by (see Migrate).
type Migration struct {
	Version int
	File    string // NNNN_name.sql
}

// key is the migration's name without its number: what stays when a
// migration is renumbered.
func (m Migration) key() string { return migrationKey(m.File) }

func migrationKey(file string) string {
	_, key, _ := strings.Cut(file, "_")
	return key
}

// Migrations lists the files migrations/*.sql of fsys in order of their
// number; two files of one number, or a file without a number, are an
// error.
func Migrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var migs []Migration
	seen := map[int]string{}
	for _, n := range names {
		base := path.Base(n)
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name must start with its number", base)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s have one number", other, base)
		}
		seen[v] = base
		migs = append(migs, Migration{v, base})
	}
	slices.SortFunc(migs, func(a, b Migration) int { return a.Version - b.Version })
	return migs, nil
}

// Migrate applies the migrations of fsys (Migrations) that the database
// has not had, in order of their number, recording each in
// schema_migrations (version, name, applied_at). step runs its function
// in a transaction: a new one for each call (SQLite, whose migrations
// each commit on their own) or the caller's one (PostgreSQL, which holds
// an advisory lock across them all). On both engines the migrations are
// the same runner's, and a number means the same change.
//
// Before it applies anything it renumbers what the database recorded
// under numbers of an older layout (renumber): the numbers of the two
// engines diverged once, and a store migrated then keeps its history
// under the old numbers.
func Migrate(ctx context.Context, fsys fs.FS, step func(fn func(Conn) error) error) error {
	migs, err := Migrations(fsys)
	if err != nil {
		return err
	}
	if err := step(func(c Conn) error {
		if _, err := c.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		return renumber(ctx, c, migs)
	}); err != nil {
		return err
	}
	for _, m := range migs {
		if err := step(func(c Conn) error { return apply(ctx, c, fsys, m) }); err != nil {
			return err
		}
	}
	return nil
}

// apply runs m unless its number is recorded, and records it.
func apply(ctx context.Context, c Conn, fsys fs.FS, m Migration) error {
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, m.Version).Scan(&n); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	if n > 0 {
		return nil
	}
	body, err := fs.ReadFile(fsys, "migrations/"+m.File)
	if err != nil {
		return err
	}
	// Without arguments both drivers run the several statements of a
	// file in one call (pgx's simple protocol).
	if _, err := c.Exec(ctx, string(body)); err != nil {
		return fmt.Errorf("migration %s: %w", m.File, err)
	}
	if _, err := c.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
		m.Version, m.File, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("record migration %s: %w", m.File, err)
	}
	return nil
}

// renumber moves the recorded migrations whose name (without its number)
// is a migration of migs under another number to that number, keeping
// when they were applied: a store migrated when SQLite numbered its
// migrations apart from PostgreSQL (before issue 28: its claim index was
// 0004 and key_grants … webhook_management_events 0020–0023, one below
// PostgreSQL's) is then recorded as a new one would be, and the change it
// lacks under the common numbering (0004, rate limits: nothing in SQLite)
// is applied next. Recorded names that no file has (a newer binary's
// migrations) stay as they are. Only the records move: what the
// migrations did to the schema is the same under either number.
func renumber(ctx context.Context, c Conn, migs []Migration) error {
	rows, err := c.Query(ctx, `SELECT version, name, applied_at FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	type record struct {
		version int
		name    string
		at      int64
	}
	var recs []record
	for rows.Next() {
		var r record
		if err := rows.Scan(&r.version, &r.name, &r.at); err != nil {
			rows.Close()
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		recs = append(recs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	byKey := map[string]Migration{}
	for _, m := range migs {
		byKey[m.key()] = m
	}
	var moves []record // at their new number and name
	for _, r := range recs {
		m, ok := byKey[migrationKey(r.name)]
		if !ok || (m.Version == r.version && m.File == r.name) {
			continue
		}
		if _, err := c.Exec(ctx, `DELETE FROM schema_migrations WHERE version = $1`, r.version); err != nil {
			return fmt.Errorf("renumber migration %s: %w", r.name, err)
		}
		moves = append(moves, record{m.Version, m.File, r.at})
	}
	for _, r := range moves {
		if _, err := c.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
			r.version, r.name, r.at); err != nil {
			return fmt.Errorf("renumber migration %s: %w", r.name, err)
		}
	}
	return nil
}
