package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/amsdev/ams/sqlstore"
)

// authWatch answers ams.AuthWatch without reading a table on most calls.
// It holds one read-only connection of its own, on which PRAGMA
// data_version changes whenever another connection — this process's
// writer, or any connection of another process on the same file —
// has committed since the connection last looked. Only then does it read
// the stored generation (migration 0019), on the same connection.
//
// Concurrent callers share checks: a caller waits for the check in
// progress, then uses the result of the first check that started after
// it arrived (or runs one). A check that began after the caller arrived
// sees every commit that preceded the caller, which is all the caller
// needs; under load one check serves many requests.
type authWatch struct {
	db *sql.DB // a pool of one read-only connection, for conn

	started atomic.Uint64 // checks started, ever

	mu      sync.Mutex // held during a check
	conn    *sql.Conn
	version *sql.Stmt // PRAGMA data_version on conn
	read    *sql.Stmt // the generation, on conn
	seen    int64     // data_version at the last check (-1: none yet)
	gen     int64     // the generation read then
	done    uint64    // the number of the last check that succeeded
}

// generation returns the authentication generation as of a moment after
// the call began.
func (w *authWatch) generation(ctx context.Context) (int64, error) {
	arrived := w.started.Load()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done > arrived {
		return w.gen, nil
	}
	n := w.started.Add(1)
	g, err := w.check(ctx)
	if err != nil {
		w.reset()
		return 0, fmt.Errorf("sqlite: read auth generation: %w", err)
	}
	w.done = n
	return g, nil
}

func (w *authWatch) check(ctx context.Context) (int64, error) {
	if w.conn == nil {
		c, err := w.db.Conn(ctx)
		if err != nil {
			return 0, err
		}
		w.conn, w.seen = c, -1
		if w.version, err = c.PrepareContext(ctx, `PRAGMA data_version`); err == nil {
			w.read, err = c.PrepareContext(ctx, sqlstore.AuthGenerationQuery)
		}
		if err != nil {
			return 0, err
		}
	}
	// data_version first: a commit that lands between the two reads is
	// then seen by the next check as well.
	var v int64
	if err := w.version.QueryRowContext(ctx).Scan(&v); err != nil {
		return 0, err
	}
	if v == w.seen {
		return w.gen, nil
	}
	var g int64
	if err := w.read.QueryRowContext(ctx).Scan(&g); err != nil {
		return 0, err
	}
	w.seen, w.gen = v, g
	return g, nil
}

// reset drops the connection after an error; the next check opens
// another and reads the generation afresh.
func (w *authWatch) reset() {
	if w.conn == nil {
		return
	}
	for _, s := range []*sql.Stmt{w.version, w.read} {
		if s != nil {
			s.Close()
		}
	}
	w.conn.Close()
	w.conn, w.version, w.read = nil, nil, nil
}

func (w *authWatch) close() error {
	w.mu.Lock()
	w.reset()
	w.mu.Unlock()
	return w.db.Close()
}

// AuthGeneration returns the authentication generation (ams.AuthWatch):
// one PRAGMA data_version on the watch's connection, and a read of the
// stored counter only when something was committed since the last call.
func (db *DB) AuthGeneration(ctx context.Context) (int64, error) {
	return db.auth.generation(ctx)
}
