package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/amsdev/ams/sqlstore"
)

// authWatch answers ams.AuthWatch without reading a table on most calls.
// It holds one read-only driver connection of its own (a rowConn, as the
// single-row reads use), on which PRAGMA data_version changes whenever
// another connection — this process's writer, or any connection of
// another process on the same file — has committed since the connection
// last looked. Only then does it read the stored generation (migration
// 0019), on the same connection.
//
// Concurrent callers share checks: a caller waits for the check in
// progress, then uses the result of the first check that started after
// it arrived (or runs one). A check that began after the caller arrived
// sees every commit that preceded the caller, which is all the caller
// needs; under load one check serves many requests (about one check for
// two requests, docs/benchmarks.md, issue 17).
type authWatch struct {
	open func() (driver.Conn, error)

	started atomic.Uint64 // checks started, ever

	mu   sync.Mutex // held during a check
	conn rowConn
	seen int64  // data_version at the last check (-1: none yet)
	gen  int64  // the generation read then
	done uint64 // the number of the last check that succeeded
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
		w.conn.close() // the next check opens another and reads afresh
		return 0, fmt.Errorf("sqlite: read auth generation: %w", err)
	}
	w.done = n
	return g, nil
}

func (w *authWatch) check(ctx context.Context) (int64, error) {
	if w.conn.dc == nil {
		w.seen = -1
	}
	// data_version first: a commit that lands between the two reads is
	// then seen by the next check as well.
	v, err := w.queryInt(ctx, `PRAGMA data_version`)
	if err != nil {
		return 0, err
	}
	if v == w.seen {
		return w.gen, nil
	}
	g, err := w.queryInt(ctx, sqlstore.AuthGenerationQuery)
	if err != nil {
		return 0, err
	}
	w.seen, w.gen = v, g
	return g, nil
}

// queryInt runs query, which answers one integer, on the watch's
// connection (under w.mu).
func (w *authWatch) queryInt(ctx context.Context, query string) (int64, error) {
	vals, err := w.conn.queryRow(ctx, w.open, query, nil)
	if err != nil {
		return 0, err
	}
	var n int64
	err = valuesRow{vals, nil}.Scan(&n)
	return n, err
}

func (w *authWatch) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conn.close()
	return nil
}

// AuthGeneration returns the authentication generation (ams.AuthWatch):
// one PRAGMA data_version on the watch's connection, and a read of the
// stored counter only when something was committed since the last call.
func (db *DB) AuthGeneration(ctx context.Context) (int64, error) {
	return db.auth.generation(ctx)
}
