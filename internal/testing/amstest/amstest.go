// Package amstest starts a complete ams server in-process for tests, built
// by app.New as ams serve builds it (the API, the OAuth server, the
// account pages, the services and the workers, not running): on a real
// SQLite store in a temporary directory, the built-in engine, the
// in-process rate limiter, a guard that allows loopback receivers, and a
// clock the test moves by hand.
package amstest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/app"
	"github.com/amsdev/ams/clientaddr"
	"github.com/amsdev/ams/engine/builtin"
	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/internal/testing/testclock"
	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/pages"
	"github.com/amsdev/ams/password"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/sqlite"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/usage"
	"github.com/amsdev/ams/webhook"
	"golang.org/x/crypto/bcrypt"
)

// Start is the time every fixture's clock starts at: 10:00:00 UTC
// (testclock.Start).
var Start = testclock.Start

// Fixture is a running server with one account ("ann@example.com",
// standard plan), an API key of it with read, write, messages and
// integrations, and an assistant.
type Fixture struct {
	T      testing.TB
	Server *httptest.Server
	// App is the server as app.New built it; API, OAuth, Pages and
	// Webhooks are its parts.
	App      *app.App
	API      *amshttp.Server
	OAuth    *oauth.Server
	Pages    *pages.Server
	Webhooks *webhook.Service
	// OAuthSecret is the OAuth server's signing key (for a second server,
	// as another process).
	OAuthSecret []byte
	// Store is the database itself (not watched): tests set up and check
	// records with it.
	Store *sqlite.DB
	// Data is the store the server runs on, unwatched: Store, or the one
	// given with OnStore (Store is then nil).
	Data      ams.Store
	Clock     *testclock.Clock
	User      *ams.User
	Key       string
	Assistant *ams.Assistant
	// Worker delivers webhooks; it is not running: tests call RunOnce
	// (after moving the clock) or start Run themselves.
	Worker *webhook.Worker
	// Usage meters the API's requests (tests call Flush).
	Usage *usage.Recorder
}

// Option changes how New builds the server.
type Option func(*options)

type options struct {
	wrap     func(*sqlite.DB) ams.Store
	engine   ams.Engine
	on       ams.Store
	throttle oauth.LoginThrottle
	proxies  clientaddr.Proxies
	header   string
	logger   *slog.Logger
	cors     []string
	timeout  time.Duration
}

// WithThrottle makes the sign-in and sign-up throttles store their
// failures in th (such as a postgres.Throttle) instead of in memory.
func WithThrottle(th oauth.LoginThrottle) Option {
	return func(o *options) { o.throttle = th }
}

// WithTrustedProxies makes the server believe Forwarded and
// X-Forwarded-For from these networks, as ams serve --trusted-proxies
// does (the test's requests come from 127.0.0.1).
func WithTrustedProxies(p clientaddr.Proxies) Option {
	return func(o *options) { o.proxies = p }
}

// WithClientAddressHeader makes the trusted proxies' header the one
// named, as ams serve --client-address-header does.
func WithClientAddressHeader(name string) Option {
	return func(o *options) { o.header = name }
}

// WithCORSOrigins lets pages of these origins (amshttp.ParseOrigins'
// form) call the API from a browser, as ams serve --cors-allowed-origins
// does.
func WithCORSOrigins(origins ...string) Option {
	return func(o *options) { o.cors = origins }
}

// WithLogger makes the server log to l instead of discarding its log (to
// check that a request logs no error).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// OnStore builds the fixture on s (e.g. a PostgreSQL store of
// internal/testing/pgtest) instead of a new SQLite database; Fixture.Store is then
// nil and Fixture.Data is s. WithStore does not apply.
func OnStore(s ams.Store) Option {
	return func(o *options) { o.on = s }
}

// WithUsage is kept for the tests that ask for metering: every fixture
// meters the API's requests (Fixture.Usage), as ams serve does.
func WithUsage() Option {
	return func(o *options) {}
}

// WithStore makes the API use the store that wrap returns around the
// fixture's database (to inject failures), instead of the database itself.
func WithStore(wrap func(*sqlite.DB) ams.Store) Option {
	return func(o *options) { o.wrap = wrap }
}

// WithRequestTimeout bounds each API request to d, as ams serve
// --request-timeout does (default: no bound).
func WithRequestTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithEngine makes every assistant answer with e instead of the built-in
// engine (to script replies and tool calls).
func WithEngine(e ams.Engine) Option {
	return func(o *options) { o.engine = e }
}

// New starts a fixture; everything is closed when the test ends.
func New(t testing.TB, opts ...Option) *Fixture {
	t.Helper()
	o := options{wrap: func(db *sqlite.DB) ams.Store { return db }}
	for _, opt := range opts {
		opt(&o)
	}
	var db *sqlite.DB
	var store, data ams.Store = o.on, o.on
	if o.on == nil {
		db = sqlitetest.Open(t)
		store, data = o.wrap(db), db
	}
	clock := testclock.New(Start)
	logger := o.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var engine ams.Engine = o.engine
	if engine == nil {
		b := builtin.New()
		b.Now = clock.Now
		engine = b
	}
	secret := make([]byte, oauth.SecretSize)
	rand.Read(secret)
	// The server's address is known before it starts, so that the app is
	// built with its base URL, as ams serve builds it after listening.
	srv := httptest.NewUnstartedServer(nil)
	a, err := app.New(app.Config{
		Store:               store,
		Clock:               clock.Now,
		Logger:              logger,
		Limiter:             ratelimit.NewMemory(),
		Guard:               &ssrf.Guard{AllowPrivate: true},
		EngineFor:           func(*ams.Assistant) (ams.Engine, error) { return engine, nil },
		BaseURL:             "http://" + srv.Listener.Addr().String(),
		OAuthSecret:         secret,
		Throttle:            o.throttle,
		TrustedProxies:      o.proxies,
		CORSAllowedOrigins:  o.cors,
		RequestTimeout:      o.timeout,
		ClientAddressHeader: o.header,
	})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	// Passwords set through the pages are hashed at bcrypt's lowest cost
	// (HashPassword), the one difference from ams serve's wiring.
	a.Accounts.Hash = HashPassword
	signalsOn(a)
	srv.Config.Handler = a.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	f := &Fixture{T: t, Server: srv, App: a, API: a.API, OAuth: a.OAuth, Pages: a.Pages, Webhooks: a.Webhooks, OAuthSecret: secret,
		Store: db, Data: data, Clock: clock, Usage: a.Usage, Worker: a.Webhook}
	f.User = f.NewUser("ann@example.com", ams.PlanStandard)
	f.Key = f.NewKey(f.User, "read,write,messages,integrations")
	f.Assistant = f.NewAssistant(f.User, "Ann's assistant")
	return f
}

// signalsOn turns on the signals of a's services and workers (package
// testsignal), before anything runs: tests wait on them (a turn ended, a
// reminder pass) instead of sleeping.
func signalsOn(a *app.App) {
	a.Messages.Signals.TurnEnded.Init()
	a.Messages.Signals.FollowerLeft.Init()
	a.Reminders.Signals.Pass.Init()
}

// HashPassword is the fixture's password hash: bcrypt at its lowest
// cost, because at password.Cost one hash takes seconds under the race
// detector. password.Check reads the cost from the hash, so checks work
// the same.
func HashPassword(pw string) (string, error) {
	if err := password.Validate(pw); err != nil {
		return "", err
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	return string(h), err
}

// NewUser creates an account.
func (f *Fixture) NewUser(email string, plan ams.Plan) *ams.User {
	f.T.Helper()
	now := f.Clock.Now()
	// Approved (off the waitlist), as accounts made with the CLI are.
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: email, Plan: plan, Timezone: "UTC", ApprovedAt: &now, CreatedAt: now, UpdatedAt: now}
	if err := f.Data.CreateUser(context.Background(), u); err != nil {
		f.T.Fatal(err)
	}
	return u
}

// NewKey creates an API key of u with the permissions and returns its secret.
func (f *Fixture) NewKey(u *ams.User, perms string) string {
	f.T.Helper()
	ps, err := ams.ParsePermissions(perms)
	if err != nil {
		f.T.Fatal(err)
	}
	secret, k := ams.NewAPIKey(u.ID, "test", ps, f.Clock.Now(), nil)
	if err := f.Data.CreateKey(context.Background(), k); err != nil {
		f.T.Fatal(err)
	}
	return secret
}

// NewAssistant creates a built-in assistant of u.
func (f *Fixture) NewAssistant(u *ams.User, name string) *ams.Assistant {
	f.T.Helper()
	now := f.Clock.Now()
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: u.ID, Name: name,
		Description: "A test assistant.", Model: ams.ModelBuiltin, CreatedAt: now, UpdatedAt: now}
	if err := f.Data.CreateAssistant(context.Background(), a); err != nil {
		f.T.Fatal(err)
	}
	return a
}

// Response is an answer of Do.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as an object.
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// Do sends a request to the fixture's server with the key (key "" sends
// no Authorization header) and a JSON body if body is not "". header holds
// name/value pairs set last; an empty value removes the header.
func (f *Fixture) Do(method, path, key, body string, header ...string) *Response {
	f.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.Server.URL+path, rd)
	if err != nil {
		f.T.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.T.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Peer starts another server on store, as a second process on the
// fixture's database would run (store is then a second handle on it: a
// sqlite.Open of Store.Path(), a pgtest.Open of the same schema). It
// shares the fixture's clock and OAuth signing key, so each server
// accepts the other's tokens; it has no webhook worker. The returned
// fixture has the peer's server and app, and the original's account, key,
// assistant and clock; its Store is nil and its Data is store.
func (f *Fixture) Peer(store ams.Store) *Fixture {
	f.T.Helper()
	srv := httptest.NewUnstartedServer(nil)
	a, err := app.New(app.Config{
		Store:           store,
		Clock:           f.Clock.Now,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		Limiter:         ratelimit.NewMemory(),
		Guard:           &ssrf.Guard{AllowPrivate: true},
		EngineFor:       func(*ams.Assistant) (ams.Engine, error) { return builtin.New(), nil },
		BaseURL:         "http://" + srv.Listener.Addr().String(),
		OAuthSecret:     f.OAuthSecret,
		NoWebhookWorker: true,
	})
	if err != nil {
		srv.Close()
		f.T.Fatal(err)
	}
	a.Accounts.Hash = HashPassword
	signalsOn(a)
	srv.Config.Handler = a.Handler()
	srv.Start()
	f.T.Cleanup(srv.Close)
	p := *f
	p.Server, p.App, p.API, p.OAuth, p.Pages, p.Webhooks = srv, a, a.API, a.OAuth, a.Pages, a.Webhooks
	p.Store, p.Data, p.Worker, p.Usage = nil, store, nil, a.Usage
	return &p
}
