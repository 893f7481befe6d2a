// Command multi is the multi-process benchmark of issue 5
// (docs/benchmarks.md, "Issue 5: several processes on PostgreSQL"). It is
// given an ams binary (scripts/bench-multi.sh builds one) and, for each
// configuration (SQLite with one process; PostgreSQL with N processes on
// one fresh schema; the load coming from one account or from K), starts
// the `ams serve` processes on 127.0.0.1 and measures:
//
//  1. POST /v1/messages per second, p50 and p99: -conns clients, client k
//     sending to process k mod N (each keeps its connection, as behind a
//     load balancer) as account k mod K; no webhooks;
//  2. mixed: -webhooks webhooks per account to an in-process receiver
//     answering 200 at once, -senders clients sending messages for
//     -send-duration, then the drain: deliveries per second first to last,
//     and messages delivered end to end per second (each message to every
//     webhook, from the first send to the last delivery: the POSTs and
//     the deliveries share the machine, and the messages/s sent alone
//     rises when deliveries fall behind);
//  3. backlog: new webhooks; the receiver holds every delivery while the
//     senders send for -backlog-duration, so a backlog builds up behind the
//     per-webhook slots, then answers them all: deliveries per second from
//     the release to the last arrival, with no other load (the delivery
//     capacity of the processes).
//
// Every (event, webhook) pair of phases 2 and 3 must arrive, once (there
// is no kill here).
//
// Where the time goes: the CPU used by the ams processes, the PostgreSQL
// server processes, this program and everything else on the machine
// (/proc); what the PostgreSQL backends of the ams processes are doing
// (pg_stat_activity sampled every 50 ms, by wait event and by statement,
// since pg_stat_statements is usually not loaded); and a CPU profile of the
// first ams process when -ams-pprof names a binary that serves
// net/http/pprof at $AMS_BENCH_PPROF (the script builds one with a go build
// overlay; the working tree is not changed).
//
// It prints a markdown report on stdout and progress on stderr. All traffic
// stays on 127.0.0.1; every phase is bounded in time.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

type config struct {
	ams, amsPprof string
	db            string
	dbParams      string
	configs       string
	conns         int
	warmup        time.Duration
	postDur       time.Duration
	senders       int
	webhooks      int
	sendDur       time.Duration
	backlogDur    time.Duration
	drainTimeout  time.Duration
	profileDrain  time.Duration
	work          string
	keep          bool
	label         string
	serveArgs     string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.ams, "ams", "", "path of the ams binary (required)")
	flag.StringVar(&cfg.amsPprof, "ams-pprof", "", "the same ams built with net/http/pprof served at $AMS_BENCH_PPROF; used for the first process of each configuration, which is profiled")
	flag.StringVar(&cfg.db, "db", "", "PostgreSQL URL (a fresh schema is made per configuration and dropped after); needed for pg configurations")
	flag.StringVar(&cfg.dbParams, "db-params", "", "extra URL parameters for the ams processes' database URL, e.g. pool_max_conns=16")
	flag.StringVar(&cfg.configs, "configs", "sqlite:1,pg:1,pg:2,pg:3,pg:1:16,pg:2:16,pg:3:16", "configurations to run, comma-separated: sqlite:1 or pg:N, optionally :K accounts (default 1) sharing the load")
	flag.IntVar(&cfg.conns, "conns", 64, "phase 1: concurrent clients (connections) sending POST /v1/messages")
	flag.DurationVar(&cfg.warmup, "warmup", 3*time.Second, "phase 1: warm-up before the measurement")
	flag.DurationVar(&cfg.postDur, "post-duration", 15*time.Second, "phase 1: measurement")
	flag.IntVar(&cfg.senders, "senders", 8, "phase 2: concurrent clients sending messages")
	flag.IntVar(&cfg.webhooks, "webhooks", 4, "phase 2: webhooks subscribed to message.created")
	flag.DurationVar(&cfg.sendDur, "send-duration", 10*time.Second, "phase 2: how long messages are sent")
	flag.DurationVar(&cfg.backlogDur, "backlog-duration", 3*time.Second, "phase 3: how long messages are sent while the receiver holds deliveries (at most 3.5 s: held deliveries must be answered within the 5 s timeout)")
	flag.DurationVar(&cfg.drainTimeout, "drain-timeout", 120*time.Second, "phase 2: how long to wait for every delivery after sending stops")
	flag.DurationVar(&cfg.profileDrain, "profile-drain", 5*time.Second, "phase 2: length of the CPU profile taken when the drain starts")
	flag.StringVar(&cfg.work, "work", "", "directory for data dirs, logs and profiles (default: a new temp dir, removed at the end unless -keep)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory (logs, profiles)")
	flag.StringVar(&cfg.label, "label", "", "what the ams binary is (e.g. its commit), printed in the report")
	flag.StringVar(&cfg.serveArgs, "serve-args", "", "extra arguments for ams serve, space-separated")
	analyze := flag.String("analyze-profile", "", "only print the split of a CPU profile kept by an earlier run (-keep), with the binary given by -ams, and exit")
	flag.Parse()
	if cfg.backlogDur > 3500*time.Millisecond {
		fmt.Fprintln(os.Stderr, "-backlog-duration: at most 3.5s")
		os.Exit(2)
	}
	if *analyze != "" {
		fmt.Print(profileParts(cfg.ams, *analyze))
		return
	}
	if cfg.ams == "" {
		fmt.Fprintln(os.Stderr, "usage: multi -ams PATH [-db postgres://...] [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &cfg); err != nil {
		log.Printf("FAIL: %v", err)
		os.Exit(1)
	}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// ---------------------------------------------------------------- receiver

type arrival struct {
	at   time.Time
	path string
	id   string
}

// receiver answers every delivery 200 at once and records it, except that
// deliveries to paths under a held prefix wait (at most maxHold) until the
// prefix is released: that lets a backlog build up behind the per-webhook
// slots without any attempt failing.
type receiver struct {
	srv *http.Server
	url string
	bad atomic.Int64

	mu     sync.Mutex
	log    []arrival
	counts map[string]int // directory of the path -> arrivals
	held   string
	gate   chan struct{}
}

const maxHold = 4 * time.Second // < the 5 s delivery timeout

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String(), counts: map[string]int{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var env struct{ ID string }
	if err != nil || json.Unmarshal(body, &env) != nil || env.ID == "" {
		r.bad.Add(1)
	} else {
		r.mu.Lock()
		r.log = append(r.log, arrival{at: at, path: req.URL.Path, id: env.ID})
		r.counts[path.Dir(req.URL.Path)+"/"]++
		var gate chan struct{}
		if r.held != "" && strings.HasPrefix(req.URL.Path, r.held) {
			gate = r.gate
		}
		r.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-time.After(maxHold - time.Since(at)):
			}
		}
	}
	w.WriteHeader(http.StatusOK)
}

// hold makes deliveries under prefix wait until release is called.
func (r *receiver) hold(prefix string) (release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held, r.gate = prefix, make(chan struct{})
	g := r.gate
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		close(g)
		r.held = ""
	}
}

// arrivals returns the arrivals at paths with prefix.
func (r *receiver) arrivals(prefix string) []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []arrival
	for _, a := range r.log {
		if strings.HasPrefix(a.path, prefix) {
			out = append(out, a)
		}
	}
	return out
}

// count returns how many deliveries arrived under prefix (which ends in /).
func (r *receiver) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for d, c := range r.counts {
		if strings.HasPrefix(d, prefix) {
			n += c
		}
	}
	return n
}

// ---------------------------------------------------------------- processes

type proc struct {
	i       int
	cmd     *exec.Cmd
	pid     int
	base    string
	pprof   string // host:port of net/http/pprof, if this is the profiled binary
	logPath string
	done    chan struct{}
	err     error
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// baseEnv is the environment without AMS_* settings of the caller's shell.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AMS_") {
			env = append(env, kv)
		}
	}
	// The load sends more turns at once than an account may hold by
	// default (--max-concurrent-turns-per-account): as an environment
	// variable, which builds older than the flag ignore.
	return append(env, "AMS_MAX_CONCURRENT_TURNS_PER_ACCOUNT=1000000")
}

func startProc(ctx context.Context, bin string, env []string, i int, logPath, pprofAddr string, extra []string) (*proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--dev", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--log-level", "warn",
		"--webhook-retry-schedule", "0s,1m,5m,30m,2h", "--shutdown-timeout", "5s"}
	args = append(args, extra...)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	if pprofAddr != "" {
		cmd.Env = append(slices.Clone(env), "AMS_BENCH_PPROF="+pprofAddr)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &proc{i: i, cmd: cmd, pid: cmd.Process.Pid, base: fmt.Sprintf("http://127.0.0.1:%d", port), pprof: pprofAddr,
		logPath: logPath, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); logf.Close(); close(p.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("ams serve %d exited at start: %v (log: %s)", i, p.err, logPath)
		case <-ctx.Done():
			p.kill()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("ams serve %d did not answer within 30 s (log: %s)", i, logPath)
		}
	}
}

func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) stop() error {
	select {
	case <-p.done:
		return fmt.Errorf("ams serve %d had exited: %v", p.i, p.err)
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(20 * time.Second):
		p.kill()
		return fmt.Errorf("ams serve %d did not stop within 20 s of SIGTERM; killed", p.i)
	}
}

func cli(ctx context.Context, bin string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
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

// ---------------------------------------------------------------- CPU

// cpuSeconds returns the user+system CPU time of pid (0 if it is gone).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100 // USER_HZ is 100 on Linux
}

func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// machineCPU returns the busy CPU time of the whole machine.
func machineCPU() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest times are already in user
			break
		}
		x, _ := strconv.ParseFloat(v, 64)
		busy += x
	}
	return busy / 100
}

// postgresPIDs returns the pids of the PostgreSQL server processes on the
// machine (comm "postgres"): the backends serving ams and the server's own.
func postgresPIDs() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(b)) == "postgres" {
			out = append(out, pid)
		}
	}
	return out
}

// cpuMeter measures the CPU used over a span by the ams processes, the
// PostgreSQL processes, this program, and the rest of the machine.
type cpuMeter struct {
	t0   time.Time
	ams  map[int]float64
	pg   map[int]float64
	own0 float64
	all0 float64
}

type cpuSplit struct {
	ams, pg, own, other, idle float64 // cores on average
	perAMS                    []float64
}

func meter(amsPIDs []int) *cpuMeter {
	m := &cpuMeter{t0: time.Now(), ams: map[int]float64{}, pg: map[int]float64{}, own0: selfCPU(), all0: machineCPU()}
	for _, p := range amsPIDs {
		m.ams[p] = cpuSeconds(p)
	}
	for _, p := range postgresPIDs() {
		m.pg[p] = cpuSeconds(p)
	}
	return m
}

func (m *cpuMeter) read(amsPIDs []int) cpuSplit {
	el := time.Since(m.t0).Seconds()
	var s cpuSplit
	for _, p := range amsPIDs {
		c := (cpuSeconds(p) - m.ams[p]) / el
		s.perAMS = append(s.perAMS, c)
		s.ams += c
	}
	for _, p := range postgresPIDs() {
		s.pg += (cpuSeconds(p) - m.pg[p]) / el // a backend started meanwhile counts from 0
	}
	s.own = (selfCPU() - m.own0) / el
	all := (machineCPU() - m.all0) / el
	s.other = max(0, all-s.ams-s.pg-s.own)
	s.idle = max(0, float64(numCPU())-all)
	return s
}

func (s cpuSplit) String() string {
	var per []string
	for _, c := range s.perAMS {
		per = append(per, fmt.Sprintf("%.2f", c))
	}
	return fmt.Sprintf("%.2f (%s) | %.2f | %.2f | %.2f | %.2f", s.ams, strings.Join(per, " + "), s.pg, s.own, s.other, s.idle)
}

const cpuHeader = "| phase | ams processes | postgres processes | this program (load, receiver) | other processes | idle |\n|---|---|---|---|---|---|"

// ---------------------------------------------------------------- pg_stat_activity

// pgSampler samples what the ams processes' backends do every 50 ms.
type pgSampler struct {
	mu      sync.Mutex
	counts  map[string]int
	samples int
	backs   int // backends seen (sum over samples), active or not
	active  int // non-idle backends (sum over samples)
}

func samplePG(ctx context.Context, dbURL, appPrefix string) (*pgSampler, func(), error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, nil, err
	}
	s := &pgSampler{counts: map[string]int{}}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer conn.Close(context.Background())
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			rows, err := conn.Query(sctx, `SELECT state, coalesce(wait_event_type, ''), coalesce(wait_event, ''),
				  left(regexp_replace(query, '\s+', ' ', 'g'), 48)
				FROM pg_stat_activity WHERE application_name LIKE $1`, appPrefix+"%")
			if err == nil {
				local := map[string]int{}
				backs, active := 0, 0
				for rows.Next() {
					var st, wt, we, q string
					if rows.Scan(&st, &wt, &we, &q) != nil {
						continue
					}
					backs++
					if st == "idle" {
						continue
					}
					active++
					w := "running (CPU)"
					if wt != "" {
						w = wt + "/" + we
					}
					local[st+": "+w]++
					local["\x00"+st+": "+w+" `"+strings.TrimSpace(q)+"`"]++ // by statement, reported apart
				}
				rows.Close()
				if rows.Err() == nil {
					s.mu.Lock()
					s.samples++
					s.backs += backs
					s.active += active
					for k, v := range local {
						s.counts[k] += v
					}
					s.mu.Unlock()
				}
			}
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s, func() { cancel(); <-done }, nil
}

// reset starts a new span.
func (s *pgSampler) reset() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.counts, s.samples, s.backs, s.active = map[string]int{}, 0, 0, 0
	s.mu.Unlock()
}

// summary describes the span since the last reset.
func (s *pgSampler) summary() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples == 0 {
		return "no samples"
	}
	type kv struct {
		k string
		v int
	}
	var waits, stmts []kv
	for k, v := range s.counts {
		if q, ok := strings.CutPrefix(k, "\x00"); ok {
			stmts = append(stmts, kv{q, v})
		} else {
			waits = append(waits, kv{k, v})
		}
	}
	top := func(all []kv, n int) string {
		sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
		var out []string
		for i, e := range all {
			if i == n {
				break
			}
			out = append(out, fmt.Sprintf("%s %.2f", e.k, float64(e.v)/float64(s.samples)))
		}
		return strings.Join(out, "; ")
	}
	return fmt.Sprintf("%d samples; backends of ams %.1f on average, of which not idle %.2f: %s.  \n  By statement (its first 48 characters): %s", s.samples,
		float64(s.backs)/float64(s.samples), float64(s.active)/float64(s.samples), top(waits, 8), top(stmts, 8))
}

// ---------------------------------------------------------------- profiles

// profile takes a CPU profile of secs from p (if it serves pprof) into path.
func profile(ctx context.Context, p *proc, secs int, path string) error {
	if p.pprof == "" {
		return errors.New("not profiled")
	}
	c := &http.Client{Timeout: time.Duration(secs+30) * time.Second}
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.pprof, secs), nil)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("pprof: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// parts classifies a profile's samples by their stack, in order: a
// sample counts in the first part one of whose patterns a frame contains.
var parts = []struct {
	name     string
	patterns []string
}{
	{"delivery: record the attempt (RecordAttempt)", []string{").RecordAttempt"}},
	{"delivery: claim jobs (ClaimJobs)", []string{").ClaimJobs"}},
	{"delivery: POST to the receiver (HTTP client)", []string{"webhook.(*Worker).post", "net/http.(*persistConn)", "net/http.(*Transport)"}},
	{"delivery: other worker work", []string{"webhook.(*Worker)"}},
	{"request: store the exchange (SaveExchange)", []string{").SaveExchange"}},
	{"request: built-in engine", []string{"engine/builtin"}},
	{"request: authentication (key lookup)", []string{"Authenticate", ").authenticate"}},
	{"request: the rest (net/http server, routing, JSON, log, rate limit)", []string{"net/http.(*conn).serve"}},
	{"database client outside the above", []string{"jackc/pgx", "modernc.org/sqlite", "database/sql"}},
	{"garbage collector", []string{"runtime.gcBgMarkWorker", "runtime.gcDrain", "runtime.bgsweep", "runtime.bgscavenge", "runtime.gcStart"}},
	{"Go scheduler and network poller (idle, futex)", []string{"runtime.schedule", "runtime.findRunnable", "runtime.netpoll", "runtime.mcall", "runtime.park_m", "runtime.sysmon"}},
}

type sample struct {
	v      time.Duration
	frames []string // leaf first
}

// traces reads a CPU profile's samples with `go tool pprof -traces`.
func traces(bin, path string) ([]sample, error) {
	out, err := exec.Command("go", "tool", "pprof", "-traces", bin, path).Output()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof -traces: %w", err)
	}
	var all []sample
	var cur *sample
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "-----------+") {
			if cur != nil && len(cur.frames) > 0 {
				all = append(all, *cur)
			}
			cur = &sample{}
			continue
		}
		if cur == nil || strings.TrimSpace(l) == "" {
			continue
		}
		// "      10ms   leaf.func" starts a sample, "             caller" follows.
		f := strings.Fields(l)
		if len(cur.frames) == 0 && len(f) >= 2 {
			if d, err := time.ParseDuration(f[0]); err == nil {
				cur.v = d
				cur.frames = append(cur.frames, f[1])
			}
			continue
		}
		if len(cur.frames) > 0 {
			cur.frames = append(cur.frames, f[0])
		}
	}
	if cur != nil && len(cur.frames) > 0 {
		all = append(all, *cur)
	}
	return all, nil
}

// profileParts splits a CPU profile into parts (each sample counted once)
// and gives cross-cutting shares: time in system calls (leaf frame) and in
// the database client.
func profileParts(bin, path string) string {
	samples, err := traces(bin, path)
	if err != nil {
		return err.Error() + "\n\n"
	}
	var total time.Duration
	share := make([]time.Duration, len(parts)+1)
	var sys, dbc time.Duration
	for _, s := range samples {
		total += s.v
		i := len(parts)
	find:
		for pi, p := range parts {
			for _, fr := range s.frames {
				for _, pat := range p.patterns {
					if strings.Contains(fr, pat) {
						i = pi
						break find
					}
				}
			}
		}
		share[i] += s.v
		if strings.Contains(s.frames[0], "Syscall") || strings.HasPrefix(s.frames[0], "syscall.") || strings.Contains(s.frames[0], "runtime.futex") {
			sys += s.v
		}
		for _, fr := range s.frames {
			if strings.Contains(fr, "jackc/pgx") || strings.Contains(fr, "modernc.org/sqlite") {
				dbc += s.v
				break
			}
		}
	}
	if total == 0 {
		return "empty profile\n\n"
	}
	pc := func(d time.Duration) string { return fmt.Sprintf("%.1f%%", 100*d.Seconds()/total.Seconds()) }
	var b strings.Builder
	fmt.Fprintf(&b, "CPU profile of the first ams process (%s of samples); each sample counted in the first part its stack matches:\n\n", total)
	fmt.Fprintf(&b, "| part | share |\n|---|---|\n")
	for i, p := range parts {
		if share[i] > 0 {
			fmt.Fprintf(&b, "| %s | %s |\n", p.name, pc(share[i]))
		}
	}
	fmt.Fprintf(&b, "| other | %s |\n\n", pc(share[len(parts)]))
	fmt.Fprintf(&b, "Across the parts: %s in system calls and futex (leaf frame), %s under the database client (pgx or SQLite).\n\n", pc(sys), pc(dbc))
	return b.String()
}

// ---------------------------------------------------------------- statistics

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.999999) - 1 // nearest rank
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}

// ---------------------------------------------------------------- load

// account is one benchmark account: its key and assistant.
type account struct{ key, assistant string }

type client struct {
	accounts []account
	c        *http.Client
}

func (c *client) do(ctx context.Context, key, method, u string, body []byte, want int, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d: %s", method, u, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

type loadResult struct {
	ok, failed int64
	firstErr   error
	elapsed    time.Duration
	lat        []time.Duration // sorted
}

// load runs conns clients, client k sending to bases[k mod N] as account
// k mod K, each POSTing messages (a new conversation each) back to back
// until dur passes.
func load(ctx context.Context, c *client, bases []string, conns int, dur time.Duration, record bool) loadResult {
	start := time.Now()
	deadline := start.Add(dur)
	var mu sync.Mutex
	var res loadResult
	var wg sync.WaitGroup
	for k := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := bases[k%len(bases)] + "/v1/messages"
			a := c.accounts[k%len(c.accounts)]
			body, _ := json.Marshal(map[string]string{"assistant_id": a.assistant, "message": "Hello! What can you do?"})
			var lat []time.Duration
			var ok, failed int64
			var ferr error
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t := time.Now()
				if err := c.do(ctx, a.key, "POST", u, body, http.StatusCreated, nil); err != nil {
					failed++
					if ferr == nil {
						ferr = err
					}
					if failed > 100 {
						break
					}
					continue
				}
				ok++
				if record {
					lat = append(lat, time.Since(t))
				}
			}
			mu.Lock()
			res.ok += ok
			res.failed += failed
			if res.firstErr == nil {
				res.firstErr = ferr
			}
			res.lat = append(res.lat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	slices.Sort(res.lat)
	return res
}

// ---------------------------------------------------------------- run

type row struct {
	name              string
	postRPS           float64
	p50, p99          time.Duration
	failed            int64
	mixMsgs, mixDlv   float64 // phase 2: messages/s sent, deliveries/s first to last
	mixDone           float64 // phase 2: messages/s delivered end to end, first send to last delivery
	backlog           int     // phase 3: deliveries queued behind the held receiver
	drainDlv          float64 // phase 3: deliveries/s once released
	missing, dups     int
	cpuPost, cpuDrain cpuSplit
}

func run(ctx context.Context, cfg *config) (err error) {
	work := cfg.work
	if work == "" {
		d, err := os.MkdirTemp("", "ams-bench-multi-")
		if err != nil {
			return err
		}
		work = d
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	defer func() {
		if cfg.keep || cfg.work != "" {
			progress("work directory kept: %s", work)
			return
		}
		if err != nil {
			progress("kept %s for inspection", work)
			return
		}
		os.RemoveAll(work)
	}()
	progress("work directory %s", work)
	type spec struct {
		engine      string
		n, accounts int
	}
	var specs []spec
	for _, s := range strings.Split(cfg.configs, ",") {
		f := strings.Split(strings.TrimSpace(s), ":")
		sp := spec{engine: f[0], accounts: 1}
		var err error
		if len(f) < 2 || len(f) > 3 {
			err = errors.New("fields")
		} else if sp.n, err = strconv.Atoi(f[1]); err == nil && len(f) == 3 {
			sp.accounts, err = strconv.Atoi(f[2])
		}
		if err != nil || sp.n < 1 || sp.accounts < 1 || (sp.engine != "sqlite" && sp.engine != "pg") || (sp.engine == "sqlite" && sp.n != 1) {
			return fmt.Errorf("bad configuration %q (want sqlite:1[:accounts] or pg:N[:accounts])", s)
		}
		if sp.engine == "pg" && cfg.db == "" {
			return fmt.Errorf("configuration %s needs -db", s)
		}
		specs = append(specs, sp)
	}
	version, _ := cli(ctx, cfg.ams, append(baseEnv(), "AMS_DATA_DIR="+filepath.Join(work, "v")), "version")
	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	defer rcv.srv.Close()

	rep := &strings.Builder{}
	fmt.Fprintf(rep, "# ams multi-process benchmark\n\n")
	fmt.Fprintf(rep, "- ams: %s%s; `ams serve --dev --log-level warn%s`, GOGC=%s, GOMAXPROCS=%s\n", version, prefixed(", ", cfg.label),
		prefixed(" ", cfg.serveArgs), envOr("GOGC", "unset (ams sets 400)"), envOr("GOMAXPROCS", "unset"))
	fmt.Fprintf(rep, "- machine: %d CPUs (%s), %s; ams, PostgreSQL, receiver and load generator on one machine, loopback only\n",
		numCPU(), cpuModel(), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	if cfg.db != "" {
		fmt.Fprintf(rep, "- PostgreSQL: %s; ams database URL parameters: %s\n", pgVersion(ctx, cfg.db), orNone(cfg.dbParams, "none (pgxpool default: pool_max_conns = max(4, CPUs))"))
	}
	fmt.Fprintf(rep, "- phase 1: %d clients POST /v1/messages (a new conversation each) for %s after %s warm-up; client k sends to process k mod N as account k mod K; no webhooks\n",
		cfg.conns, cfg.postDur, cfg.warmup)
	fmt.Fprintf(rep, "- phase 2 (mixed): %d webhooks per account to a receiver answering 200 at once; %d clients send messages for %s, then the drain\n",
		cfg.webhooks, cfg.senders, cfg.sendDur)
	fmt.Fprintf(rep, "- phase 3 (backlog): new webhooks, the same; the receiver holds every delivery while %d clients send for %s (a backlog builds behind the per-webhook slots), then answers: deliveries/s from the release to the last arrival, no other load\n\n",
		cfg.senders, cfg.backlogDur)

	var rows []row
	details := &strings.Builder{}
	for _, sp := range specs {
		r, err := runConfig(ctx, cfg, work, rcv, sp.engine, sp.n, sp.accounts, details)
		if err != nil {
			return fmt.Errorf("%s:%d:%d: %w", sp.engine, sp.n, sp.accounts, err)
		}
		rows = append(rows, r)
	}

	fmt.Fprintf(rep, "| configuration | POST /v1/messages req/s | p50 / p99 | phase 2: messages/s, deliveries/s, end to end | **phase 3: deliveries/s** (backlog) | cores ams / postgres / other, POST | cores ams / postgres / other, phase 3 |\n")
	fmt.Fprintf(rep, "|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		check := ""
		if r.missing != 0 || r.dups != 0 || r.failed != 0 {
			check = fmt.Sprintf(" **(CHECK FAILED: %d missing, %d duplicated, %d failed requests)**", r.missing, r.dups, r.failed)
		}
		fmt.Fprintf(rep, "| %s | **%.0f** | %s / %s | %.0f, %.0f, %.0f | **%.0f** (%d)%s | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f |\n",
			r.name, r.postRPS, ms(r.p50), ms(r.p99), r.mixMsgs, r.mixDlv, r.mixDone, r.drainDlv, r.backlog, check,
			r.cpuPost.ams, r.cpuPost.pg, r.cpuPost.other, r.cpuDrain.ams, r.cpuDrain.pg, r.cpuDrain.other)
	}
	fmt.Fprintln(rep)
	rep.WriteString(details.String())
	fmt.Print(rep.String())
	return nil
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func pgVersion(ctx context.Context, dbURL string) string {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return "?"
	}
	defer conn.Close(ctx)
	var v, sc, fs string
	conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('synchronous_commit'), current_setting('fsync')").Scan(&v, &sc, &fs)
	return fmt.Sprintf("%s (synchronous_commit=%s, fsync=%s)", v, sc, fs)
}

func withParams(base string, params ...string) string {
	var ps []string
	for _, p := range params {
		if p != "" {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return base
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + strings.Join(ps, "&")
}

func secretKey() string {
	k := make([]byte, 32)
	rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

// deliveryCheck counts, for arrivals, distinct (event, path) pairs and
// extra arrivals, and the first and last arrival.
func deliveryCheck(arr []arrival) (distinct, dups int, first, last time.Time) {
	seen := map[[2]string]int{}
	for _, a := range arr {
		seen[[2]string{a.id, a.path}]++
		if first.IsZero() || a.at.Before(first) {
			first = a.at
		}
		if a.at.After(last) {
			last = a.at
		}
	}
	for _, k := range seen {
		dups += k - 1
	}
	return len(seen), dups, first, last
}

func runConfig(ctx context.Context, cfg *config, work string, rcv *receiver, engine string, n, accounts int, details *strings.Builder) (r row, err error) {
	name := fmt.Sprintf("%s, %d process", map[string]string{"sqlite": "SQLite", "pg": "PostgreSQL"}[engine], n)
	if n > 1 {
		name += "es"
	}
	if accounts > 1 {
		name += fmt.Sprintf(", %d accounts", accounts)
	}
	r.name = name
	tag := fmt.Sprintf("%s%d-%d", engine, n, accounts)
	dir := filepath.Join(work, tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	progress("== %s", name)

	env := baseEnv()
	appPrefix := ""
	var dbURL string
	if engine == "pg" {
		conn, err := pgx.Connect(ctx, cfg.db)
		if err != nil {
			return r, err
		}
		b := make([]byte, 5)
		rand.Read(b)
		schema := "bench_multi_" + hex.EncodeToString(b)
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			conn.Close(ctx)
			return r, err
		}
		conn.Close(ctx)
		defer func() {
			c, err := pgx.Connect(context.Background(), cfg.db)
			if err == nil {
				c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
				c.Close(context.Background())
			}
		}()
		dbURL = withParams(cfg.db, "search_path="+url.QueryEscape(schema), cfg.dbParams)
		appPrefix = "amsbench_" + hex.EncodeToString(b)
		env = append(env, "AMS_DATABASE_URL="+dbURL, "AMS_SECRET_KEY="+secretKey())
	}
	cliEnv := append(slices.Clone(env), "AMS_DATA_DIR="+filepath.Join(dir, "cli"))
	if engine == "sqlite" {
		cliEnv = append(slices.Clone(env), "AMS_DATA_DIR="+filepath.Join(dir, "data"))
	}
	if _, err := cli(ctx, cfg.ams, cliEnv, "migrate"); err != nil {
		return r, err
	}
	// Enterprise accounts with limits far above the load.
	c := &client{c: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: nil, MaxIdleConns: 1024, MaxIdleConnsPerHost: 512, IdleConnTimeout: 60 * time.Second}}}
	defer c.c.CloseIdleConnections()
	for i := range accounts {
		email := fmt.Sprintf("bench-multi-%d@example.com", i)
		if _, err := cli(ctx, cfg.ams, cliEnv, "users", "create", "--email", email, "--plan", "enterprise"); err != nil {
			return r, err
		}
		if _, err := cli(ctx, cfg.ams, cliEnv, "users", "update", "--email", email, "--rpm", "1000000000", "--rpd", "1000000000"); err != nil {
			return r, err
		}
		key, err := cli(ctx, cfg.ams, cliEnv, "keys", "create", "--email", email, "--name", "bench", "--permissions", "read,write,messages")
		if err != nil {
			return r, err
		}
		ast, err := cli(ctx, cfg.ams, cliEnv, "assistants", "create", "--email", email, "--name", "Bench")
		if err != nil {
			return r, err
		}
		c.accounts = append(c.accounts, account{key, ast})
	}

	// Start the processes one after the other (--dev bootstraps the dev
	// account; only the first creates it).
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()
	var extra []string
	if cfg.serveArgs != "" {
		extra = strings.Fields(cfg.serveArgs)
	}
	for i := range n {
		penv := slices.Clone(env)
		if engine == "pg" {
			// application_name tells this process's backends apart in pg_stat_activity.
			penv = append(baseEnv(), "AMS_DATABASE_URL="+withParams(dbURL, fmt.Sprintf("application_name=%s_%d", appPrefix, i)),
				envValue(env, "AMS_SECRET_KEY"))
		}
		dataDir := filepath.Join(dir, fmt.Sprintf("proc%d", i))
		if engine == "sqlite" {
			dataDir = filepath.Join(dir, "data")
		}
		penv = append(penv, "AMS_DATA_DIR="+dataDir)
		bin, pp := cfg.ams, ""
		if i == 0 && cfg.amsPprof != "" {
			port, err := freePort()
			if err != nil {
				return r, err
			}
			bin, pp = cfg.amsPprof, fmt.Sprintf("127.0.0.1:%d", port)
		}
		p, err := startProc(ctx, bin, penv, i, filepath.Join(dir, fmt.Sprintf("serve%d.log", i)), pp, extra)
		if err != nil {
			return r, err
		}
		procs = append(procs, p)
	}
	var pids []int
	var bases []string
	for _, p := range procs {
		pids = append(pids, p.pid)
		bases = append(bases, p.base)
	}

	var pgs *pgSampler
	if engine == "pg" {
		var stopPG func()
		pgs, stopPG, err = samplePG(ctx, cfg.db, appPrefix)
		if err != nil {
			return r, err
		}
		defer stopPG()
	}
	fmt.Fprintf(details, "## %s\n\n", name)

	// ------------------------------------------------------------ phase 1
	progress("phase 1: warm-up %s", cfg.warmup)
	if w := load(ctx, c, bases, cfg.conns, cfg.warmup, false); w.failed > 0 {
		return r, fmt.Errorf("warm-up: %d failed: %v", w.failed, w.firstErr)
	}
	progress("phase 1: %d clients POST /v1/messages for %s", cfg.conns, cfg.postDur)
	profPath := filepath.Join(dir, "cpu-post.pprof")
	profErr := make(chan error, 1)
	secs := max(1, int(cfg.postDur.Seconds())-1)
	go func() { profErr <- profile(ctx, procs[0], secs, profPath) }()
	pgs.reset()
	m := meter(pids)
	res := load(ctx, c, bases, cfg.conns, cfg.postDur, true)
	r.cpuPost = m.read(pids)
	pgPost := pgs.summary()
	r.postRPS = float64(res.ok) / res.elapsed.Seconds()
	r.p50, r.p99 = pct(res.lat, 50), pct(res.lat, 99)
	r.failed += res.failed
	if res.failed > 0 {
		progress("phase 1: %d failed, first: %v", res.failed, res.firstErr)
	}
	progress("phase 1: %.0f req/s, p50 %s, p99 %s; cores ams %.2f postgres %.2f bench %.2f other %.2f", r.postRPS, ms(r.p50), ms(r.p99),
		r.cpuPost.ams, r.cpuPost.pg, r.cpuPost.own, r.cpuPost.other)
	perr := <-profErr

	// webhooks makes cfg.webhooks webhooks per account under prefix and
	// returns a function deleting them.
	webhooks := func(prefix string) (func(), error) {
		type hook struct{ key, id string }
		var hooks []hook
		del := func() {
			for _, h := range hooks {
				c.do(ctx, h.key, "DELETE", bases[0]+"/v1/webhooks/"+h.id, nil, http.StatusNoContent, nil)
			}
		}
		for ai, a := range c.accounts {
			for i := range cfg.webhooks {
				body, _ := json.Marshal(map[string]any{"url": fmt.Sprintf("%s%sa%dh%d", rcv.url, prefix, ai, i), "events": []string{"message.created"},
					"secret": "bench-webhook-secret-0123456789"})
				var wh struct{ ID string }
				if err := c.do(ctx, a.key, "POST", bases[0]+"/v1/webhooks", body, http.StatusCreated, &wh); err != nil {
					del()
					return nil, err
				}
				hooks = append(hooks, hook{a.key, wh.ID})
			}
		}
		return del, nil
	}
	waitAll := func(prefix string, expected int) {
		deadline := time.Now().Add(cfg.drainTimeout)
		lastLog := time.Now()
		for rcv.count(prefix) < expected && time.Now().Before(deadline) && ctx.Err() == nil {
			if time.Since(lastLog) > 5*time.Second {
				progress("%d of %d deliveries", rcv.count(prefix), expected)
				lastLog = time.Now()
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // let any duplicate arrive
	}

	// ------------------------------------------------------------ phase 2
	prefix2 := "/" + tag + "/mixed/"
	del2, err := webhooks(prefix2)
	if err != nil {
		return r, err
	}
	progress("phase 2: %d webhooks per account, %d senders for %s", cfg.webhooks, cfg.senders, cfg.sendDur)
	pgs.reset()
	m = meter(pids)
	start2 := time.Now()
	send2 := load(ctx, c, bases, cfg.senders, cfg.sendDur, false)
	cpuSend := m.read(pids)
	pgSend := pgs.summary()
	r.failed += send2.failed
	if send2.failed > 0 {
		progress("phase 2: %d sends failed, first: %v", send2.failed, send2.firstErr)
	}
	r.mixMsgs = float64(send2.ok) / send2.elapsed.Seconds()
	expected2 := int(2 * send2.ok * int64(cfg.webhooks))
	waitAll(prefix2, expected2)
	arr2 := rcv.arrivals(prefix2)
	distinct2, dups2, first2, last2 := deliveryCheck(arr2)
	r.mixDlv = float64(len(arr2)) / last2.Sub(first2).Seconds()
	r.mixDone = float64(send2.ok) / last2.Sub(start2).Seconds()
	r.missing += expected2 - distinct2
	r.dups += dups2
	progress("phase 2: %.0f messages/s, %.0f deliveries/s first to last, %.0f messages/s end to end; %d missing, %d duplicated", r.mixMsgs, r.mixDlv, r.mixDone, expected2-distinct2, dups2)
	del2()

	// ------------------------------------------------------------ phase 3
	prefix3 := "/" + tag + "/backlog/"
	del3, err := webhooks(prefix3)
	if err != nil {
		return r, err
	}
	progress("phase 3: receiver held, %d senders for %s", cfg.senders, cfg.backlogDur)
	release := rcv.hold(prefix3)
	send3 := load(ctx, c, bases, cfg.senders, cfg.backlogDur, false)
	r.failed += send3.failed
	if send3.failed > 0 {
		progress("phase 3: %d sends failed, first: %v", send3.failed, send3.firstErr)
	}
	expected3 := int(2 * send3.ok * int64(cfg.webhooks))
	drainProf := filepath.Join(dir, "cpu-drain.pprof")
	drainProfErr := make(chan error, 1)
	pgs.reset()
	m = meter(pids)
	released := time.Now()
	release()
	go func() { drainProfErr <- profile(ctx, procs[0], max(1, int(cfg.profileDrain.Seconds())), drainProf) }()
	before := rcv.count(prefix3) // arrived (and held) before the release
	waitAll(prefix3, expected3)
	r.cpuDrain = m.read(pids)
	pgDrain := pgs.summary()
	dperr := <-drainProfErr
	arr3 := rcv.arrivals(prefix3)
	distinct3, dups3, _, last3 := deliveryCheck(arr3)
	r.backlog = expected3 - before
	r.drainDlv = float64(len(arr3)-before) / last3.Sub(released).Seconds()
	r.missing += expected3 - distinct3
	r.dups += dups3
	progress("phase 3: %d messages sent, %d deliveries queued behind %d held; %.0f deliveries/s after the release; %d missing, %d duplicated",
		send3.ok, r.backlog, before, r.drainDlv, expected3-distinct3, dups3)
	del3()

	// ------------------------------------------------------------ details
	fmt.Fprintf(details, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(details, "| phase 1: POST /v1/messages | %d in %.1f s = **%.0f/s**, p50 %s, p90 %s, p99 %s, max %s; %d failed |\n", res.ok, res.elapsed.Seconds(),
		r.postRPS, ms(r.p50), ms(pct(res.lat, 90)), ms(r.p99), ms(pct(res.lat, 100)), res.failed)
	fmt.Fprintf(details, "| phase 2: messages, deliveries | %d messages in %.1f s (%.0f/s); %d deliveries expected, %d distinct arrived, %d duplicated; **%.0f deliveries/s** first to last (%.1f s); %.0f messages/s end to end (%.1f s from the first send to the last delivery) |\n",
		send2.ok, send2.elapsed.Seconds(), r.mixMsgs, expected2, distinct2, dups2, r.mixDlv, last2.Sub(first2).Seconds(), r.mixDone, last2.Sub(start2).Seconds())
	fmt.Fprintf(details, "| phase 3: backlog drain | %d messages in %.1f s; %d deliveries expected, %d held at the release, %d distinct arrived, %d duplicated; **%.0f deliveries/s** from the release to the last (%d in %.1f s) |\n\n",
		send3.ok, send3.elapsed.Seconds(), expected3, before, distinct3, dups3, r.drainDlv, len(arr3)-before, last3.Sub(released).Seconds())
	fmt.Fprintf(details, "CPU cores used on average (of %d):\n\n%s\n", numCPU(), cpuHeader)
	fmt.Fprintf(details, "| phase 1: POST | %s |\n| phase 2: sending (deliveries meanwhile) | %s |\n| phase 3: drain | %s |\n\n", r.cpuPost, cpuSend, r.cpuDrain)
	if engine == "pg" {
		fmt.Fprintf(details, "PostgreSQL backends of the ams processes (pg_stat_activity every 50 ms; average number of backends in each state and wait):\n\n")
		fmt.Fprintf(details, "- phase 1, POST: %s\n- phase 2, sending: %s\n- phase 3, drain: %s\n\n", pgPost, pgSend, pgDrain)
	}
	if cfg.amsPprof != "" {
		if perr == nil {
			fmt.Fprintf(details, "Phase 1, POST (%d s). %s", secs, profileParts(cfg.amsPprof, profPath))
			fmt.Fprintf(details, "Top functions (flat):\n\n```\n%s```\n\n", topN(cfg.amsPprof, profPath, 12))
		} else {
			fmt.Fprintf(details, "Phase 1 profile failed: %v\n\n", perr)
		}
		if dperr == nil {
			fmt.Fprintf(details, "Phase 3, drain (first %s after the release). %s", cfg.profileDrain, profileParts(cfg.amsPprof, drainProf))
		} else {
			fmt.Fprintf(details, "Phase 3 profile failed: %v\n\n", dperr)
		}
	}

	// ------------------------------------------------------------ stop
	for _, p := range procs {
		if err := p.stop(); err != nil {
			fmt.Fprintf(details, "ams serve %d on SIGTERM: %v\n\n", p.i, err)
		}
	}
	for _, p := range procs {
		fmt.Fprint(details, logSummary(p.logPath, p.i))
	}
	procs = nil
	return r, nil
}

func envValue(env []string, k string) string {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return kv
		}
	}
	return ""
}

func topN(bin, path string, n int) string {
	out, err := exec.Command("go", "tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", n), bin, path).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("go tool pprof: %v\n", err)
	}
	// Keep the table only.
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if strings.Contains(l, "flat%") {
			return strings.Join(lines[i:], "\n")
		}
	}
	return string(out)
}

// logSummary counts a process's warnings and errors by message.
func logSummary(path string, i int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	counts := map[string]int{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct{ Level, Msg, Err string }
		if json.Unmarshal(sc.Bytes(), &e) != nil || (e.Level != "WARN" && e.Level != "ERROR") {
			continue
		}
		k := e.Level + " " + e.Msg
		if e.Err != "" {
			k += ": " + e.Err
		}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	if len(order) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Log of ams serve %d: warnings/errors:\n", i)
	for _, k := range order {
		fmt.Fprintf(&b, "- %d × `%s`\n", counts[k], trunc(k, 300))
	}
	b.WriteString("\n")
	return b.String()
}

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	n := strings.Count(string(b), "\nprocessor")
	if strings.HasPrefix(string(b), "processor") {
		n++
	}
	return max(1, n)
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "unknown CPU"
}
