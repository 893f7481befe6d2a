// Package app builds the ams server from its parts, once: the one store
// the services share (wrapped by world.Watch, so that every change
// wakes the reminder and calendar workers), the services (accounts,
// world, messaging, webhooks), the API server, the OAuth server, the account
// pages, their mux, and the background workers. `ams serve` (cmd/ams) and
// the test fixture (internal/testing/amstest) both call New, so the fixture runs
// the production wiring; serve adds the flags, the listener and signals,
// the fixture a temporary SQLite store and a hand-moved clock.
package app

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/account"
	"github.com/amsdev/ams/caldav"
	"github.com/amsdev/ams/clientaddr"
	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/mail"
	"github.com/amsdev/ams/mcp"
	"github.com/amsdev/ams/messaging"
	"github.com/amsdev/ams/metrics"
	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/openapi"
	"github.com/amsdev/ams/pages"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/usage"
	"github.com/amsdev/ams/webhook"
	"github.com/amsdev/ams/world"
)

// Config is what New builds the server from.
type Config struct {
	// Store is the storage engine (required). The services get it wrapped
	// by world.Watch; the workers get it as is.
	Store ams.Store
	// Clock is the service clock (nil: the wall clock).
	Clock ams.Clock
	// Logger receives the logs (nil: slog.Default()).
	Logger *slog.Logger
	// Limiter counts requests against the accounts' rate limits (nil: in
	// memory, ratelimit.NewMemory).
	Limiter ams.RateLimiter
	// Throttle counts failed logins (nil: in memory).
	Throttle oauth.LoginThrottle
	// TrustedProxies are the networks whose Forwarded/X-Forwarded-For
	// headers are believed for the client address of a request (nil:
	// none).
	TrustedProxies clientaddr.Proxies
	// ClientAddressHeader is the one header those proxies report the
	// client's address in (clientaddr.Resolver.Header; "": Forwarded or
	// X-Forwarded-For, a request with both refused).
	ClientAddressHeader string
	// Guard checks webhook and CalDAV URLs when they are given and every
	// connection made to them (nil: strict: https, no internal addresses).
	Guard *ssrf.Guard
	// EngineFor chooses the engine that answers for an assistant
	// (required).
	EngineFor func(a *ams.Assistant) (ams.Engine, error)
	// EngineTimeout bounds one reply (0: messaging's default).
	EngineTimeout time.Duration
	// BackgroundTurnTimeout bounds a background turn from its start to
	// its end (0: messaging's default, 10 minutes).
	BackgroundTurnTimeout time.Duration
	// RequiredActionTimeout is how long a turn waits for tool outputs or
	// approvals before it fails with required_action_expired (ams serve
	// --required-action-timeout); 0 means 10 minutes.
	RequiredActionTimeout time.Duration
	// TurnRunnerInterval is how often this process looks for turns no
	// process runs: abandoned ones and queued ones that are next (0:
	// messaging's default, 1 s). NoTurnRunner turns that off.
	TurnRunnerInterval time.Duration
	NoTurnRunner       bool
	// RequestTimeout bounds each API request (amshttp.Server's; 0: no
	// bound); requests that wait for a reply or a sync get EngineTimeout
	// more.
	RequestTimeout time.Duration
	// BaseURL is the service's public URL, without a trailing slash
	// (links, e-mails, the OAuth issuer). Required.
	BaseURL string
	// OAuthSecret signs the OAuth tokens (oauth.SecretSize bytes, shared
	// by every process). Required.
	OAuthSecret []byte
	// Mail sends the queued e-mails (nil: no mailer runs; they stay
	// queued).
	Mail mail.Sender
	// The webhook worker's settings (zero: its defaults).
	WebhookSchedule    []time.Duration
	WebhookLease       time.Duration
	WebhookConcurrency int
	WebhookPerWebhook  int
	WebhookPerAccount  int
	// WebhookPollInterval is how often the worker looks for retries that
	// came due and for jobs whose wake-up it missed (0: 1 s).
	WebhookPollInterval time.Duration
	// NoWebhookWorker leaves deliveries to the workers of other processes
	// sharing the database: this one queues them but sends none.
	NoWebhookWorker bool
	// MaxWebhooks is how many webhooks an account may have (0:
	// ams.DefaultMaxWebhooks); enterprise accounts may have their own.
	MaxWebhooks int
	// CalDAVInterval is how often each CalDAV integration is synced (0:
	// caldav.DefaultInterval).
	CalDAVInterval time.Duration
	// MCPCallTimeout bounds a call of an MCP integration's tool, and
	// MCPConnectTimeout a connect or sync of one (0: package mcp's
	// defaults, 30 s and 10 s).
	MCPCallTimeout    time.Duration
	MCPConnectTimeout time.Duration
	// MaxConcurrentTurns is how many turns and streams one account may
	// have in flight in this process (0: amshttp.DefaultMaxConcurrentTurns).
	MaxConcurrentTurns int
	// CORSAllowedOrigins are the origins (amshttp.ParseOrigins) whose
	// pages may call the API from a browser, beside those of the public
	// OAuth clients' redirect URIs (nil: only those).
	CORSAllowedOrigins []string
}

// App is the built server: its handler, its services and its workers.
// Tests reach into the fields; production calls Handler and Run.
type App struct {
	// Store is the one store the services, the API and the pages share:
	// Config.Store wrapped by world.Watch.
	Store ams.Store
	// The services.
	Accounts *account.Service
	World    *world.Service
	Messages *messaging.Service
	Webhooks *webhook.Service
	// The servers, on one mux (API.Mux).
	API   *amshttp.Server
	OAuth *oauth.Server
	Pages *pages.Server
	// The background workers, run by Run.
	Webhook   *webhook.Worker // nil with Config.NoWebhookWorker
	Mailer    *mail.Worker    // nil without Config.Mail
	Reminders *world.Scheduler
	// KeyReminders queues the e-mails about API keys that expire or turn
	// 90 days old within 14 days (the Mailer sends them).
	KeyReminders *account.KeyReminders
	Calendars    *caldav.Worker
	Usage        *usage.Recorder

	plain        ams.Store
	noTurnRunner bool
	logger       *slog.Logger
	clock        ams.Clock
}

// New builds the server. It starts nothing: serve the Handler and call Run
// for the background work.
func New(cfg Config) (*App, error) {
	if cfg.Store == nil || cfg.EngineFor == nil || cfg.BaseURL == "" {
		return nil, errors.New("app: Config.Store, EngineFor and BaseURL are required")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	limiter := cfg.Limiter
	if limiter == nil {
		limiter = ratelimit.NewMemory()
	}
	guard := cfg.Guard
	if guard == nil {
		guard = &ssrf.Guard{}
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	a := &App{plain: cfg.Store, logger: logger, clock: cfg.Clock, noTurnRunner: cfg.NoTurnRunner}

	// Workers that the world's changes wake: reminders fire on time, and
	// CalDAV calendars sync soon after a change. They use the plain store,
	// so that their own writes do not call them back.
	a.Reminders = &world.Scheduler{Store: cfg.Store, Clock: cfg.Clock, Logger: logger}
	a.Calendars = &caldav.Worker{Syncer: caldav.Syncer{Store: cfg.Store, Client: caldav.NewHTTPClient(guard), Clock: cfg.Clock, Logger: logger},
		Guard: guard, Interval: cfg.CalDAVInterval}
	a.Store = world.Watch(cfg.Store, world.Changes{Reminder: a.Reminders.Wake, Calendar: a.Calendars.Notify})

	// The services, all on the one watched store.
	a.Accounts = &account.Service{Store: a.Store, Clock: cfg.Clock, BaseURL: base}
	// MCP servers are reached through the same guard as webhooks and
	// CalDAV (loopback http only with --dev).
	a.World = &world.Service{Store: a.Store, Clock: cfg.Clock, Integrations: map[string]world.Integrator{caldav.Provider: a.Calendars},
		MCP: mcp.New(mcp.Options{Guard: guard, CallTimeout: cfg.MCPCallTimeout, ConnectTimeout: cfg.MCPConnectTimeout, Logger: logger})}
	a.Messages = &messaging.Service{Store: ams.Narrow[messaging.Tx](a.Store), Clock: cfg.Clock, Tools: tracedTools(a.World.Toolbox), EngineFor: tracedEngineFor(cfg.EngineFor),
		EngineTimeout: cfg.EngineTimeout, Logger: logger, BackgroundTimeout: cfg.BackgroundTurnTimeout, RunnerInterval: cfg.TurnRunnerInterval,
		RequiredActionTimeout: cfg.RequiredActionTimeout}
	a.Webhooks = &webhook.Service{Store: ams.Narrow[webhook.Tx](a.Store), Guard: guard, Clock: cfg.Clock, MaxPerAccount: cfg.MaxWebhooks}

	doc, err := openapi.ForServer(base)
	if err != nil {
		return nil, err
	}
	// The API and the account pages read the store (their Reader) and
	// change OAuth clients through this.
	clients := &oauth.Clients{Store: a.Store}
	a.API = &amshttp.Server{
		Store:               a.Store,
		Records:             a.Store,
		OAuthClients:        clients,
		Limiter:             limiter,
		Messages:            a.Messages,
		World:               a.World,
		Webhooks:            a.Webhooks,
		Accounts:            a.Accounts,
		Clock:               cfg.Clock,
		Logger:              logger,
		OpenAPI:             doc,
		Metrics:             metrics.New(),
		Ready:               ready(cfg.Store),
		BaseURL:             base,
		TrustedProxies:      cfg.TrustedProxies,
		ClientAddressHeader: cfg.ClientAddressHeader,
		CORSOrigins:         cfg.CORSAllowedOrigins,
		RequestTimeout:      cfg.RequestTimeout,
		UpstreamTimeout:     cmp.Or(cfg.EngineTimeout, 60*time.Second),
		MaxConcurrentTurns:  cfg.MaxConcurrentTurns,
	}
	// Usage metering: requests are counted in memory and added to the
	// store every 10 s and at shutdown (Usage.Run, a background worker).
	a.Usage = usage.NewRecorder(a.Store)
	a.Usage.Clock, a.Usage.Logger = cfg.Clock, logger
	a.API.Usage = a.Usage
	a.API.Metrics.WatchQueue(func(ctx context.Context) (int64, time.Duration, error) {
		return cfg.Store.QueueStats(ctx, a.API.Clock.Now())
	})

	// The OAuth server signs tokens with a key every process shares; the
	// account pages share its session and sign-in.
	authz, err := oauth.New(oauth.Config{Store: a.Store, Clock: cfg.Clock, Logger: logger, BaseURL: base, Secret: cfg.OAuthSecret, Throttle: cfg.Throttle})
	if err != nil {
		return nil, err
	}
	a.OAuth = authz
	a.API.Tokens = authz
	authz.Register(a.API.Mux())
	a.Pages = &pages.Server{Store: a.Store, OAuthClients: clients, Clock: cfg.Clock, Logger: logger, BaseURL: base, OAuth: authz, Accounts: a.Accounts, Messages: a.Messages,
		Webhooks: a.Webhooks, Limiter: limiter, Usage: a.Usage, World: a.World}
	a.Pages.Register(a.API.Mux())

	if !cfg.NoWebhookWorker {
		a.Webhook = &webhook.Worker{Queue: cfg.Store, Users: cfg.Store, Client: webhook.NewClient(guard), Clock: cfg.Clock, Logger: logger,
			Schedule: cfg.WebhookSchedule, Lease: cfg.WebhookLease, Concurrency: cfg.WebhookConcurrency, PerWebhook: cfg.WebhookPerWebhook,
			PerAccount: cfg.WebhookPerAccount, PollInterval: cfg.WebhookPollInterval, BaseURL: base, OnAttempt: a.API.Metrics.Delivery,
			OnLeaseExpired: a.API.Metrics.LeaseExpired}
	}
	a.KeyReminders = &account.KeyReminders{Store: cfg.Store, Clock: cfg.Clock, Logger: logger, BaseURL: base}
	if cfg.Mail != nil {
		a.Mailer = &mail.Worker{Queue: cfg.Store, Sender: cfg.Mail, Clock: cfg.Clock, Logger: logger}
	}
	return a, nil
}

// Handler returns the HTTP handler of the API, the OAuth server and the
// account pages.
func (a *App) Handler() http.Handler { return a.API.Handler() }

// Run runs the background work until ctx is done: webhook deliveries,
// queued e-mails, reminders, CalDAV sync, usage metering, the hourly
// reminders of API keys to rotate, and the hourly purge of what is past
// its retention. It then waits for the workers to
// finish (deliveries in flight are recorded, usage counts are written).
func (a *App) Run(ctx context.Context) error {
	runs := []func(context.Context) error{a.Reminders.Run, a.Calendars.Run, a.Usage.Run, a.KeyReminders.Run, a.janitor}
	if !a.noTurnRunner {
		// Background and queued turns whose process died, or that are
		// next in their conversation, are taken up by some process.
		runs = append(runs, a.Messages.RunTurns)
		// Waits for tool outputs or approvals that expired fail.
		runs = append(runs, a.Messages.RunExpiry)
	}
	if a.Webhook != nil {
		runs = append(runs, a.Webhook.Run)
	}
	if a.Mailer != nil {
		runs = append(runs, a.Mailer.Run)
	}
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil {
				a.logger.Error("background worker stopped", "err", err)
			}
		}()
	}
	wg.Wait()
	return nil
}

// janitor deletes what is past its retention (events after 30 days,
// idempotency keys after 24 hours), at start and every hour.
func (a *App) janitor(ctx context.Context) error {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := a.plain.Purge(ctx, a.clock.Now()); err != nil && ctx.Err() == nil {
			a.logger.Error("purge expired records", "err", err)
		} else if n > 0 {
			a.logger.Info("purged expired records", "rows", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ready returns GET /readyz's check of store: it answers (Ping), and, on
// an engine that tracks it (CheckWrites), its writes do not fail for want
// of a database that can write (a full disk, the server gone).
func ready(store ams.Store) func(ctx context.Context) error {
	w, _ := store.(interface {
		CheckWrites(ctx context.Context) error
	})
	return func(ctx context.Context) error {
		if err := store.Ping(ctx); err != nil {
			return err
		}
		if w != nil {
			return w.CheckWrites(ctx)
		}
		return nil
	}
}
