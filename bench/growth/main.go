// Command growth is the growth benchmark of issue 33 (docs/benchmarks.md,
// "Issue 33"): how delivery, the API and the purge fare as the store
// fills with what a service with paying users keeps (30 days of events,
// their finished jobs and attempts, turns and messages, thousands of
// accounts with a webhook each, a dead receiver's backlog).
//
//	growth seed -engine sqlite -dir DIR -rows N      seed a store (SQLite under DIR)
//	growth seed -engine pg -db URL -rows N           seed a store (PostgreSQL at URL, its search_path)
//	growth run -ams BIN -engine E -rows N [-db URL]  seed a fresh store, serve it, measure
//
// run makes the store in a temporary directory (SQLite) or a fresh schema
// it drops afterwards (PostgreSQL), seeds it (seed.go), checks it through
// the API of `ams serve`, and measures: POST /v1/messages (rate, p50,
// p99), conversation history and catch-up pages (GET, p50, p99), the
// claim (the store's ClaimJobs called in this process, ams serve
// stopped, p50, p99), the drain (deliveries a second to a local receiver
// that answers at once, by a second `ams serve`), the purge of one day
// past retention, bytes per event and the RSS of ams serve. It prints the
// query plans of the claim, the lists and the purge, then one line
// "ROW|..." that scripts/bench-growth.sh turns into a table. Everything
// listens on 127.0.0.1; every wait is bounded.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/seal"
	"github.com/amsdev/ams/postgres"
	"github.com/amsdev/ams/sqlite"
)

type config struct {
	ams, engine, db, dir, label string
	rows, accounts, dead        int
	postConns, claims, backlog  int
	postFor                     time.Duration
}

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 || (os.Args[1] != "seed" && os.Args[1] != "run") {
		log.Fatal("usage: growth seed|run [flags] (growth run -h)")
	}
	cfg := &config{}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	fs.StringVar(&cfg.ams, "ams", "", "run: path of the ams binary")
	fs.StringVar(&cfg.engine, "engine", "sqlite", "sqlite or pg")
	fs.StringVar(&cfg.db, "db", "", "PostgreSQL URL (run: a fresh schema is made in it and dropped after; seed: the store, its search_path)")
	fs.StringVar(&cfg.dir, "dir", "", "seed: SQLite data directory (made if missing); run: working directory (default a temporary one)")
	fs.StringVar(&cfg.label, "label", "", "run: what the ams binary is, for the report")
	fs.IntVar(&cfg.rows, "rows", 10000, "events of history (two a turn), over 31 days")
	fs.IntVar(&cfg.accounts, "accounts", 0, "accounts with a webhook each (0: rows/10, at most 10,000)")
	fs.IntVar(&cfg.dead, "dead", 100000, "jobs pending for the dead receiver")
	fs.IntVar(&cfg.postConns, "post-conns", 16, "run: concurrent POST /v1/messages")
	fs.DurationVar(&cfg.postFor, "post-duration", 10*time.Second, "run: how long POST /v1/messages is measured")
	fs.IntVar(&cfg.claims, "claims", 200, "run: claims timed")
	fs.IntVar(&cfg.backlog, "backlog", 16000, "run: deliveries queued for the drain")
	fs.Parse(os.Args[2:])
	if cfg.accounts <= 0 {
		cfg.accounts = accountsFor(cfg.rows)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if os.Args[1] == "seed" {
		err = seedOnly(ctx, cfg)
	} else {
		err = run(ctx, cfg)
	}
	if err != nil {
		stop()
		log.Print("growth: ", err)
		exitCode = 1
	}
	os.Exit(exitCode)
}

var exitCode int

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// store is an open store of either engine and the raw connections the
// seed and the plans use.
type store struct {
	engine string
	db     interface {
		ams.Store
		Close() error
	}
	sealer *seal.Sealer
	sqlite *sqlite.DB
	pg     *postgres.DB
	path   string // SQLite file
	url    string // PostgreSQL URL with its search_path
	schema string
	key    []byte
	trace  *tracer
}

// open opens the store of cfg's engine (and migrates it).
func open(ctx context.Context, engine, path, url string, key []byte) (*store, error) {
	s := &store{engine: engine, path: path, url: url, key: key, trace: &tracer{}}
	if engine == "sqlite" {
		db, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, err
		}
		s.db, s.sqlite, s.sealer = db, db, db.Sealer()
		return s, nil
	}
	db, err := postgres.Open(ctx, url, postgres.WithSecretKey(key), postgres.WithTracer(s.trace), postgres.WithDefaultMaxConns(4))
	if err != nil {
		return nil, err
	}
	s.db, s.pg, s.sealer = db, db, db.Sealer()
	return s, nil
}

// raw opens a connection of its own to the store: *sql.DB for SQLite,
// *pgx.Conn for PostgreSQL.
func (s *store) rawSQLite(ctx context.Context) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+s.path+"?_pragma=busy_timeout(10000)&_pragma=synchronous(OFF)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, db.PingContext(ctx)
}

func (s *store) rawPG(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, s.url) }

// seedStore seeds s for the bench account (email) and returns the rows
// written and the time taken.
func seedStore(ctx context.Context, s *store, cfg *config, benchUser, benchAsst string) (int, time.Duration, error) {
	p := seedPlan{Rows: cfg.rows, Accounts: cfg.accounts, Dead: cfg.dead, Now: time.Now(), BenchUser: benchUser, BenchAsst: benchAsst}
	t0 := time.Now()
	var n int
	if s.engine == "sqlite" {
		db, err := s.rawSQLite(ctx)
		if err != nil {
			return 0, 0, err
		}
		defer db.Close()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, 0, err
		}
		defer tx.Rollback()
		if n, err = seed(ctx, &sqliteSink{tx: tx}, s.sealer, p); err != nil {
			return n, 0, err
		}
		if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			return n, 0, err
		}
		return n, time.Since(t0), nil
	}
	conn, err := s.rawPG(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if n, err = seed(ctx, &pgSink{conn: tx.Conn()}, s.sealer, p); err != nil {
		return n, 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return n, 0, err
	}
	took := time.Since(t0)
	// A store that has lived 30 days has been vacuumed and analyzed by
	// autovacuum; COPY leaves neither done.
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return n, took, fmt.Errorf("vacuum: %w", err)
	}
	return n, took, nil
}

// size returns the store's bytes and its events.
func (s *store) size(ctx context.Context) (bytes, events int64, err error) {
	if s.engine == "sqlite" {
		db, err := s.rawSQLite(ctx)
		if err != nil {
			return 0, 0, err
		}
		defer db.Close()
		db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&events); err != nil {
			return 0, 0, err
		}
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(s.path + suffix); err == nil {
				bytes += fi.Size()
			}
		}
		return bytes, events, nil
	}
	conn, err := s.rawPG(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r')`).Scan(&events, &bytes)
	return bytes, events, err
}

// seedOnly is `growth seed`: the bench account is made with the store's
// API (no key: use ams keys create), then the history.
func seedOnly(ctx context.Context, cfg *config) error {
	var s *store
	var err error
	if cfg.engine == "sqlite" {
		if cfg.dir == "" {
			return errors.New("-dir is required for SQLite")
		}
		if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
			return err
		}
		s, err = open(ctx, "sqlite", filepath.Join(cfg.dir, "ams.db"), "", nil)
	} else {
		k, kerr := seal.ParseKey(os.Getenv("AMS_SECRET_KEY"))
		if kerr != nil {
			return fmt.Errorf("AMS_SECRET_KEY: %w", kerr)
		}
		s, err = open(ctx, "pg", "", cfg.db, k)
	}
	if err != nil {
		return err
	}
	now := time.Now()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "bench@example.com", Plan: ams.PlanEnterprise, Timezone: "UTC", CreatedAt: now, UpdatedAt: now, ApprovedAt: &now}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "Bench", Model: ams.ModelBuiltin, CreatedAt: now, UpdatedAt: now}
	if err := s.db.CreateUser(ctx, u); err != nil {
		s.db.Close()
		return err
	}
	if err := s.db.CreateAssistant(ctx, a); err != nil {
		s.db.Close()
		return err
	}
	s.db.Close()
	n, took, err := seedStore(ctx, s, cfg, u.ID, a.ID)
	if err != nil {
		return err
	}
	bytes, events, err := s.size(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("seeded %d rows (%d events of history, %d accounts, %d dead jobs) in %.1f s; bench account %s (bench@example.com), assistant %s; %d events, %.0f bytes/event\n",
		n, cfg.rows, cfg.accounts, cfg.dead, took.Seconds(), u.ID, a.ID, events, float64(bytes)/float64(max(events, 1)))
	return nil
}

// pgSchema makes a fresh schema in cfg.db and returns the URL whose
// search_path is it, and a func that drops it.
func pgSchema(ctx context.Context, db string) (string, string, func(), error) {
	b := make([]byte, 6)
	rand.Read(b)
	schema := "bench_growth_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return "", "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", "", nil, err
	}
	drop := func() {
		c, err := pgx.Connect(context.Background(), db)
		if err != nil {
			log.Printf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			log.Printf("drop schema %s: %v", schema, err)
		}
	}
	sep := "?"
	if strings.Contains(db, "?") {
		sep = "&"
	}
	return db + sep + "search_path=" + url.QueryEscape(schema), schema, drop, nil
}

func newKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }
