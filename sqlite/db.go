package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/seal"
	"github.com/amsdev/ams/sqlstore"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// DB is an open SQLite store: the shared SQL store (package sqlstore) over
// SQLite's connections, with the queue claims of SQLite's single writer.
type DB struct {
	*sqlstore.Store
	path  string
	auth  *authWatch // answers AuthGeneration (authgen.go)
	write *sql.DB    // one connection: all writes
	read  *sql.DB    // read-only pool
	rq    *reader    // the read pool with prepared statements cached
	ws    *writeStmts
	group *committer // the write transactions, committed in groups
	ckpt  *checkpointer
}

// Option configures Open.
type Option func(*openOptions)

type openOptions struct{ secretKey []byte }

// WithSecretKey sets the key that seals webhook secrets. Without it, Open
// uses the key in secret.key beside the database file, creating it.
func WithSecretKey(key []byte) Option { return func(o *openOptions) { o.secretKey = key } }

var _ ams.Store = (*DB)(nil)

// Open opens (creating if needed) the database file at path and applies any
// pending migrations.
func Open(ctx context.Context, path string, opts ...Option) (*DB, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: resolve path: %w", err)
	}
	if err := secureFiles(abs); err != nil {
		return nil, err
	}
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.secretKey == nil {
		if o.secretKey, err = seal.LoadOrCreateKeyFile(filepath.Join(filepath.Dir(abs), "secret.key")); err != nil {
			return nil, err
		}
	}
	sealer, err := seal.New(o.secretKey)
	if err != nil {
		return nil, err
	}
	// temp_store(MEMORY): the sub-journals of group commit's savepoints (and
	// statement journals) stay in memory instead of temporary files.
	// busy_timeout(10000) unless extra gives its own (the driver applies
	// the first).
	pragmas := []string{"journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)", "temp_store(MEMORY)"}
	dsn := func(extra ...string) string {
		q := url.Values{}
		if !slices.ContainsFunc(extra, func(p string) bool { return strings.HasPrefix(p, "busy_timeout(") }) {
			q.Add("_pragma", "busy_timeout(10000)")
		}
		for _, p := range append(pragmas, extra...) {
			q.Add("_pragma", p)
		}
		return "file:" + abs + "?" + q.Encode()
	}
	db := &DB{path: abs}
	// secure_delete(ON) on the writer: deleted content (a deleted
	// message's text, erased from its events) is overwritten with zeros,
	// not left in free space of the file (issue 31, erasure).
	if db.write, err = sql.Open("sqlite", dsn(fmt.Sprintf("wal_autocheckpoint(%d)", autoCheckpointPages), "secure_delete(ON)")+"&_txlock=immediate"); err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.write.SetMaxOpenConns(1)
	db.write.SetMaxIdleConns(1)
	db.write.SetConnMaxLifetime(0)
	if err := db.migrate(ctx); err != nil {
		db.write.Close()
		return nil, err
	}
	if db.read, err = sql.Open("sqlite", dsn("query_only(1)")); err != nil {
		db.write.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	n := max(4, 2*runtime.GOMAXPROCS(0))
	db.read.SetMaxOpenConns(n)
	db.read.SetMaxIdleConns(n)
	db.read.SetConnMaxLifetime(0)
	// No busy timeout: the checkpointer's TRUNCATE on a quiet store gives
	// up at once rather than hold writers while it waits (checkpoint.go).
	ckptDB, err := sql.Open("sqlite", dsn("busy_timeout(0)"))
	if err != nil {
		db.read.Close()
		db.write.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	ckptDB.SetMaxOpenConns(1)
	ckptDB.SetConnMaxLifetime(0)
	db.ckpt = startCheckpointer(ckptDB, abs+"-wal", checkpointEvery)
	// Single-row reads have connections of their own (rowread.go), more
	// than cores: with as many as the lists' pool, requests waited for a
	// connection with cores idle (docs/benchmarks.md, issue 17). They are
	// taken last in, first out, so that under a light load the same few
	// are used and the others keep their caches small.
	readDSN := dsn("query_only(1)")
	openRead := func() (driver.Conn, error) { return db.read.Driver().Open(readDSN) }
	db.rq = &reader{db: db.read, rows: newRowReader(8*runtime.GOMAXPROCS(0), openRead)}
	db.auth = &authWatch{open: openRead, path: abs}
	db.ws = &writeStmts{db: db.write, m: map[string]*sql.Stmt{}}
	db.group = newCommitter(db.write, db.ws)
	db.Store = sqlstore.New(&engine{read: db.rq, write: db.write, stmts: db.ws, group: db.group}, dialect, sealer)
	return db, nil
}

// Path returns the database file's absolute path.
func (db *DB) Path() string { return db.path }

// Close closes the pools, the connection that watches the authentication
// generation and the checkpointer's, and then the watch's view of the
// wal-index, whose file descriptor must outlive them (walindex_unix.go).
func (db *DB) Close() error {
	db.ws.close()
	err := errors.Join(db.ckpt.close(), db.auth.close(), db.rq.close(), db.write.Close())
	db.auth.release()
	return err
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.read.PingContext(ctx) }

// migrate applies the embedded migrations (sqlstore.Migrate), each in a
// transaction of its own on the write connection.
func (db *DB) migrate(ctx context.Context) error { return migrateFS(ctx, db.write, migrationFS) }

func migrateFS(ctx context.Context, write *sql.DB, fsys fs.FS) error {
	err := sqlstore.Migrate(ctx, fsys, func(fn func(sqlstore.Conn) error) error {
		tx, err := write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fn(conn{db: tx}); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}
