package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/amsdev/ams/postgres"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amsdev/ams"
)

// result is one run's figures, printed as the ROW line.
type result struct {
	seedRows                            int
	seedSecs, bytesPerEvent             float64
	events                              int64
	postRate                            float64
	postP50, postP99                    time.Duration
	claimP50, claimP99                  time.Duration
	drainRate                           float64
	missing, dups                       int
	catchP50, catchP99, histP50, hist99 time.Duration
	deepP50, deepP99                    time.Duration
	purge                               time.Duration
	purged                              int64
	rssMiB                              float64
}

func run(ctx context.Context, cfg *config) (err error) {
	if cfg.ams == "" {
		return errors.New("-ams is required")
	}
	work := cfg.dir
	if work == "" {
		if work, err = os.MkdirTemp("", "ams-growth-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AMS_") {
			env = append(env, kv)
		}
	}
	data := filepath.Join(work, "data")
	env = append(env, "AMS_DATA_DIR="+data, "AMS_MAX_CONCURRENT_TURNS_PER_ACCOUNT=1000000")
	var key []byte
	pgURL := ""
	if cfg.engine == "pg" {
		if cfg.db == "" {
			return errors.New("-db is required for PostgreSQL")
		}
		var drop func()
		if pgURL, _, drop, err = pgSchema(ctx, cfg.db); err != nil {
			return err
		}
		defer drop()
		key = newKey()
		env = append(env, "AMS_DATABASE_URL="+pgURL, "AMS_SECRET_KEY="+b64(key))
	} else if cfg.engine != "sqlite" {
		return fmt.Errorf("-engine %q: want sqlite or pg", cfg.engine)
	}
	label := fmt.Sprintf("%s, %d rows", cfg.engine, cfg.rows)
	fmt.Printf("\n### %s\n\nams: %s; %d accounts with a webhook each, %d jobs pending for a dead receiver\n\n", label, orDefault(cfg.label, cfg.ams), cfg.accounts, cfg.dead)

	// The bench account, through the CLI (it makes the store).
	progress("%s: bench account", label)
	for _, args := range [][]string{
		{"users", "create", "--email", "bench@example.com", "--plan", "enterprise"},
		{"users", "update", "--email", "bench@example.com", "--rpm", "1000000000", "--rpd", "1000000000"},
	} {
		if _, err := cli(ctx, cfg.ams, env, args...); err != nil {
			return err
		}
	}
	apiKey, err := cli(ctx, cfg.ams, env, "keys", "create", "--email", "bench@example.com", "--name", "bench", "--permissions", "read,write,messages")
	if err != nil {
		return err
	}
	asst, err := cli(ctx, cfg.ams, env, "assistants", "create", "--email", "bench@example.com", "--name", "Bench")
	if err != nil {
		return err
	}
	s, err := open(ctx, cfg.engine, filepath.Join(data, "ams.db"), pgURL, key)
	if err != nil {
		return err
	}
	u, err := s.db.FindUserByEmail(ctx, "bench@example.com")
	if err == nil && s.pg != nil {
		// A store that has lived 31 days has a partition for each day
		// of its history (the janitor makes them ahead, hourly).
		err = s.pg.EnsurePartitions(ctx, time.Now().Add(-32*24*time.Hour), time.Now().Add(postgres.PartitionDaysAhead*24*time.Hour))
	}
	s.db.Close()
	if err != nil {
		return err
	}

	var r result
	progress("%s: seeding", label)
	var took time.Duration
	if r.seedRows, took, err = seedStore(ctx, s, cfg, u.ID, asst); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	r.seedSecs = took.Seconds()
	b, events, err := s.size(ctx)
	if err != nil {
		return err
	}
	r.events, r.bytesPerEvent = events, float64(b)/float64(max(events, 1))
	progress("%s: seeded %d rows in %.1f s (%.0f rows/s), %d events, %.0f bytes/event", label, r.seedRows, r.seedSecs,
		float64(r.seedRows)/r.seedSecs, events, r.bytesPerEvent)

	// The purge of the day past retention.
	// ams serve purges as it starts: before it, with the store's Purge.
	if s, err = open(ctx, cfg.engine, filepath.Join(data, "ams.db"), pgURL, key); err != nil {
		return err
	}
	s.trace.start()
	t0 := time.Now()
	r.purged, err = s.db.Purge(ctx, time.Now())
	r.purge = time.Since(t0)
	stmts := s.trace.stop()
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	progress("%s: purge deleted %d rows in %s", label, r.purged, r.purge.Round(time.Millisecond))
	purgePlans(ctx, s, stmts)
	s.db.Close()

	// Serve without delivery: the smoke check and the API's figures.
	srv, err := startServe(ctx, cfg.ams, env, filepath.Join(work, "serve1.log"), "--webhook-concurrency", "0")
	if err != nil {
		return err
	}
	a := &api{base: srv.base, key: apiKey}
	convs, midEvent, err := smoke(ctx, a)
	if err == nil {
		progress("%s: smoke check passed (%d conversations of the bench account listed)", label, len(convs))
		r.histP50, r.hist99, err = history(ctx, a, convs, 300)
	}
	if err == nil {
		r.catchP50, r.catchP99, err = catchUp(ctx, a, 200)
	}
	if err == nil {
		r.deepP50, r.deepP99, err = deepPage(ctx, a, midEvent, 100)
	}
	if err == nil {
		progress("%s: POST /v1/messages, %d connections, %s", label, cfg.postConns, cfg.postFor)
		r.postRate, r.postP50, r.postP99, err = posts(ctx, a, asst, cfg.postConns, cfg.postFor)
	}
	rss1 := srv.hwmMiB()
	srv.stop()
	if err != nil {
		return err
	}

	// The claim, timed in this process, and the plans.
	if s, err = open(ctx, cfg.engine, filepath.Join(data, "ams.db"), pgURL, key); err != nil {
		return err
	}
	defer func() {
		if s != nil {
			s.db.Close()
		}
	}()
	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	defer rcv.close()
	hooks, err := drainAccounts(ctx, s, rcv.url)
	if err != nil {
		return err
	}
	progress("%s: %d claims", label, cfg.claims)
	if r.claimP50, r.claimP99, err = claims(ctx, s, hooks, cfg.claims); err != nil {
		return err
	}
	if err := plans(ctx, s, hooks, u.ID, midEvent, convs); err != nil {
		return err
	}
	// The drain's backlog, as the API would queue it.
	// Each event of an account queues a job for each of its 2 webhooks.
	per := max(1, cfg.backlog/len(hooks))
	if err := emit(ctx, s, hooks, per, time.Now()); err != nil {
		return err
	}
	want := per * len(hooks)
	s.db.Close()
	s = nil

	// The plans' emit left 8 events per account queued, too.
	want += 8 * len(hooks)
	progress("%s: drain of %d deliveries", label, want)
	srv, err = startServe(ctx, cfg.ams, env, filepath.Join(work, "serve2.log"))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Minute)
	for rcv.distinct() < want && time.Now().Before(deadline) && ctx.Err() == nil && srv.alive() {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // duplicates would come now
	rss2 := srv.hwmMiB()
	srv.stop()
	first, last, distinct, dups := rcv.stats()
	r.missing, r.dups = want-distinct, dups
	if distinct > 1 {
		r.drainRate = float64(distinct-1) / last.Sub(first).Seconds()
	}
	r.rssMiB = max(rss1, rss2)
	progress("%s: drained %d of %d (%d duplicates) at %.0f/s", label, distinct, want, dups, r.drainRate)

	fmt.Printf("\nROW|%s|%d|%d|%d|%.1f|%.0f|%.0f|%s|%s|%s|%s|%.0f|%d|%d|%s|%s|%s|%s|%s|%d|%.0f|%s|%s\n", cfg.engine, cfg.rows, cfg.accounts, r.events,
		r.seedSecs, r.bytesPerEvent, r.postRate, msStr(r.postP50), msStr(r.postP99), msStr(r.claimP50), msStr(r.claimP99), r.drainRate,
		r.missing, r.dups, msStr(r.catchP50), msStr(r.catchP99), msStr(r.histP50), msStr(r.hist99), msStr(r.purge), r.purged, r.rssMiB,
		msStr(r.deepP50), msStr(r.deepP99))
	if r.missing != 0 || r.dups != 0 {
		return fmt.Errorf("drain: %d missing, %d duplicated deliveries", r.missing, r.dups)
	}
	return nil
}

func msStr(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func cli(ctx context.Context, bin string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("ams %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// serve is a running `ams serve`.
type serve struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
}

func startServe(ctx context.Context, bin string, env []string, logPath string, extra ...string) (*serve, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--dev", "--addr", addr, "--log-level", "warn", "--shutdown-timeout", "5s"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &serve{cmd: cmd, base: "http://" + addr, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(s.done) }()
	for deadline := time.Now().Add(60 * time.Second); ; {
		if resp, err := http.Get(s.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("ams serve exited at start (log %s)", logPath)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("ams serve not ready in 60 s")
		}
	}
}

func (s *serve) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func (s *serve) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// hwmMiB is the process's peak resident set so far.
func (s *serve) hwmMiB() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

type api struct{ base, key string }

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func (a *api) do(ctx context.Context, method, path, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

type listOf struct {
	Data []struct {
		ID             string `json:"id"`
		ConversationID string `json:"conversation_id"`
		MessageCount   int    `json:"message_count"`
	} `json:"data"`
	HasMore bool `json:"has_more"`
}

// smoke reads the seeded store through the API: the bench account's
// conversations and their messages, and its events; it returns the
// conversations and an event in the middle of its history.
func smoke(ctx context.Context, a *api) ([]string, string, error) {
	var cs listOf
	if err := a.do(ctx, "GET", "/v1/conversations?limit=100", "", &cs); err != nil {
		return nil, "", err
	}
	if len(cs.Data) == 0 {
		return nil, "", errors.New("smoke: the bench account lists no conversation")
	}
	var convs []string
	for _, c := range cs.Data {
		convs = append(convs, c.ID)
	}
	var ms listOf
	if err := a.do(ctx, "GET", "/v1/conversations/"+convs[0]+"/messages?limit=100", "", &ms); err != nil {
		return nil, "", err
	}
	if len(ms.Data) == 0 || len(ms.Data) != cs.Data[0].MessageCount || ms.Data[0].ConversationID != convs[0] {
		return nil, "", fmt.Errorf("smoke: conversation %s lists %d messages, its message_count is %d", convs[0], len(ms.Data), cs.Data[0].MessageCount)
	}
	var ev listOf
	if err := a.do(ctx, "GET", "/v1/events?order=asc&limit=100", "", &ev); err != nil {
		return nil, "", err
	}
	if len(ev.Data) == 0 {
		return nil, "", errors.New("smoke: the bench account lists no event")
	}
	// The middle: the first event of the second half of the newest 100.
	var newest listOf
	if err := a.do(ctx, "GET", "/v1/events?limit=100", "", &newest); err != nil {
		return nil, "", err
	}
	return convs, newest.Data[len(newest.Data)/2].ID, nil
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(p*float64(len(d))))]
}

// history reads n pages of 20 messages of the conversations, in turn.
func history(ctx context.Context, a *api, convs []string, n int) (p50, p99 time.Duration, err error) {
	var lat []time.Duration
	for i := range n {
		t0 := time.Now()
		var out listOf
		if err := a.do(ctx, "GET", "/v1/conversations/"+convs[i%len(convs)]+"/messages", "", &out); err != nil {
			return 0, 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	return pct(lat, 0.5), pct(lat, 0.99), nil
}

// catchUp pages through the bench account's events from the oldest, 100
// a page, n pages at most.
func catchUp(ctx context.Context, a *api, n int) (p50, p99 time.Duration, err error) {
	var lat []time.Duration
	after := ""
	for range n {
		t0 := time.Now()
		var out listOf
		q := "/v1/events?order=asc&limit=100"
		if after != "" {
			q += "&after=" + after
		}
		if err := a.do(ctx, "GET", q, "", &out); err != nil {
			return 0, 0, err
		}
		lat = append(lat, time.Since(t0))
		if !out.HasMore || len(out.Data) == 0 {
			after = ""
			continue
		}
		after = out.Data[len(out.Data)-1].ID
	}
	return pct(lat, 0.5), pct(lat, 0.99), nil
}

// deepPage reads n times the page of 100 events after event, one near
// the newest end of the bench account's history: the cost of a catch-up
// page late in a long history.
func deepPage(ctx context.Context, a *api, event string, n int) (p50, p99 time.Duration, err error) {
	var lat []time.Duration
	for range n {
		t0 := time.Now()
		var out listOf
		if err := a.do(ctx, "GET", "/v1/events?order=asc&limit=100&after="+event, "", &out); err != nil {
			return 0, 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	return pct(lat, 0.5), pct(lat, 0.99), nil
}

// posts sends POST /v1/messages from conns connections for d.
func posts(ctx context.Context, a *api, asst string, conns int, d time.Duration) (rate float64, p50, p99 time.Duration, err error) {
	body := `{"assistant_id":"` + asst + `","message":"Hello! What can you do?"}`
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var failed atomic.Int64
	t0 := time.Now()
	deadline := t0.Add(d)
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) && ctx.Err() == nil {
				s := time.Now()
				if err := a.do(ctx, "POST", "/v1/messages", body, nil); err != nil {
					if failed.Add(1) == 1 {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
					continue
				}
				mine = append(mine, time.Since(s))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return 0, 0, 0, fmt.Errorf("%d POST /v1/messages failed, the first: %v", n, firstErr)
	}
	return float64(len(lat)) / time.Since(t0).Seconds(), pct(lat, 0.5), pct(lat, 0.99), nil
}

// receiver answers every delivery at once and counts them.
type receiver struct {
	srv         *http.Server
	url         string
	mu          sync.Mutex
	seen        map[string]int
	first, last time.Time
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String(), seen: map[string]int{}}
	r.srv = &http.Server{Handler: r}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var env struct {
		ID string `json:"id"`
	}
	json.Unmarshal(body, &env)
	now := time.Now()
	r.mu.Lock()
	if len(r.seen) == 0 {
		r.first = now
	}
	r.seen[req.URL.Path+" "+env.ID]++
	r.last = now
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func (r *receiver) stats() (first, last time.Time, distinct, dups int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.seen {
		dups += n - 1
	}
	return r.first, r.last, len(r.seen), dups
}

func (r *receiver) close() { r.srv.Close() }

// hook is one of the drain's webhooks.
type hook struct{ user, id string }

// drainAccounts makes, through the store, the drain's 4 accounts with 2
// webhooks each to the receiver: 64 deliveries in flight at most (8 a
// webhook), as many as ams serve's default concurrency.
func drainAccounts(ctx context.Context, s *store, base string) ([]hook, error) {
	now := time.Now()
	var hooks []hook
	for i := range 4 {
		u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: fmt.Sprintf("drain%d@example.com", i), Plan: ams.PlanEnterprise, Timezone: "UTC",
			CreatedAt: now, UpdatedAt: now, ApprovedAt: &now}
		if err := s.db.CreateUser(ctx, u); err != nil {
			return nil, err
		}
		for j := range 2 {
			w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: fmt.Sprintf("%s/r/%d/%d", base, i, j),
				Events: []string{ams.EventMessageCreated}, Active: true, Status: ams.WebhookActive, Secret: ams.NewSecret("whsec_"),
				CreatedAt: now, UpdatedAt: now}
			if err := s.db.CreateWebhook(ctx, w); err != nil {
				return nil, err
			}
			hooks = append(hooks, hook{user: u.ID, id: w.ID})
		}
	}
	return hooks, nil
}

// emit writes per message.created events for each drain account (every
// other hook is an account's first), created at (their jobs due then).
func emit(ctx context.Context, s *store, hooks []hook, per int, at time.Time) error {
	for i := 0; i < len(hooks); i += 2 {
		for done := 0; done < per; {
			n := min(100, per-done)
			evs := make([]*ams.Event, n)
			for k := range evs {
				evs[k] = &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: hooks[i].user, Type: ams.EventMessageCreated,
					Data: map[string]any{"message_id": ams.NewID(ams.PrefixMessage), "content": "drain"}, CreatedAt: at}
			}
			if err := s.db.Emit(ctx, evs...); err != nil {
				return err
			}
			done += n
		}
	}
	return nil
}

// claim is the worker's claim of up to 64 jobs with ams serve's defaults.
var claim = ams.Claim{Lease: 15 * time.Second, Limit: 64, PerWebhook: 8, PerAccount: 32}

// claims times n claims of 64 due jobs (8 events for each drain
// account, 2 jobs each), recording their attempts after each, as the
// worker does.
func claims(ctx context.Context, s *store, hooks []hook, n int) (p50, p99 time.Duration, err error) {
	var lat []time.Duration
	code := 200
	for range n {
		if err := emit(ctx, s, hooks, 8, time.Now().Add(-time.Hour)); err != nil {
			return 0, 0, err
		}
		now := time.Now()
		t0 := time.Now()
		jobs, err := s.db.ClaimJobs(ctx, now, claim)
		lat = append(lat, time.Since(t0))
		if err != nil {
			return 0, 0, err
		}
		if len(jobs) != 64 {
			return 0, 0, fmt.Errorf("claimed %d jobs, want 64", len(jobs))
		}
		rs := make([]*ams.AttemptResult, len(jobs))
		for i, j := range jobs {
			rs[i] = &ams.AttemptResult{Job: j, Outcome: ams.JobSucceeded, Delivery: &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery),
				UserID: j.UserID, WebhookID: j.WebhookID, EventID: j.Event.ID, EventType: j.Event.Type, Attempt: 1, URL: j.URL,
				Success: true, StatusCode: &code, DurationMS: 2, ResponseBody: "ok", CreatedAt: now}}
		}
		errs, err := s.db.RecordAttempts(ctx, rs, time.Now())
		if err != nil {
			return 0, 0, err
		}
		for _, e := range errs {
			if e != nil {
				return 0, 0, e
			}
		}
	}
	return pct(lat, 0.5), pct(lat, 0.99), nil
}

// tracer keeps the statements PostgreSQL runs between start and stop.
type tracer struct {
	mu    sync.Mutex
	on    bool
	stmts []traced
}

type traced struct {
	sql  string
	args []any
}

func (t *tracer) start() { t.mu.Lock(); t.on, t.stmts = true, nil; t.mu.Unlock() }

func (t *tracer) stop() []traced {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on = false
	return t.stmts
}

func (t *tracer) add(sql string, args []any) {
	t.mu.Lock()
	if t.on {
		t.stmts = append(t.stmts, traced{sql, args})
	}
	t.mu.Unlock()
}

func (t *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	t.add(d.SQL, d.Args)
	return ctx
}
func (t *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (t *tracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (t *tracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	t.add(d.SQL, d.Args)
}
func (t *tracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
