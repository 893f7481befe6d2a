package caldav

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/testsignal"
	"github.com/amsdev/ams/ssrf"
)

// DefaultInterval is how often each integration is synced.
const DefaultInterval = 5 * time.Minute

// Worker syncs every CalDAV integration of every account: each one every
// Interval, and soon after its account's calendar changes in this process
// (Notify). Several processes may run one: each periodic run is claimed
// in the store first (Syncer.claim), so one process runs it per interval.
type Worker struct {
	Syncer
	// Guard checks the URLs of new integrations (and Client's
	// connections): https and no internal addresses, except in dev mode.
	Guard *ssrf.Guard
	// Interval is how often each integration is synced (DefaultInterval).
	Interval time.Duration
	// Poll is how often the worker looks for integrations due (default:
	// a tenth of Interval, at most 30 s).
	Poll time.Duration
	// Debounce is how long after a change the account is synced, so that
	// a burst of changes makes one run (default 1 s).
	Debounce time.Duration
	// Concurrency bounds the runs in flight (default 4).
	Concurrency int
	// RetryMax caps the back-off of a failing integration (see Backoff,
	// whose base is Interval): DefaultRetryMax.
	RetryMax time.Duration
	// RunTimeout bounds one run (DefaultRunTimeout); a run that started
	// this long ago and never recorded its outcome died with its process.
	RunTimeout time.Duration
	// Signals fire for tests (package testsignal); off unless a test
	// turns them on.
	Signals WorkerSignals

	once      sync.Once
	mu        sync.Mutex
	users     map[string]bool       // accounts to sync soon
	deletions map[string][]deletion // by integration id
	running   map[string]bool       // integration ids
	kick      chan struct{}
	sem       chan struct{}
	wg        sync.WaitGroup
}

// WorkerSignals are the moments of a running Worker that tests wait for.
type WorkerSignals struct {
	// Pass fires after each look for integrations due.
	Pass testsignal.Signal[struct{}]
	// Started fires with an integration's id when a run of it starts in
	// the background.
	Started testsignal.Signal[string]
}

func (w *Worker) init() {
	w.once.Do(func() {
		if w.Interval <= 0 {
			w.Interval = DefaultInterval
		}
		if w.Poll <= 0 {
			w.Poll = min(w.Interval/10, 30*time.Second)
		}
		if w.Debounce <= 0 {
			w.Debounce = time.Second
		}
		if w.Concurrency <= 0 {
			w.Concurrency = 4
		}
		if w.RetryMax <= 0 {
			w.RetryMax = DefaultRetryMax
		}
		if w.RunTimeout <= 0 {
			w.RunTimeout = DefaultRunTimeout
		}
		if w.Logger == nil {
			w.Logger = slog.Default()
		}
		if w.Guard == nil {
			w.Guard = &ssrf.Guard{}
		}
		if w.Client == nil {
			w.Client = NewHTTPClient(w.Guard)
		}
		w.users = map[string]bool{}
		w.deletions = map[string][]deletion{}
		w.running = map[string]bool{}
		w.kick = make(chan struct{}, 1)
		w.sem = make(chan struct{}, w.Concurrency)
	})
}

// Notify tells the worker that the account's calendar changed in this
// process: its integrations are synced soon. deleted are the events
// deleted (as they were): their objects are deleted on the server first.
// It never blocks. world.Watch calls it.
func (w *Worker) Notify(userID string, deleted []*ams.CalendarEvent) {
	w.init()
	w.mu.Lock()
	w.users[userID] = true
	for _, e := range deleted {
		if e.IntegrationID != "" && e.ExternalPath != "" {
			w.deletions[e.IntegrationID] = append(w.deletions[e.IntegrationID], deletion{e.ExternalPath, parseState(e.ExternalETag).ETag, e.ID})
		}
	}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run syncs until ctx is done, then waits for the runs in flight.
func (w *Worker) Run(ctx context.Context) error {
	w.init()
	defer w.wg.Wait()
	tick := time.NewTicker(w.Poll)
	defer tick.Stop()
	w.syncDue(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			w.syncDue(ctx)
		case <-w.kick:
			t := time.NewTimer(w.Debounce)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			w.syncNotified(ctx)
		}
	}
}

// SyncDue runs, at once, every integration Run would run now (its last
// run started an Interval ago or more, and its back-off is over), and
// waits for them. It is for tests and tools: not while Run runs.
func (w *Worker) SyncDue(ctx context.Context) {
	w.init()
	w.syncDue(ctx)
	w.wg.Wait()
}

// syncDue starts a run of every integration whose last run started an
// Interval ago or more and whose back-off is over.
func (w *Worker) syncDue(ctx context.Context) {
	defer w.Signals.Pass.Signal(struct{}{})
	ins, err := w.Store.ActiveIntegrations(ctx, Provider)
	if err != nil {
		if ctx.Err() == nil {
			w.Logger.Error("caldav: list integrations", "err", err)
		}
		return
	}
	now := w.now()
	for _, in := range ins {
		if now.Sub(in.UpdatedAt) >= w.Interval && (in.NextSyncAt == nil || !now.Before(*in.NextSyncAt)) {
			w.start(ctx, in, w.Interval)
		}
	}
}

// syncNotified starts a run of every integration of the accounts
// notified.
func (w *Worker) syncNotified(ctx context.Context) {
	w.mu.Lock()
	users := w.users
	w.users = map[string]bool{}
	w.mu.Unlock()
	if len(users) == 0 {
		return
	}
	ins, err := w.Store.ActiveIntegrations(ctx, Provider)
	if err != nil {
		if ctx.Err() == nil {
			w.Logger.Error("caldav: list integrations", "err", err)
		}
		return
	}
	active := map[string]bool{}
	for _, in := range ins {
		active[in.ID] = true
		if users[in.UserID] {
			w.start(ctx, in, 0)
		}
	}
	// Deletions for integrations no longer synced are dropped.
	w.mu.Lock()
	for id := range w.deletions {
		if !active[id] {
			delete(w.deletions, id)
		}
	}
	w.mu.Unlock()
}

// start runs a sync of in in the background, unless one is running in
// this process. A run that finds the integration claimed by another
// process within minAge does nothing.
func (w *Worker) start(ctx context.Context, in *ams.Integration, minAge time.Duration) {
	w.mu.Lock()
	if w.running[in.ID] {
		w.mu.Unlock()
		return
	}
	w.running[in.ID] = true
	w.mu.Unlock()
	w.Signals.Started.Signal(in.ID)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() {
			w.mu.Lock()
			delete(w.running, in.ID)
			w.mu.Unlock()
		}()
		defer func() {
			// A panic outside the run itself (which syncOne recovers)
			// stops this run, not the process.
			if p := recover(); p != nil {
				w.Logger.Error("caldav sync panicked", "integration_id", in.ID, "panic", p, "stack", string(debug.Stack()))
			}
		}()
		select {
		case w.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-w.sem }()
		if _, _, err := w.syncOne(ctx, in, minAge, true); err != nil && ctx.Err() == nil {
			w.Logger.Error("caldav sync", "integration_id", in.ID, "err", err)
		}
	}()
}

// syncOne claims and runs one sync, with the deletions waiting for it.
// Deletions of a failed run wait for the next. A background run waits
// for the integration's back-off; SyncNow does not. A panic during the
// run is its failure (status error), not the process's end.
func (w *Worker) syncOne(ctx context.Context, in *ams.Integration, minAge time.Duration, background bool) (*ams.Integration, Result, error) {
	cur, prev, ok, err := w.claim(ctx, in, minAge, background, backoff{w.Interval, w.RetryMax, w.RunTimeout})
	if err != nil || !ok {
		return cur, Result{}, err
	}
	w.mu.Lock()
	dels := w.deletions[in.ID]
	delete(w.deletions, in.ID)
	w.mu.Unlock()
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, w.RunTimeout)
	res, refusals, pending, runErr := w.runSafely(runCtx, cur, dels)
	cancel()
	if runErr != nil && len(dels) > 0 {
		w.mu.Lock()
		w.deletions[in.ID] = append(dels, w.deletions[in.ID]...)
		w.mu.Unlock()
	}
	if ctx.Err() != nil {
		// Stopped (a shutdown), not failed: the claim's count goes back.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := w.release(rctx, cur, prev); err != nil {
			w.Logger.Warn("caldav: release a stopped run", "integration_id", in.ID, "err", err)
		}
		return cur, res, ctx.Err()
	}
	out, err := w.finish(ctx, cur, runErr, refusals, res, pending)
	if err != nil {
		return nil, res, err
	}
	if runErr != nil {
		w.Logger.Warn("caldav sync failed", "integration_id", in.ID, "err", runErr)
	} else if res != (Result{}) {
		w.Logger.Info("caldav sync", "integration_id", in.ID, "result", res.String(), "duration_ms", time.Since(start).Milliseconds())
	}
	return out, res, nil
}

// SyncNow syncs integration in at once (POST /v1/integrations/{id}/sync)
// and returns it as it is afterwards: status error with last_error when
// the server failed. The error is the store's.
func (w *Worker) SyncNow(ctx context.Context, in *ams.Integration) (*ams.Integration, error) {
	w.init()
	out, _, err := w.syncOne(ctx, in, 0, false)
	return out, err
}

// runSafely is run, with a panic turned into the run's failure.
func (w *Worker) runSafely(ctx context.Context, in *ams.Integration, dels []deletion) (res Result, refusals []refusal, pending string, err error) {
	defer func() {
		if p := recover(); p != nil {
			w.Logger.Error("caldav sync panicked", "integration_id", in.ID, "panic", p, "stack", string(debug.Stack()))
			res, refusals, pending, err = Result{}, nil, "", remoteErr(fmt.Errorf("caldav: sync panicked: %v", p))
		}
	}()
	return w.run(ctx, in, dels)
}

// Connected starts the first sync of a new integration.
func (w *Worker) Connected(in *ams.Integration) { w.Notify(in.UserID, nil) }

// Check validates the config and secrets of a new CalDAV integration and
// tries them once (PROPFIND of the collection). It returns the config to
// store: url (the collection, ending in /) and username. Errors are the
// API's: 400 naming the field for bad input, a refused password or a URL
// that is not a calendar; 502 when the server cannot be reached or fails.
func (w *Worker) Check(ctx context.Context, config map[string]any, secrets map[string]string) (map[string]any, error) {
	w.init()
	for _, k := range sortedKeys(config) {
		if k != ConfigURL && k != ConfigUsername {
			return nil, ams.ParamError("unknown_parameter", "config."+k, "Unknown parameter 'config.%s'; a CalDAV integration's config has url and username.", k)
		}
	}
	for _, k := range sortedKeys(secrets) {
		if k != SecretPassword {
			return nil, ams.ParamError("unknown_parameter", "secrets."+k, "Unknown parameter 'secrets.%s'; a CalDAV integration's secrets are password.", k)
		}
	}
	raw, ok := config[ConfigURL].(string)
	if _, present := config[ConfigURL]; !present {
		return nil, ams.ParamError("parameter_missing", "config.url", "Missing required parameter 'config.url': the URL of the CalDAV calendar.")
	} else if !ok {
		return nil, ams.ParamError("invalid_type", "config.url", "'config.url' must be of type string.")
	}
	user, ok := config[ConfigUsername].(string)
	if _, present := config[ConfigUsername]; present && !ok {
		return nil, ams.ParamError("invalid_type", "config.username", "'config.username' must be of type string.")
	}
	if len(user) > 256 || strings.ContainsAny(user, ":\x00\r\n") {
		return nil, ams.ParamError("parameter_invalid", "config.username", "'config.username' must be at most 256 characters, without ':' or control characters.")
	}
	if p := secrets[SecretPassword]; len(p) > 1024 || strings.ContainsAny(p, "\x00\r\n") {
		return nil, ams.ParamError("parameter_invalid", "secrets.password", "'secrets.password' must be at most 1024 characters, without control characters.")
	}
	if err := w.Guard.CheckURL(ctx, raw); err != nil {
		var ue *ssrf.URLError
		if errors.As(err, &ue) {
			return nil, ams.ParamError("parameter_invalid", "config.url", "Invalid CalDAV URL: %s.", ue.Reason)
		}
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery != "" {
		return nil, ams.ParamError("parameter_invalid", "config.url", "Invalid CalDAV URL: the URL of a calendar collection has no query.")
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	rc, err := newRemote(w.Client, u.String(), user, secrets[SecretPassword])
	if err != nil {
		return nil, ams.ParamError("parameter_invalid", "config.url", "Invalid CalDAV URL.")
	}
	if err := rc.check(ctx); err != nil {
		code := statusOf(err)
		switch {
		case errors.Is(err, errNotCalendar), code == http.StatusNotFound, code == http.StatusMethodNotAllowed:
			return nil, ams.ParamError("integration_not_calendar", "config.url", "%s", describe(err))
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			return nil, ams.ParamError("integration_unauthorized", "secrets.password", "%s", describe(err))
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ams.Errorf(ams.EUPSTREAM, "integration_unreachable", "%s", describe(err))
	}
	out := map[string]any{ConfigURL: u.String()}
	if user != "" {
		out[ConfigUsername] = user
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return slices.Clip(keys)
}
