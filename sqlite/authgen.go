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
//
// First it looks at the header of SQLite's wal-index (walindex_unix.go),
// memory shared by every connection of every process on the file, which
// every commit rewrites. While the header is the one seen before the last
// check, nothing has been committed since, and the generation read then
// stands; this costs a few memory loads and no query.
//
// Otherwise it checks on one read-only driver connection of its own (a
// rowConn, as the single-row reads use), on which PRAGMA data_version
// changes whenever another connection — this process's writer, or any
// connection of another process on the same file — has committed since
// the connection last looked. Only then does it read the stored
// generation (migration 0019), on the same connection. Where the header
// cannot be mapped (not a unix system), every call checks.
//
// Concurrent callers share checks: a caller waits for the check in
// progress, then uses the result of the first check that started after
// it arrived (or runs one). A check that began after the caller arrived
// sees every commit that preceded the caller, which is all the caller
// needs; under load one check serves many requests (about one check for
// two requests, docs/benchmarks.md, issue 17).
type authWatch struct {
	open func() (driver.Conn, error)
	path string // the database file, whose -shm file holds the wal-index

	started atomic.Uint64 // checks started, ever

	mu     sync.Mutex // held while the header is read, and during a check
	closed bool
	conn   rowConn
	seen   int64  // data_version at the last check (-1: none yet)
	gen    int64  // the generation read then
	done   uint64 // the number of the last check that succeeded

	// The wal-index view, taken after the first successful check and
	// kept until DB.Close has closed every connection (walindex_unix.go
	// says why); read only if walOK.
	wal      *walIndex
	walOK    bool
	walTried bool
	hdr      walHeader    // the wal-index header read before the last check
	hdrOK    bool         // hdr was read, and the check after it succeeded
	checks   atomic.Int64 // checks that queried (for tests)
}

// generation returns the authentication generation as of a moment after
// the call began.
func (w *authWatch) generation(ctx context.Context) (int64, error) {
	arrived := w.started.Load()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errClosed
	}
	if w.done > arrived {
		return w.gen, nil
	}
	var hdr walHeader
	if w.walOK {
		hdr = w.wal.read()
		if w.hdrOK && hdr == w.hdr {
			return w.gen, nil // nothing committed since the last check
		}
	}
	n := w.started.Add(1)
	w.hdrOK = false
	g, err := w.check(ctx)
	if err != nil {
		w.reset() // the next check opens another connection and reads afresh
		return 0, fmt.Errorf("sqlite: read auth generation: %w", err)
	}
	w.done = n
	if w.walOK {
		// hdr was read before the check's queries, so a commit that
		// landed since shows as a change and is checked.
		w.hdr, w.hdrOK = hdr, true
	} else if !w.walTried {
		// The connection has now read, so this process holds the locks
		// that keep the -shm file in place (walindex_unix.go). If it
		// cannot be mapped, every call checks: slower, not wrong. The
		// next check reads the header first.
		w.walTried = true
		var err error
		w.wal, err = openWALIndex(w.path)
		w.walOK = err == nil
	}
	return g, nil
}

// reset drops the connection, and the header read before the last check
// with it (under w.mu).
func (w *authWatch) reset() {
	w.conn.close()
	w.hdrOK = false
}

func (w *authWatch) check(ctx context.Context) (int64, error) {
	w.checks.Add(1)
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

// close closes the watch's connection; later calls fail, so that none
// opens another.
func (w *authWatch) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.reset()
	return nil
}

// release gives back the wal-index view, once every connection of the
// handle is closed.
func (w *authWatch) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wal.release()
	w.wal, w.walOK = nil, false
}

// AuthGeneration returns the authentication generation (ams.AuthWatch):
// a look at the wal-index header, then, only if something was committed
// since the last check, one PRAGMA data_version on the watch's connection,
// and a read of the stored counter only if that moved.
func (db *DB) AuthGeneration(ctx context.Context) (int64, error) {
	return db.auth.generation(ctx)
}
