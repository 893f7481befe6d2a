package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
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
	version driver.Stmt // PRAGMA data_version, prepared on conn's driver connection
	read    driver.Stmt // the generation, likewise
	seen    int64       // data_version at the last check (-1: none yet)
	gen     int64       // the generation read then
	done    uint64      // the number of the last check that succeeded
	dest    [1]driver.Value
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
		err = c.Raw(func(dc any) error {
			pc, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return fmt.Errorf("driver connection %T cannot prepare with a context", dc)
			}
			var err error
			if w.version, err = pc.PrepareContext(ctx, `PRAGMA data_version`); err == nil {
				w.read, err = pc.PrepareContext(ctx, sqlstore.AuthGenerationQuery)
			}
			return err
		})
		if err != nil {
			return 0, err
		}
	}
	// data_version first: a commit that lands between the two reads is
	// then seen by the next check as well.
	v, err := w.queryInt(ctx, w.version)
	if err != nil {
		return 0, err
	}
	if v == w.seen {
		return w.gen, nil
	}
	g, err := w.queryInt(ctx, w.read)
	if err != nil {
		return 0, err
	}
	w.seen, w.gen = v, g
	return g, nil
}

// queryInt runs st, which answers one integer, on the watch's driver
// connection (held by w.conn, under w.mu). It goes to the driver
// directly: database/sql's statement, rows and scan machinery cost more
// than the query on every request.
func (w *authWatch) queryInt(ctx context.Context, st driver.Stmt) (n int64, err error) {
	err = w.conn.Raw(func(any) error {
		q, ok := st.(driver.StmtQueryContext)
		if !ok {
			return fmt.Errorf("driver statement %T cannot query with a context", st)
		}
		rows, err := q.QueryContext(ctx, nil)
		if err != nil {
			return err
		}
		// Closing the rows ends the read transaction.
		defer func() {
			if cerr := rows.Close(); err == nil {
				err = cerr
			}
		}()
		if err := rows.Next(w.dest[:]); err != nil {
			if err == io.EOF {
				return sql.ErrNoRows
			}
			return err
		}
		v := w.dest[0]
		w.dest[0] = nil
		i, ok := v.(int64)
		if !ok {
			return fmt.Errorf("got %T, want an integer", v)
		}
		n = i
		return nil
	})
	return n, err
}

// reset drops the connection after an error; the next check opens
// another and reads the generation afresh.
func (w *authWatch) reset() {
	if w.conn == nil {
		return
	}
	w.conn.Raw(func(any) error {
		for _, s := range []driver.Stmt{w.version, w.read} {
			if s != nil {
				s.Close()
			}
		}
		return nil
	})
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
