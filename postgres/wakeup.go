package postgres

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Processes sharing a database wake each other's delivery workers with
// LISTEN/NOTIFY, so that a job queued by one process is claimed at once by
// an idle worker of any process, not at the next poll.
//
// The notification is sent after the commit that queued jobs, by one
// goroutine per process that coalesces the commits made while it sends:
// NOTIFY inside the committing transactions would make them take
// PostgreSQL's global notification lock at commit, one at a time. A lost
// notification (the listener reconnecting) costs at most the worker's
// poll interval: the poll stays as a safety net.
type wakeup struct {
	pool    *pgxpool.Pool
	channel string // per schema: stores in other schemas are not woken
	token   string // this process's; its listener ignores its own notifications
	store   *sqlstore.Store
	logger  *slog.Logger

	send   chan struct{}
	listen sync.Once
	// listening is closed once the listener first listens (and has woken
	// the workers for what it may have missed): see DB.Listening.
	listening     chan struct{}
	listeningOnce sync.Once
	ctx           context.Context
	cancel        context.CancelFunc
	wg            sync.WaitGroup
}

// notifyRetry is how long the listener waits before reconnecting.
const notifyRetry = time.Second

func startWakeup(pool *pgxpool.Pool, schema string, store *sqlstore.Store, logger *slog.Logger) *wakeup {
	ctx, cancel := context.WithCancel(context.Background())
	channel := "ams_jobs." + schema
	if len(channel) > 63 { // PostgreSQL's longest name; a shared prefix only wakes more workers
		channel = channel[:63]
	}
	w := &wakeup{pool: pool, channel: channel, token: ams.NewID("prc_"), store: store, logger: logger,
		send: make(chan struct{}, 1), listening: make(chan struct{}), ctx: ctx, cancel: cancel}
	store.OnJobsQueued(w.notify)
	w.wg.Add(1)
	go w.sender()
	return w
}

// notify asks the sender to tell the other processes; it never blocks.
func (w *wakeup) notify() {
	select {
	case w.send <- struct{}{}:
	default:
	}
}

func (w *wakeup) sender() {
	defer w.wg.Done()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.send:
		}
		if _, err := w.pool.Exec(w.ctx, `SELECT pg_notify($1, $2)`, w.channel, w.token); err != nil && w.ctx.Err() == nil {
			w.logger.Warn("tell other processes of queued webhook jobs", "err", err)
		}
	}
}

// startListening starts, once, the listener that wakes this process's
// workers when another process queued jobs. Only a process that runs a
// worker (which asks for JobsReady) holds the extra connection.
func (w *wakeup) startListening() {
	w.listen.Do(func() {
		w.wg.Add(1)
		go w.listener()
	})
}

func (w *wakeup) listener() {
	defer w.wg.Done()
	for w.ctx.Err() == nil {
		if err := w.listenOnce(); err != nil && w.ctx.Err() == nil {
			w.logger.Warn("listen for other processes' webhook jobs; retrying (the worker polls meanwhile)", "err", err)
			select {
			case <-w.ctx.Done():
			case <-time.After(notifyRetry):
			}
		}
	}
}

// listenOnce holds one connection listening until it fails or the store
// closes. Once it listens it wakes the workers, for the jobs queued while
// nobody listened: after a reconnection, and on the first connection too,
// which starts when the worker first waits, after its first claim: a job
// committed between that claim and the LISTEN would otherwise wait for
// the poll (TestMultiProcessWakeUp, whose worker polls hourly, saw it).
func (w *wakeup) listenOnce() error {
	conn, err := pgx.ConnectConfig(w.ctx, w.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(w.ctx, "LISTEN "+pgx.Identifier{w.channel}.Sanitize()); err != nil {
		return err
	}
	w.store.WakeWorkers()
	w.listeningOnce.Do(func() { close(w.listening) })
	for {
		n, err := conn.WaitForNotification(w.ctx)
		if err != nil {
			return err
		}
		if n.Payload != w.token {
			w.store.WakeWorkers()
		}
	}
}

func (w *wakeup) stop() {
	w.cancel()
	w.wg.Wait()
}

// Listening starts the listener for other processes' queued jobs, as
// JobsReady does, and returns a channel closed once it listens and has
// woken the workers for the jobs it may have missed: after that, JobsReady
// is signalled only by commits. Tests wait for it before they watch
// JobsReady.
func (db *DB) Listening() <-chan struct{} {
	db.wake.startListening()
	return db.wake.listening
}

// JobsReady is signalled when a commit of this or another process sharing
// the database queued delivery jobs.
func (db *DB) JobsReady() <-chan struct{} {
	db.wake.startListening()
	return db.Store.JobsReady()
}
