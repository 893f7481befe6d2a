// Package amstest starts a complete ams API server in-process for tests:
// a real SQLite store in a temporary directory, the built-in engine, the
// in-process rate limiter, the assistant's world (tasks, calendar events,
// actions, with the tools given to engines) and a clock the test moves by
// hand.
package amstest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/builtin"
	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/messaging"
	"github.com/amsdev/ams/metrics"
	"github.com/amsdev/ams/openapi"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/sqlite"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/usage"
	"github.com/amsdev/ams/webhook"
	"github.com/amsdev/ams/world"
)

// Clock is a clock that tests move by hand. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Add moves the clock forward by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Start is the time every fixture's clock starts at: 10:00:00 UTC.
var Start = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// Fixture is a running server with one account ("ann@example.com",
// standard plan), an API key of it with read, write, messages and
// integrations, and an assistant.
type Fixture struct {
	T         testing.TB
	Server    *httptest.Server
	API       *amshttp.Server
	Store     *sqlite.DB
	Clock     *Clock
	User      *ams.User
	Key       string
	Assistant *ams.Assistant
	// Worker delivers webhooks; it is not running: tests call RunOnce
	// (after moving the clock) or start Run themselves.
	Worker *webhook.Worker
	// Usage meters requests when the fixture was made WithUsage (tests
	// call Flush); else nil.
	Usage *usage.Recorder
}

// Option changes how New builds the server.
type Option func(*options)

type options struct {
	wrap   func(*sqlite.DB) ams.Store
	engine ams.Engine
	usage  bool
}

// WithUsage meters the API's requests with a usage.Recorder on the
// fixture's store (Fixture.Usage), on the fixture's clock.
func WithUsage() Option {
	return func(o *options) { o.usage = true }
}

// WithStore makes the API use the store that wrap returns around the
// fixture's database (to inject failures), instead of the database itself.
func WithStore(wrap func(*sqlite.DB) ams.Store) Option {
	return func(o *options) { o.wrap = wrap }
}

// WithEngine makes every assistant answer with e instead of the built-in
// engine (to script replies and tool calls).
func WithEngine(e ams.Engine) Option {
	return func(o *options) { o.engine = e }
}

// New starts a fixture; everything is closed when the test ends.
func New(t testing.TB, opts ...Option) *Fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ams.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	o := options{wrap: func(db *sqlite.DB) ams.Store { return db }}
	for _, opt := range opts {
		opt(&o)
	}
	store := o.wrap(db)
	clock := &Clock{t: Start}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var engine ams.Engine = o.engine
	if engine == nil {
		b := builtin.New()
		b.Now = clock.Now
		engine = b
	}
	w := &world.Service{Store: store, Clock: clock.Now}
	api := &amshttp.Server{
		Store:   store,
		Limiter: ratelimit.NewMemory(),
		Clock:   clock.Now,
		Messages: &messaging.Service{Store: store, Clock: clock.Now,
			EngineFor: func(*ams.Assistant) (ams.Engine, error) { return engine, nil },
			Tools:     w.Toolbox},
		World:   w,
		OpenAPI: openapi.Document,
		Logger:  logger,
		Guard:   &ssrf.Guard{AllowPrivate: true},
		Metrics: metrics.New(),
		Ready:   db.Ping,
	}
	api.Metrics.WatchQueue(func(ctx context.Context) (int64, time.Duration, error) { return db.QueueStats(ctx, clock.Now()) })
	var rec *usage.Recorder
	if o.usage {
		rec = usage.NewRecorder(store)
		rec.Clock = clock.Now
		api.Usage = rec
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	f := &Fixture{T: t, Server: srv, API: api, Store: db, Clock: clock, Usage: rec}
	f.Worker = &webhook.Worker{Queue: db, Users: db, Client: webhook.NewClient(api.Guard), Clock: clock.Now,
		Logger: logger, BaseURL: srv.URL, OnAttempt: api.Metrics.Delivery}
	f.User = f.NewUser("ann@example.com", ams.PlanStandard)
	f.Key = f.NewKey(f.User, "read,write,messages,integrations")
	f.Assistant = f.NewAssistant(f.User, "Ann's assistant")
	return f
}

// NewUser creates an account.
func (f *Fixture) NewUser(email string, plan ams.Plan) *ams.User {
	f.T.Helper()
	now := f.Clock.Now()
	// Approved (off the waitlist), as accounts made with the CLI are.
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: email, Plan: plan, Timezone: "UTC", ApprovedAt: &now, CreatedAt: now, UpdatedAt: now}
	if err := f.Store.CreateUser(context.Background(), u); err != nil {
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
	if err := f.Store.CreateKey(context.Background(), k); err != nil {
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
	if err := f.Store.CreateAssistant(context.Background(), a); err != nil {
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
