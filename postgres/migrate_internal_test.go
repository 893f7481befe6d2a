package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/amsdev/ams/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestUpgradeFromOldNumbering migrates a schema with today's runner from
// earlier layouts (the turn-2 schema, 0001–0008; the layout of e017368,
// whose newest migration was 0025), then opens it: the store ends with the
// schema and the migration records of a new store.
func TestUpgradeFromOldNumbering(t *testing.T) {
	t.Parallel()
	openFresh, url, freshSchema := internalSchema(t)
	fresh := openFresh()
	wantSchema, wantRecords := schemaOf(t, fresh.pool, freshSchema)
	for _, tc := range []struct {
		name    string
		upTo    int
		renamed map[string]string
	}{
		{"turn-2", 8, nil},
		{"e017368", 25, map[string]string{"0024_webhook_management_events.sql": "0025_webhook_management_events.sql",
			"0025_turn_lifecycle.sql": ""}}, // came after e017368
	} {
		t.Run(tc.name, func(t *testing.T) {
			open, _, schema := internalSchema(t)
			cfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := (&DB{pool: pool}).migrateFS(context.Background(), schema, storetest.OldLayout(t, migrationFS, tc.upTo, tc.renamed)); err != nil {
				pool.Close()
				t.Fatal(err)
			}
			if tc.upTo == 8 {
				// The turn-2 store had data; a user keeps through the upgrade.
				if _, err := pool.Exec(context.Background(), `INSERT INTO users (id, email, password_hash, plan, timezone, created_at, updated_at)
					VALUES ('usr_old', 'old@example.com', '', 'standard', 'UTC', 0, 0)`); err != nil {
					t.Fatal(err)
				}
			}
			pool.Close()
			db := open()
			schemaNow, records := schemaOf(t, db.pool, schema)
			storetest.SameSchema(t, schemaNow, records, wantSchema, wantRecords)
			if tc.upTo == 8 {
				if _, err := db.FindUser(context.Background(), "usr_old"); err != nil {
					t.Errorf("the old store's user: %v", err)
				}
			}
		})
	}
}

// schemaOf returns the schema's columns, indexes, constraints and
// functions (named without the schema) and its migration records (number
// and name).
func schemaOf(t *testing.T, pool *pgxpool.Pool, schema string) (objects, records []string) {
	t.Helper()
	ctx := context.Background()
	q := `SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
			FROM information_schema.columns WHERE table_schema = $1 AND table_name <> 'schema_migrations'
		UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = $1
		UNION ALL SELECT c.conrelid::regclass::text || ' ' || pg_get_constraintdef(c.oid) FROM pg_constraint c
			JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1
		UNION ALL SELECT p.proname || ' ' || md5(p.prosrc) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
		UNION ALL SELECT event_object_table || ' ' || trigger_name || ' ' || event_manipulation FROM information_schema.triggers WHERE trigger_schema = $1`
	rows, err := pool.Query(ctx, q, schema)
	if err != nil {
		t.Fatal(err)
	}
	objects, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range objects {
		objects[i] = strings.ReplaceAll(o, schema+".", "")
	}
	slices.Sort(objects)
	if rows, err = pool.Query(ctx, `SELECT version || ' ' || name FROM schema_migrations ORDER BY version`); err != nil {
		t.Fatal(err)
	}
	if records, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	return objects, records
}
