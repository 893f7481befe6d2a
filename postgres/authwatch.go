package postgres

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
// change missed meanwhile is caught up.
type authWatch struct {
	pool    *pgxpool.Pool
	channel string
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

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// authPing is how long the listener waits for a notification before it
// checks its connection by reading the counter on it.
const authPing = 10 * time.Second

func newAuthWatch(pool *pgxpool.Pool, schema string, store *sqlstore.Store, logger *slog.Logger) *authWatch {
	ctx, cancel := context.WithCancel(context.Background())
	channel := "ams_auth." + schema
	if len(channel) > 63 { // as the triggers cut it (left(…, 63))
		channel = channel[:63]
	}
	return &authWatch{pool: pool, channel: channel, store: store, logger: logger, ctx: ctx, cancel: cancel}
}

// generation returns the authentication generation: from memory while
// the listener is live, else read from the table.
func (w *authWatch) generation(ctx context.Context) (int64, error) {
	w.start.Do(func() {
		w.wg.Add(1)
		go w.listener()
	})
	mine := w.changed.Load()
	if w.live.Load() && w.caught.Load() >= mine {
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

// echoWait bounds how long a change of this process waits for its own
// listener to hear of it.
const echoWait = 50 * time.Millisecond

// ownChange is told of a change of authentication this process committed,
// after the commit and before the call that made it returns. The next
// call of generation reads the table. And while listening, it waits (at
// most echoWait) until this process's listener has heard the change's
// notification: PostgreSQL signals every listening backend at the same
// commit, so by then the other processes' listeners have been sent it
// too, before the client that asked for the change has its answer and can
// send another request elsewhere.
func (w *authWatch) ownChange() {
	w.changed.Add(1)
	if !w.live.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, echoWait)
	defer cancel()
	g, err := w.store.AuthGeneration(ctx)
	if err != nil {
		return
	}
	for w.heard.Load() < g && w.live.Load() && ctx.Err() == nil {
		time.Sleep(100 * time.Microsecond)
	}
}

// hear records g as heard by the listener, and known.
func (w *authWatch) hear(g int64) {
	for cur := w.heard.Load(); g > cur && !w.heard.CompareAndSwap(cur, g); cur = w.heard.Load() {
	}
	w.raise(g)
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
// closes. It turns live on once it listens and has read the counter
// (a change committed before LISTEN took effect is in what it read).
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
	if err := w.read(conn); err != nil {
		return err
	}
	w.live.Store(true)
	for {
		ctx, cancel := context.WithTimeout(w.ctx, authPing)
		n, err := conn.WaitForNotification(ctx)
		cancel()
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
			w.hear(g)
		case w.ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			if err := w.read(conn); err != nil {
				return err
			}
		default:
			return err
		}
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
	w.hear(g)
	return nil
}

func (w *authWatch) stop() {
	w.cancel()
	w.wg.Wait()
}

// AuthGeneration returns the authentication generation (ams.AuthWatch):
// from memory while this process listens for the triggers'
// notifications, else read from the table.
func (db *DB) AuthGeneration(ctx context.Context) (int64, error) {
	return db.auth.generation(ctx)
}
