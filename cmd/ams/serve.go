package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	netmail "net/mail"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/app"
	"github.com/amsdev/ams/caldav"
	"github.com/amsdev/ams/clientaddr"
	"github.com/amsdev/ams/engine/builtin"
	"github.com/amsdev/ams/engine/openai"
	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/internal/logbuf"
	"github.com/amsdev/ams/mail"
	"github.com/amsdev/ams/mcp"
	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/postgres"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/ratelimit/redisrate"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/tracing"
	"github.com/amsdev/ams/webhook"
	"github.com/spf13/cobra"
)

// serveConfig holds the flags of ams serve.
type serveConfig struct {
	addr            string
	baseURL         string
	dev             bool
	logLevel        string
	logFormat       string
	shutdownTimeout time.Duration
	smtpURL         string
	mailFrom        string
	retrySchedule   string
	webhookLease    time.Duration
	webhookWorkers  int
	webhookPerHook  int
	webhookPerAcct  int
	webhookPoll     time.Duration
	maxWebhooks     int
	maxTurns        int
	redisURL        string
	llmBaseURL      string
	llmAPIKey       string
	llmTimeout      time.Duration
	llmModels       []string
	caldavInterval  time.Duration
	mcpCallTimeout  time.Duration
	mcpConnect      time.Duration
	trustedProxies  string
	clientAddrHdr   string
	corsOrigins     string
	requestTimeout  time.Duration
	otlpEndpoint    string
	bgTurnTimeout   time.Duration
	actionTimeout   time.Duration
}

func newServeCmd(sf *storeFlags) *cobra.Command {
	cfg := &serveConfig{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API server",
		Long: `Run the ams API server.

Every flag has an environment variable: AMS_ plus the flag name in upper case
with dashes as underscores (--addr is AMS_ADDR, --dev is AMS_DEV=1).
SIGINT or SIGTERM shut it down gracefully: it stops accepting connections and
lets requests in flight finish (up to --shutdown-timeout).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, sf, cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "address to listen on (env AMS_ADDR)")
	f.StringVar(&cfg.baseURL, "base-url", "", "public URL of the service, used in links (env AMS_BASE_URL; default http://<addr>)")
	f.BoolVar(&cfg.dev, "dev", false, "development mode: print a ready user, API key and assistant (env AMS_DEV)")
	f.StringVar(&cfg.logLevel, "log-level", "info", "debug, info, warn or error (env AMS_LOG_LEVEL)")
	f.StringVar(&cfg.logFormat, "log-format", "json", "json or text (env AMS_LOG_FORMAT)")
	f.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long requests in flight may take to finish on shutdown (env AMS_SHUTDOWN_TIMEOUT)")
	f.StringVar(&cfg.smtpURL, "smtp-url", "", "SMTP relay for e-mails, smtp://user:pass@host:port (env AMS_SMTP_URL; empty: .eml files in <data-dir>/outbox)")
	f.StringVar(&cfg.mailFrom, "mail-from", mail.DefaultFrom, "From address of e-mails (env AMS_MAIL_FROM)")
	f.StringVar(&cfg.retrySchedule, "webhook-retry-schedule", "0s,1m,5m,30m,2h", "delay before each webhook delivery attempt (env AMS_WEBHOOK_RETRY_SCHEDULE)")
	f.DurationVar(&cfg.webhookLease, "webhook-lease", 15*time.Second, "how long a claimed delivery is reserved before another worker may take it (env AMS_WEBHOOK_LEASE)")
	f.IntVar(&cfg.webhookWorkers, "webhook-concurrency", 64, "deliveries in flight in this process at most; 0: this process sends none, leaving them to other processes on the database (env AMS_WEBHOOK_CONCURRENCY)")
	f.IntVar(&cfg.webhookPerHook, "webhook-concurrency-per-webhook", 8, "deliveries in flight to one webhook at most, across all processes (env AMS_WEBHOOK_CONCURRENCY_PER_WEBHOOK)")
	f.DurationVar(&cfg.webhookPoll, "webhook-poll-interval", time.Second, "how often the delivery worker looks for retries that came due; new events wake it at once (env AMS_WEBHOOK_POLL_INTERVAL)")
	f.IntVar(&cfg.webhookPerAcct, "webhook-concurrency-per-account", webhook.DefaultPerAccount, "deliveries in flight of one account at most, across all processes (env AMS_WEBHOOK_CONCURRENCY_PER_ACCOUNT)")
	f.IntVar(&cfg.maxWebhooks, "max-webhooks-per-account", ams.DefaultMaxWebhooks,
		"webhooks one account may have; an enterprise account's own cap (ams users update --max-webhooks) overrides it (env AMS_MAX_WEBHOOKS_PER_ACCOUNT)")
	f.IntVar(&cfg.maxTurns, "max-concurrent-turns-per-account", amshttp.DefaultMaxConcurrentTurns,
		"turns and streams (POST /v1/messages, GET /v1/turns/{id}/events) one account may have in progress in this process, background turns while they run; beyond it 429 concurrent_turns_exceeded (env AMS_MAX_CONCURRENT_TURNS_PER_ACCOUNT)")
	f.DurationVar(&cfg.caldavInterval, "caldav-sync-interval", caldav.DefaultInterval, "how often each CalDAV integration is synced with its server (env AMS_CALDAV_SYNC_INTERVAL)")
	f.DurationVar(&cfg.mcpCallTimeout, "mcp-call-timeout", mcp.DefaultCallTimeout, "how long a call of an MCP integration's tool may take, connecting included (env AMS_MCP_CALL_TIMEOUT)")
	f.DurationVar(&cfg.mcpConnect, "mcp-connect-timeout", mcp.DefaultConnectTimeout, "how long connecting to an MCP server and listing its tools may take (env AMS_MCP_CONNECT_TIMEOUT)")
	f.StringVar(&cfg.trustedProxies, "trusted-proxies", "", "networks of the reverse proxies or load balancers in front of ams, comma-separated CIDRs: from them, --client-address-header (or Forwarded or X-Forwarded-For) tells the client's address (env AMS_TRUSTED_PROXIES; empty: none, the connecting address is the client)")
	f.StringVar(&cfg.clientAddrHdr, "client-address-header", "", "the one header the --trusted-proxies set to the client's address, such as X-Forwarded-For, Forwarded, X-Real-IP or CF-Connecting-IP: only it is read, walked from the right past trusted proxies (env AMS_CLIENT_ADDRESS_HEADER; empty: Forwarded or X-Forwarded-For, and a request with both is refused, 400 client_address_ambiguous)")
	f.StringVar(&cfg.corsOrigins, "cors-allowed-origins", "", "origins whose pages may call the API from a browser, comma-separated scheme://host[:port] such as https://app.example.com; the origins of public OAuth clients' redirect URIs are allowed too (env AMS_CORS_ALLOWED_ORIGINS; empty: only those; \"*\" is refused)")
	f.StringVar(&cfg.redisURL, "redis-url", "", "Redis that counts rate limits for all processes, redis://host:port/db (env AMS_REDIS_URL; default: in PostgreSQL with --database-url, else in memory)")
	f.StringVar(&cfg.llmBaseURL, "llm-base-url", "", "OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM, llama.cpp) that runs assistants whose model is not builtin, such as https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (env AMS_LLM_BASE_URL; empty: only the built-in engine)")
	f.StringVar(&cfg.llmAPIKey, "llm-api-key", "", "API key sent to --llm-base-url as a bearer token (env AMS_LLM_API_KEY; empty: none)")
	f.DurationVar(&cfg.llmTimeout, "llm-timeout", 60*time.Second, "how long one reply may take, a model's tool calls included (env AMS_LLM_TIMEOUT)")
	f.DurationVar(&cfg.requestTimeout, "request-timeout", 30*time.Second, "how long one API request may take before it is answered 503 request_timeout (a database that does not answer, say); requests that wait for a reply or a CalDAV sync get --llm-timeout more, a stream is bounded only until it begins; 0: no bound (env AMS_REQUEST_TIMEOUT)")
	f.DurationVar(&sf.statementTimeout, "database-statement-timeout", 30*time.Second, "PostgreSQL's statement_timeout on every connection, unless the URL sets statement_timeout; 0: the server's setting (env AMS_DATABASE_STATEMENT_TIMEOUT)")
	f.StringVar(&cfg.otlpEndpoint, "otlp-endpoint", "", "OpenTelemetry collector to export traces to over OTLP/HTTP, such as http://127.0.0.1:4318 (/v1/traces is added to a URL without a path) (env AMS_OTLP_ENDPOINT; empty: no tracing)")
	f.DurationVar(&cfg.actionTimeout, "required-action-timeout", 10*time.Minute, "how long a turn waits for tool outputs or approvals (status requires_action) before it fails with required_action_expired (env AMS_REQUIRED_ACTION_TIMEOUT)")
	f.DurationVar(&cfg.bgTurnTimeout, "background-turn-timeout", 10*time.Minute, "how long a background turn (POST /v1/messages with background: true) may take from its start to its end, whichever processes run it; past it the turn fails with background_turn_timeout (env AMS_BACKGROUND_TURN_TIMEOUT)")
	f.StringSliceVar(&cfg.llmModels, "llm-models", nil, "the models assistants may use on --llm-base-url, comma-separated (env AMS_LLM_MODELS; empty: any)")
	return cmd
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	switch strings.ToLower(level) {
	case "debug", "info", "warn", "error":
		lv.UnmarshalText([]byte(level))
	default:
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be json or text, not %q", format)
}

// defaultGCPercent is the garbage collector's target when GOGC is not set.
// The server's live heap is small (tens of MB), so letting it grow to five
// times that before collecting costs little memory and saves ~10% CPU
// under load (docs/benchmarks.md).
const defaultGCPercent = 400

func serve(ctx context.Context, sf *storeFlags, cfg *serveConfig, stdout, stderr io.Writer) error {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	// Log lines are buffered and flushed every 100 ms (and at exit), so a
	// busy server does not pay a system call per request.
	logOut := logbuf.New(stderr, 64<<10, 100*time.Millisecond)
	defer logOut.Close()
	logger, err := newLogger(logOut, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	schedule, err := webhook.ParseSchedule(cfg.retrySchedule)
	if err != nil {
		return fmt.Errorf("--webhook-retry-schedule: %w", err)
	}
	if cfg.webhookWorkers < 0 || cfg.webhookPerHook < 1 || cfg.webhookPerAcct < 1 {
		return errors.New("--webhook-concurrency must be 0 or more, --webhook-concurrency-per-webhook and --webhook-concurrency-per-account 1 or more")
	}
	if cfg.actionTimeout <= 0 {
		return errors.New("--required-action-timeout must be positive")
	}
	if cfg.bgTurnTimeout <= 0 {
		return errors.New("--background-turn-timeout must be positive")
	}
	if cfg.maxTurns < 1 {
		return errors.New("--max-concurrent-turns-per-account must be 1 or more")
	}
	if cfg.maxWebhooks < 1 {
		return fmt.Errorf("--max-webhooks-per-account must be 1 or more")
	}
	if cfg.webhookPoll <= 0 {
		return errors.New("--webhook-poll-interval must be positive")
	}
	if cfg.webhookLease <= webhook.Timeout {
		return fmt.Errorf("--webhook-lease must be longer than the %s delivery timeout", webhook.Timeout)
	}
	proxies, err := clientaddr.ParseProxies(cfg.trustedProxies)
	if err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	addrHeader, err := clientaddr.ParseHeader(cfg.clientAddrHdr)
	if err != nil {
		return fmt.Errorf("--client-address-header: %w", err)
	}
	switch {
	case addrHeader != "" && len(proxies) == 0:
		return errors.New("--client-address-header needs --trusted-proxies: the header is read only from the proxies' networks")
	case addrHeader == "" && len(proxies) > 0:
		logger.Warn("--trusted-proxies without --client-address-header: the client address is read from Forwarded or X-Forwarded-For, whichever a request has; " +
			"a client can send the one your load balancer does not set, so name the one it sets with --client-address-header")
	}
	corsOrigins, err := amshttp.ParseOrigins(cfg.corsOrigins)
	if err != nil {
		return fmt.Errorf("--cors-allowed-origins: %w", err)
	}
	if _, err := netmail.ParseAddress(cfg.mailFrom); cfg.mailFrom != "" && (err != nil || strings.ContainsAny(cfg.mailFrom, "\r\n")) {
		return fmt.Errorf("--mail-from must be an e-mail address such as %q, not %q", mail.DefaultFrom, cfg.mailFrom)
	}
	// Tracing (docs/operations.md) is on only with --otlp-endpoint; its
	// last spans are sent after the background work stops.
	stopTracing, err := tracing.Setup(ctx, cfg.otlpEndpoint, ams.Version)
	if err != nil {
		return fmt.Errorf("--otlp-endpoint: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(sctx); err != nil {
			logger.Warn("tracing: spans not exported at shutdown", "err", err)
		}
	}()
	sender, err := mail.FromConfig(cfg.smtpURL, sf.dataDir, cfg.mailFrom)
	if err != nil {
		return fmt.Errorf("--smtp-url: %w", err)
	}
	if cfg.baseURL != "" {
		if err := checkHTTPURL("--base-url", cfg.baseURL); err != nil {
			return err
		}
	}
	engine := builtin.New()
	llm, err := llmEngine(cfg, logger)
	if err != nil {
		return err
	}
	// Everything that can fail without the store is checked, and the
	// address taken, before the store is opened: a serve that cannot
	// start leaves no new store behind (and removes one it made, below).
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", cfg.addr, err)
	}
	started := false
	defer func() {
		if !started {
			ln.Close()
		}
	}()
	undo := newStoreUndo(sf)
	sf.create = true // a first ams serve makes the store
	store, err := openStore(ctx, sf)
	if err != nil {
		undo.run()
		return err
	}
	defer func() {
		if !started {
			undo.run() // after store.Close, deferred below
		}
	}()
	defer store.Close()
	limiter, throttle, err := limiters(ctx, store, cfg.redisURL, logger)
	if err != nil {
		return err
	}
	if c, ok := limiter.(io.Closer); ok {
		defer c.Close()
	}
	guard := &ssrf.Guard{AllowPrivate: cfg.dev}

	base := cfg.baseURL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	base = strings.TrimRight(base, "/")
	// The OAuth server signs tokens with a key every process shares (see oauthKey).
	tokenKey, err := oauthKey(sf)
	if err != nil {
		return fmt.Errorf("oauth key: %w", err)
	}
	// The server is built as the tests build it (package app).
	a, err := app.New(app.Config{
		Store:    store,
		Logger:   logger,
		Limiter:  limiter,
		Throttle: throttle,
		Guard:    guard,
		EngineFor: func(a *ams.Assistant) (ams.Engine, error) {
			if a.Model == ams.ModelBuiltin || a.Model == "" {
				return engine, nil
			}
			if llm != nil && (len(cfg.llmModels) == 0 || slices.Contains(cfg.llmModels, a.Model)) {
				return llm, nil
			}
			return nil, ams.Errorf(ams.EINVALID, "model_not_supported", "Assistant '%s' uses model '%s', which this server does not run.", a.ID, a.Model)
		},
		EngineTimeout:         cfg.llmTimeout,
		RequestTimeout:        cfg.requestTimeout,
		BaseURL:               base,
		OAuthSecret:           tokenKey,
		Mail:                  sender,
		WebhookSchedule:       schedule,
		WebhookLease:          cfg.webhookLease,
		WebhookConcurrency:    cfg.webhookWorkers,
		WebhookPerWebhook:     cfg.webhookPerHook,
		WebhookPerAccount:     cfg.webhookPerAcct,
		WebhookPollInterval:   cfg.webhookPoll,
		NoWebhookWorker:       cfg.webhookWorkers == 0,
		MaxWebhooks:           cfg.maxWebhooks,
		CalDAVInterval:        cfg.caldavInterval,
		MCPCallTimeout:        cfg.mcpCallTimeout,
		MCPConnectTimeout:     cfg.mcpConnect,
		TrustedProxies:        proxies,
		CORSAllowedOrigins:    corsOrigins,
		ClientAddressHeader:   addrHeader,
		MaxConcurrentTurns:    cfg.maxTurns,
		BackgroundTurnTimeout: cfg.bgTurnTimeout,
		RequiredActionTimeout: cfg.actionTimeout,
	})
	if err != nil {
		return err
	}
	if cfg.dev {
		if err := devBootstrap(ctx, store, tokenKey, base, stdout); err != nil {
			return fmt.Errorf("dev bootstrap: %w", err)
		}
	}
	// Event streams (GET /v1/events/stream) last until their client
	// leaves: they end when the shutdown begins, their clients resuming
	// elsewhere, so that it does not wait for them.
	shuttingDown := make(chan struct{})
	srv := &http.Server{
		Handler:           amshttp.EndStreamsOnShutdown(a.Handler(), shuttingDown),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      120 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	srv.RegisterOnShutdown(func() { close(shuttingDown) })
	// Background work: webhook deliveries, queued e-mails, reminders,
	// CalDAV sync, usage, retention. It stops when ctx is done; deliveries
	// in flight finish and are recorded.
	bgCtx, stopBackground := context.WithCancel(ctx)
	bgDone := make(chan struct{})
	go func() { a.Run(bgCtx); close(bgDone) }()
	defer func() { stopBackground(); <-bgDone }()

	logger.Info("ams listening", "addr", ln.Addr().String(), "base_url", base, "data_dir", sf.dataDir, "dev", cfg.dev, "trusted_proxies", proxies.String(), "client_address_header", addrHeader, "cors_allowed_origins", strings.Join(corsOrigins, ","), "version", ams.Version)
	errc := make(chan error, 1)
	started = true
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: finishing requests in flight", "timeout", cfg.shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	stopBackground()
	<-bgDone
	logger.Info("stopped")
	return nil
}

// limiters chooses where requests and failed logins are counted: rate
// limits in Redis with --redis-url, else in PostgreSQL when the store is
// there, so that every process serving the database counts together; else
// (one process on SQLite) in memory. Failed logins are counted in
// PostgreSQL when the store is there, else in memory.
func limiters(ctx context.Context, store ams.Store, redisURL string, logger *slog.Logger) (ams.RateLimiter, oauth.LoginThrottle, error) {
	var limiter ams.RateLimiter = ratelimit.NewMemory()
	var throttle oauth.LoginThrottle = oauth.NewMemoryThrottle(oauth.ThrottleKeep, oauth.LoginFailureWindow)
	limiterName, throttleName := "memory", "memory"
	if pg, ok := store.(*postgres.DB); ok {
		limiter, limiterName = pg.RateLimiter(), "postgres"
		throttle, throttleName = pg.LoginThrottle(oauth.ThrottleKeep, oauth.LoginFailureWindow), "postgres"
	}
	if redisURL != "" {
		redisrate.SetLogger(logger)
		rl, err := redisrate.Open(ctx, redisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("--redis-url: %w", err)
		}
		limiter, limiterName = rl, "redis"
	}
	logger.Info("counting rate limits and failed logins", "rate_limiter", limiterName, "login_throttle", throttleName)
	return limiter, throttle, nil
}

// llmEngine returns the model-backed engine of --llm-base-url, which runs
// every assistant whose model is not builtin, or nil when the flag is not
// set.
func llmEngine(cfg *serveConfig, logger *slog.Logger) (ams.Engine, error) {
	if cfg.llmTimeout <= 0 {
		return nil, fmt.Errorf("--llm-timeout must be positive")
	}
	if cfg.llmBaseURL == "" {
		return nil, nil
	}
	e, err := openai.New(openai.Config{BaseURL: cfg.llmBaseURL, APIKey: cfg.llmAPIKey, Timeout: cfg.llmTimeout, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("--llm-base-url: %w", err)
	}
	logger.Info("assistants of other models than builtin answer through a chat-completions server", "llm_base_url", redactedURL(cfg.llmBaseURL))
	return e, nil
}

// redactedURL returns u without its password, for the log.
func redactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Redacted()
}
