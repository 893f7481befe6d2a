package sqlite

import (
	"context"
	"database/sql"
	"maps"
	"path/filepath"
	"testing"

	"github.com/amsdev/ams/storetest"
)

// beforeIssue28 is how SQLite numbered its migrations before issue 28:
// the claim index was 0004 (0020 now), key_grants …
// webhook_management_events 0020–0023 (0021–0024 now), and there was no
// 0004_rate_limits (nothing in SQLite).
var beforeIssue28 = map[string]string{
	"0020_claim_index.sql":               "0004_claim_index.sql",
	"0021_key_grants.sql":                "0020_key_grants.sql",
	"0022_calendar_recovery.sql":         "0021_calendar_recovery.sql",
	"0023_email_kinds.sql":               "0022_email_kinds.sql",
	"0024_webhook_management_events.sql": "0023_webhook_management_events.sql",
	"0004_rate_limits.sql":               "",
}

// TestUpgradeFromOldNumbering migrates a store with the runner of today's
// layout from each earlier numbering (the turn-2 schema, 0001–0008 with
// the claim index at 0004; the layout before issue 28; the layout of
// e017368, whose newest migration was 0024), then opens it: the store
// ends with the schema and the migration records of a new store.
func TestUpgradeFromOldNumbering(t *testing.T) {
	fresh := tempDB(t)
	wantSchema, wantRecords := schemaOf(t, fresh.write)
	for _, tc := range []struct {
		name    string
		upTo    int
		renamed map[string]string
	}{
		{"turn-2", 8, nil},
		{"before-issue-28", 23, nil},
		{"e017368", 24, map[string]string{"0024_webhook_management_events.sql": "0024_webhook_management_events.sql"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			renamed := maps.Clone(beforeIssue28)
			maps.Copy(renamed, tc.renamed)
			path := filepath.Join(t.TempDir(), "ams.db")
			raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			raw.SetMaxOpenConns(1)
			if err := migrateFS(context.Background(), raw, storetest.OldLayout(t, migrationFS, tc.upTo, renamed)); err != nil {
				t.Fatal(err)
			}
			if tc.upTo == 8 {
				// The turn-2 store had data; a user keeps through the upgrade.
				if _, err := raw.Exec(`INSERT INTO users (id, email, password_hash, plan, timezone, created_at, updated_at)
					VALUES ('usr_old', 'old@example.com', '', 'standard', 'UTC', 0, 0)`); err != nil {
					t.Fatal(err)
				}
			}
			raw.Close()
			db, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			schema, records := schemaOf(t, db.write)
			storetest.SameSchema(t, schema, records, wantSchema, wantRecords)
			if tc.upTo == 8 {
				if _, err := db.FindUser(context.Background(), "usr_old"); err != nil {
					t.Errorf("the old store's user: %v", err)
				}
			}
		})
	}
}

// schemaOf returns the store's schema (every object's SQL but the
// migration records') and its migration records (number and name).
func schemaOf(t *testing.T, db *sql.DB) (schema, records []string) {
	t.Helper()
	rows, err := db.Query(`SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE '%schema_migrations%' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	schema = scanStrings(t, rows)
	if rows, err = db.Query(`SELECT version || ' ' || name FROM schema_migrations ORDER BY version`); err != nil {
		t.Fatal(err)
	}
	return schema, scanStrings(t, rows)
}

func scanStrings(t *testing.T, rows *sql.Rows) []string {
	t.Helper()
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
