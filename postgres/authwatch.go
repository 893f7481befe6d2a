package postgres

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// authWatch answers ams.AuthWatch from memory while it listens: the
// triggers of migration 0019 bump the stored generation and NOTIFY the
// channel ams_auth.<schema> with the new value in the transaction of the
// change, so PostgreSQL delivers it at commit to every listening process.
// The stored counter is the truth: while no connection listens (before
// the first one is up, or after one dropped until another has listened
// and read the counter) every call reads it, one query.
//
// A listening connection that dies without the socket noticing would
// leave the process deaf while it believes itself listening, so the
// listener reads the counter on its connection whenever it has heard
// nothing for authPing: a connection that cannot answer is dropped, and a
// change missed meanwhile is caught up. And the memory is trusted only
// while the listener was alive within ackWait (fresh): a process that was
// paused longer reads the table until its listener has run again.
type authWatch struct {
	pool    *pgxpool.Pool
	channel string
	process string // this process's row in auth_listeners
	store   *sqlstore.Store
	logger  *slog.Logger

	live  atomic.Bool  // a connection listens and has read the counter since
	gen   atomic.Int64 // the highest generation known
	start sync.Once
	// This process's own changes (sqlstore.Store.OnAuthChanged) are not
	// left to the notification, which arrives a moment after the commit:
	// changed counts them, and a call that finds one not yet caught up
	// with (caught < changed) reads the table.
	changed, caught atomic.Uint64
	pid             atomic.Uint32 // the listening connection's backend (tests)
	heard           atomic.Int64  // the highest generation the listener has heard of
	registered      atomic.Bool   // this process has a row in auth_listeners

	// The listener's last sign of life: the time, on now since epoch,
	// when it last returned from waiting for a notification (with one,
	// or after authBeat of silence). A process that was paused (SIGSTOP,
	// a VM frozen, a long GC stall) resumes with it old: a change made
	// meanwhile may be waiting unread on the listening connection, the
	// process that made it having given up waiting for this one's
	// acknowledgement after ackWait. So the memory is trusted only while
	// the listener was heard from within ackWait.
	now   func() time.Time
	epoch time.Time
	alive atomic.Int64 // a time.Duration since epoch
	pause func()       // tests: called when the listener wakes, to hold it there

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// authBeat is how often a silent listener wakes to show it is alive;
// well under ackWait, so that a listener that runs is never taken for
// one that was paused.
const authBeat = ackWait / 4

// beat records that the listener is alive now.
func (w *authWatch) beat() { w.alive.Store(int64(w.now().Sub(w.epoch))) }

// fresh reports whether the listener was alive within ackWait.
func (w *authWatch) fresh() bool {
	return w.now().Sub(w.epoch)-time.Duration(w.alive.Load()) <= ackWait
}

// authPing is how long the listener goes without a notification before
// it checks its connection by reading the counter on it.
const authPing = 10 * time.Second

func newAuthWatch(pool *pgxpool.Pool, schema string, store *sqlstore.Store, logger *slog.Logger) *authWatch {
	ctx, cancel := context.WithCancel(context.Background())
	channel := "ams_auth." + schema
	if len(channel) > 63 { // as the triggers cut it (left(…, 63))
		channel = channel[:63]
	}
	return &authWatch{pool: pool, channel: channel, process: ams.NewID("prc_"), store: store, logger: logger, ctx: ctx, cancel: cancel,
		now: time.Now, epoch: time.Now()}
}

// generation returns the authentication generation: from memory while
// the listener is live and was alive within ackWait, else read from the
// table.
func (w *authWatch) generation(ctx context.Context) (int64, error) {
	w.start.Do(func() {
		w.wg.Add(1)
		go w.listener()
	})
	mine := w.changed.Load()
	if w.live.Load() && w.caught.Load() >= mine && w.fresh() {
		return w.gen.Load(), nil
	}
	g, err := w.store.AuthGeneration(ctx)
	if err != nil {
		return 0, err
	}
	w.raise(g)
	for c := w.caught.Load(); mine > c && !w.caught.CompareAndSwap(c, mine); c = w.caught.Load() {
	}
	return w.gen.Load(), nil
}

// Acknowledgements. A notification reaches the other processes a moment
// after the commit — usually well under a millisecond, but tens of
// milliseconds on a loaded machine — and the client that asked for the
// change may send its next request to another process sooner. So every
// listener records in auth_listeners the generation it has heard of
// (after raising its own), and renews the row every authPing; and the
// process that made a change waits, before it answers, until every
// listener seen alive within listenerAlive has heard of it, for at most
// ackWait. A process that died keeps its row until listenerAlive has
// passed: changes made meanwhile wait ackWait for it, then go on.
const (
	ackWait       = 2 * time.Second
	listenerAlive = 3 * authPing
)

// nowMS is the database's clock in Unix milliseconds.
const nowMS = `CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)`

// ownChange is told of a change of authentication this process committed,
// after the commit and before the call that made it returns. The next
// call of generation reads the table; and it waits for the listeners'
// acknowledgements (in a process that runs no listener too, such as the
// CLI).
func (w *authWatch) ownChange() {
	w.changed.Add(1)
	ctx, cancel := context.WithTimeout(w.ctx, ackWait)
	defer cancel()
	g, err := w.store.AuthGeneration(ctx)
	if err != nil {
		return
	}
	for wait := 200 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		var behind int
		err := w.pool.QueryRow(ctx, `SELECT count(*) FROM auth_listeners WHERE heard < $1 AND seen_at > `+nowMS+` - $2`,
			g, listenerAlive.Milliseconds()).Scan(&behind)
		if err != nil || behind == 0 {
			if err != nil && w.ctx.Err() == nil {
				w.logger.Warn("wait for the other processes to hear of a change of authentication", "err", err)
			}
			return
		}
		select {
		case <-ctx.Done():
			w.logger.Warn("other processes did not acknowledge a change of authentication in time; going on",
				"processes", behind, "generation", g, "waited", ackWait)
			return
		case <-time.After(wait):
		}
	}
}

// hear records g as heard by the listener, and known, then acknowledges
// it on conn (auth_listeners).
func (w *authWatch) hear(conn *pgx.Conn, g int64) error {
	for cur := w.heard.Load(); g > cur && !w.heard.CompareAndSwap(cur, g); cur = w.heard.Load() {
	}
	w.raise(g)
	ctx, cancel := context.WithTimeout(w.ctx, authPing)
	defer cancel()
	_, err := conn.Exec(ctx, `INSERT INTO auth_listeners (process, heard, seen_at) VALUES ($1, $2, `+nowMS+`)
		ON CONFLICT (process) DO UPDATE SET heard = greatest(auth_listeners.heard, excluded.heard), seen_at = excluded.seen_at`,
		w.process, w.heard.Load())
	if err == nil {
		w.registered.Store(true)
	}
	return err
}

// raise records g if it is higher than the generation known.
func (w *authWatch) raise(g int64) {
	for cur := w.gen.Load(); g > cur && !w.gen.CompareAndSwap(cur, g); cur = w.gen.Load() {
	}
}

func (w *authWatch) listener() {
	defer w.wg.Done()
	for w.ctx.Err() == nil {
		err := w.listenOnce()
		w.live.Store(false)
		if err != nil && w.ctx.Err() == nil {
			w.logger.Warn("listen for changes of authentication; retrying (requests read the generation from the table meanwhile)", "err", err)
			select {
			case <-w.ctx.Done():
			case <-time.After(notifyRetry):
			}
		}
	}
}

// listenOnce listens on one connection until it fails or the store
// closes. It turns live on once it listens, is entered in auth_listeners
// and has read the counter: a change committed before the entry is in
// what it read, and one committed after waits for its acknowledgement.
func (w *authWatch) listenOnce() error {
	conn, err := pgx.ConnectConfig(w.ctx, w.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	w.pid.Store(conn.PgConn().PID())
	if _, err := conn.Exec(w.ctx, "LISTEN "+pgx.Identifier{w.channel}.Sanitize()); err != nil {
		return err
	}
	// Enter the listeners before reading the counter: a change committed
	// after this waits for the acknowledgement, and one committed before
	// is in what the read finds.
	if _, err := conn.Exec(w.ctx, `INSERT INTO auth_listeners (process, heard, seen_at) VALUES ($1, -1, `+nowMS+`)
		ON CONFLICT (process) DO UPDATE SET seen_at = excluded.seen_at`, w.process); err != nil {
		return err
	}
	w.registered.Store(true)
	if err := w.read(conn); err != nil {
		return err
	}
	read := w.now()
	w.beat()
	w.live.Store(true)
	for {
		ctx, cancel := context.WithTimeout(w.ctx, authBeat)
		n, err := conn.WaitForNotification(ctx)
		cancel()
		if w.pause != nil {
			w.pause()
		}
		switch {
		case err == nil:
			g, perr := strconv.ParseInt(n.Payload, 10, 64)
			if perr != nil {
				// Not the triggers' payload: read the truth.
				if err := w.read(conn); err != nil {
					return err
				}
				continue
			}
			if err := w.hear(conn, g); err != nil {
				return err
			}
		case w.ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			if w.now().Sub(read) < authPing {
				break
			}
			if err := w.read(conn); err != nil {
				return err
			}
			read = w.now()
		default:
			return err
		}
		w.beat()
	}
}

// read reads the stored generation on conn, within authPing.
func (w *authWatch) read(conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(w.ctx, authPing)
	defer cancel()
	var g int64
	if err := conn.QueryRow(ctx, sqlstore.AuthGenerationQuery).Scan(&g); err != nil {
		return err
	}
	return w.hear(conn, g)
}

// stop stops listening and removes this process's row, so that no
// change waits for it.
func (w *authWatch) stop() {
	w.cancel()
	w.wg.Wait()
	if w.registered.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.pool.Exec(ctx, `DELETE FROM auth_listeners WHERE process = $1`, w.process) //nolint:errcheck // the row ages out
	}
}

// AuthGeneration returns the authentication generation (ams.AuthWatch):
// from memory while this process listens for the triggers'
// notifications, else read from the table.
func (db *DB) AuthGeneration(ctx context.Context) (int64, error) {
	return db.auth.generation(ctx)
}
