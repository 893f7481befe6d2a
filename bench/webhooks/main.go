// Command webhooks is the webhook delivery benchmark of issue 3
// (docs/benchmarks.md). It is given an ams binary (scripts/bench-webhooks.sh
// builds one), prepares a data directory with the CLI, runs `ams serve --dev`
// on SQLite on 127.0.0.1, and measures, against an in-process receiver on
// 127.0.0.1:
//
//  1. throughput: deliveries per second to W webhooks while a pool of
//     clients sends messages as fast as it can for T seconds, then drains;
//     every (event, webhook) pair must arrive exactly once;
//  2. latency: from an event's created_at (set by the request just before
//     its transaction commits) to the arrival of its first attempt at the
//     receiver, at a steady 100 messages (200 events) per second;
//  3. a dead receiver (a loopback port nobody listens on): the server's
//     resident memory while 100,000 deliveries wait for it, and the latency
//     of a healthy webhook receiving a trickle at the same time.
//
// It prints a markdown report on stdout and progress on stderr. All traffic
// stays on 127.0.0.1; every loop is bounded in count and time.
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // read-only look at the queue during phase 3
)

type config struct {
	ams          string
	work         string
	keep         bool
	phases       string
	retry        string
	senders      int
	webhooks     int
	tputDur      time.Duration
	drainTimeout time.Duration
	latWait      time.Duration
	burstTimeout time.Duration
	label        string
	rate         int
	latDur       time.Duration
	deadMsgs     int
	deadConc     int
	trickle      int
	baseline     time.Duration
	observe      time.Duration
	observeDB    bool
	serveArgs    string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.ams, "ams", "", "path of the ams binary (required)")
	flag.StringVar(&cfg.work, "work", "", "directory for the data dir and server log (default: a new temp dir, removed at the end)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory")
	flag.StringVar(&cfg.phases, "phases", "1,2,3", "phases to run")
	flag.StringVar(&cfg.retry, "retry-schedule", "0s,1m,5m,30m,2h", "--webhook-retry-schedule passed to ams serve")
	flag.IntVar(&cfg.senders, "senders", 8, "phase 1: concurrent clients sending messages")
	flag.IntVar(&cfg.webhooks, "webhooks", 4, "phase 1: webhooks subscribed to message.created")
	flag.DurationVar(&cfg.tputDur, "throughput-duration", 10*time.Second, "phase 1: how long messages are sent")
	flag.DurationVar(&cfg.drainTimeout, "drain-timeout", 120*time.Second, "phase 1: how long to wait for every delivery after sending stops")
	flag.DurationVar(&cfg.latWait, "latency-wait", 60*time.Second, "phase 2: how long to wait for the last deliveries after sending stops")
	flag.DurationVar(&cfg.burstTimeout, "burst-timeout", 180*time.Second, "phase 3: the longest the burst may take (fewer messages are sent if it is reached)")
	flag.StringVar(&cfg.label, "label", "", "what the ams binary is (e.g. its commit), printed in the report")
	flag.IntVar(&cfg.rate, "rate", 100, "phase 2: messages per second (2 events each)")
	flag.DurationVar(&cfg.latDur, "latency-duration", 20*time.Second, "phase 2: how long the steady rate is kept")
	flag.IntVar(&cfg.deadMsgs, "dead-messages", 50000, "phase 3: messages sent while the dead webhook is subscribed (2 deliveries each)")
	flag.IntVar(&cfg.deadConc, "dead-concurrency", 8, "phase 3: concurrent clients sending them")
	flag.IntVar(&cfg.trickle, "trickle", 10, "phase 3: messages per second of the healthy webhook's trickle")
	flag.DurationVar(&cfg.baseline, "baseline", 10*time.Second, "phase 3: trickle to the healthy webhook before the dead one exists")
	flag.DurationVar(&cfg.observe, "observe", 30*time.Second, "phase 3: how long memory is watched (with the trickle) after the backlog is queued")
	flag.BoolVar(&cfg.observeDB, "observe-db", true, "phase 3: count the dead webhook's attempts and pending jobs with a read-only SQLite connection every 5 s")
	flag.StringVar(&cfg.serveArgs, "serve-args", "", "extra arguments for ams serve, space-separated (e.g. --webhook-concurrency=128)")
	flag.Parse()
	if cfg.ams == "" {
		fmt.Fprintln(os.Stderr, "usage: webhooks -ams PATH [flags]")
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
	at      time.Time
	path    string
	id      string
	created time.Time
}

type receiver struct {
	srv   *http.Server
	url   string
	conns atomic.Int64 // TCP connections accepted
	bad   atomic.Int64 // requests that were not a delivery envelope

	mu   sync.Mutex
	log  []arrival
	seen map[[2]string]int // (event id, path) -> times received
	per  map[string]int    // path -> requests
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String(), seen: map[[2]string]int{}, per: map[string]int{}}
	r.srv = &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				r.conns.Add(1)
			}
		},
	}
	go r.srv.Serve(ln)
	return r, nil
}

// ServeHTTP answers 200 at once and records the arrival.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var env struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"created_at"`
	}
	if err != nil || json.Unmarshal(body, &env) != nil || env.ID == "" {
		r.bad.Add(1)
	} else {
		r.mu.Lock()
		r.log = append(r.log, arrival{at: at, path: req.URL.Path, id: env.ID, created: env.CreatedAt})
		r.seen[[2]string{env.ID, req.URL.Path}]++
		r.per[req.URL.Path]++
		r.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
}

// count returns how many requests arrived at the paths with prefix.
func (r *receiver) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for p, k := range r.per {
		if strings.HasPrefix(p, prefix) {
			n += k
		}
	}
	return n
}

// arrivals returns a copy of the arrivals at the paths with prefix.
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

// firstArrivals returns, for paths with prefix, the first arrival of
// every (event, path) pair; later ones are retries or duplicates.
func (r *receiver) firstArrivals(prefix string) []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	firsts := map[[2]string]int{}
	var out []arrival
	for _, a := range r.log {
		if !strings.HasPrefix(a.path, prefix) {
			continue
		}
		k := [2]string{a.id, a.path}
		if i, ok := firsts[k]; ok {
			if a.at.Before(out[i].at) {
				out[i] = a
			}
			continue
		}
		firsts[k] = len(out)
		out = append(out, a)
	}
	return out
}

// dupGaps returns, for every (event, path) pair at paths with prefix that
// arrived more than once, the time between its first and last arrival.
func (r *receiver) dupGaps(prefix string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	first, last := map[[2]string]time.Time{}, map[[2]string]time.Time{}
	for _, a := range r.log {
		if !strings.HasPrefix(a.path, prefix) || r.seen[[2]string{a.id, a.path}] < 2 {
			continue
		}
		k := [2]string{a.id, a.path}
		if t, ok := first[k]; !ok || a.at.Before(t) {
			first[k] = a.at
		}
		if a.at.After(last[k]) {
			last[k] = a.at
		}
	}
	var out []time.Duration
	for k, t := range first {
		out = append(out, last[k].Sub(t))
	}
	slices.Sort(out)
	return out
}

// dupNote describes the duplicates at paths with prefix, if any.
func (r *receiver) dupNote(prefix string) string {
	g := r.dupGaps(prefix)
	if len(g) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d events delivered more than once, %s to %s after their first arrival)", len(g), ms(g[0]), ms(g[len(g)-1]))
}

// check counts, for paths with prefix, distinct (event, path) pairs and
// pairs received more than once, and distinct events per path.
func (r *receiver) check(prefix string) (distinct, dups int, perPath map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	perPath = map[string]int{}
	for k, n := range r.seen {
		if !strings.HasPrefix(k[1], prefix) {
			continue
		}
		distinct++
		perPath[k[1]]++
		if n > 1 {
			dups += n - 1
		}
	}
	return
}

// ---------------------------------------------------------------- ams server and API

type server struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{}
	err  error
}

type api struct {
	base, key, assistant string
	c                    *http.Client
}

var errStatus = errors.New("unexpected status")

func (a *api) do(ctx context.Context, method, path string, body []byte, want int, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %w %d: %s", method, path, errStatus, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func (a *api) createWebhook(ctx context.Context, url string) (string, error) {
	body, _ := json.Marshal(map[string]any{"url": url, "events": []string{"message.created"}, "secret": "bench-webhook-secret-0123456789"})
	var wh struct{ ID string }
	if err := a.do(ctx, "POST", "/v1/webhooks", body, http.StatusCreated, &wh); err != nil {
		return "", err
	}
	return wh.ID, nil
}

func (a *api) setActive(ctx context.Context, id string, on bool) error {
	return a.do(ctx, "PATCH", "/v1/webhooks/"+id, []byte(fmt.Sprintf(`{"active":%t}`, on)), http.StatusOK, nil)
}

func (a *api) deleteWebhook(ctx context.Context, id string) error {
	return a.do(ctx, "DELETE", "/v1/webhooks/"+id, nil, http.StatusNoContent, nil)
}

// send posts one message in a new conversation (2 message.created events).
func (a *api) send(ctx context.Context, body []byte) error {
	return a.do(ctx, "POST", "/v1/messages", body, http.StatusCreated, nil)
}

func (a *api) messageBody() []byte {
	b, _ := json.Marshal(map[string]string{"assistant_id": a.assistant, "message": "Hello! What can you do?"})
	return b
}

func cli(ctx context.Context, bin, dataDir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = serverEnv(dataDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("ams %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// serverEnv is the environment without AMS_* settings of the caller's
// shell, with AMS_DATA_DIR set.
func serverEnv(dataDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AMS_") {
			env = append(env, kv)
		}
	}
	// The load sends more turns at once than an account may hold by
	// default (--max-concurrent-turns-per-account): as an environment
	// variable, which builds older than the flag ignore.
	return append(env, "AMS_DATA_DIR="+dataDir, "AMS_MAX_CONCURRENT_TURNS_PER_ACCOUNT=1000000")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func startServer(ctx context.Context, cfg *config, dataDir, logPath string, port int) (*server, error) {
	args := []string{"serve", "--dev", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--log-level", "warn",
		"--webhook-retry-schedule", cfg.retry, "--shutdown-timeout", "5s"}
	if cfg.serveArgs != "" {
		args = append(args, strings.Fields(cfg.serveArgs)...)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.ams, args...)
	cmd.Env = serverEnv(dataDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The server dies with us even if we are killed without cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &server{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { s.err = cmd.Wait(); logf.Close(); close(s.done) }()
	// Wait (at most 15 s) for it to answer.
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/openapi.json", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("ams serve exited at start: %v (log: %s)", s.err, logPath)
		case <-ctx.Done():
			s.kill()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("ams serve did not answer within 15 s (log: %s)", logPath)
		}
	}
}

func (s *server) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Kill()
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
}

// stop sends SIGTERM and waits (at most 20 s) before killing.
func (s *server) stop() error {
	select {
	case <-s.done:
		return fmt.Errorf("ams serve had exited: %v", s.err)
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return s.err
	case <-time.After(20 * time.Second):
		s.kill()
		return errors.New("ams serve did not stop within 20 s of SIGTERM; killed")
	}
}

func (s *server) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// rssKiB returns VmRSS and VmHWM of pid from /proc.
func rssKiB(pid int) (rss, hwm int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []string{"VmRSS:", "VmHWM:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if k == "VmRSS:" {
					rss = n
				} else {
					hwm = n
				}
			}
		}
	}
	return
}

// cpuSeconds returns the user+system CPU time of pid.
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

// machineCPU returns the busy CPU time of the whole machine (all
// processes) from /proc/stat.
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

// cpuMeter measures the CPU the server, this program and everything else
// on the machine use over a span.
type cpuMeter struct {
	pid              int
	t0               time.Time
	srv0, own0, all0 float64
}

func meter(pid int) cpuMeter {
	return cpuMeter{pid: pid, t0: time.Now(), srv0: cpuSeconds(pid), own0: selfCPU(), all0: machineCPU()}
}

// cores returns the average cores used by the server and by this program.
func (m cpuMeter) cores() (srv, own float64) {
	srv, own, _ = m.cores3()
	return
}

// cores3 also returns the cores used by other processes (other people's
// work on the machine makes a run noisy).
func (m cpuMeter) cores3() (srv, own, other float64) {
	el := time.Since(m.t0).Seconds()
	srv, own = (cpuSeconds(m.pid)-m.srv0)/el, (selfCPU()-m.own0)/el
	other = max(0, (machineCPU()-m.all0)/el-srv-own)
	return
}

// ---------------------------------------------------------------- statistics

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.999999) - 1 // nearest rank
	return sorted[min(max(i, 0), len(sorted)-1)]
}

type latStats struct {
	n                        int
	p50, p90, p99, p999, max time.Duration
	missing                  int // expected deliveries that never arrived, counted as slower than all
}

// never stands for a delivery that did not arrive within the wait.
const never = time.Duration(1<<62 - 1)

func stats(d []time.Duration) latStats { return statsMissing(d, 0) }

// statsMissing computes percentiles over the arrivals plus missing
// deliveries that never arrived (ranked after every arrival).
func statsMissing(d []time.Duration, missing int) latStats {
	s := slices.Clone(d)
	slices.Sort(s)
	for range max(missing, 0) {
		s = append(s, never)
	}
	st := latStats{n: len(d), missing: max(missing, 0), p50: pct(s, 50), p90: pct(s, 90), p99: pct(s, 99), p999: pct(s, 99.9)}
	if len(s) > 0 {
		st.max = s[len(s)-1]
	}
	return st
}

func ms(d time.Duration) string {
	if d == never {
		return "not delivered"
	}
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}

func (s latStats) row(name string) string {
	n := strconv.Itoa(s.n)
	if s.missing > 0 {
		n += fmt.Sprintf(" (+%d not delivered)", s.missing)
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", name, n, ms(s.p50), ms(s.p90), ms(s.p99), ms(s.p999), ms(s.max))
}

const latHeader = "| deliveries | n | p50 | p90 | p99 | p99.9 | max |\n|---|---|---|---|---|---|---|"

// waitFor polls until cond is true, ctx is done or timeout passes, logging
// progress every 5 s. It reports whether cond became true.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) bool {
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		ok, state := cond()
		if ok {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			progress("gave up waiting for %s: %s", what, state)
			return false
		}
		if time.Since(lastLog) >= 5*time.Second {
			progress("waiting for %s: %s", what, state)
			lastLog = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---------------------------------------------------------------- load

// flood sends messages with conc clients until dur passes or limit
// messages were sent (both bounds apply), and returns the successes, the
// failures (with the first error) and the elapsed time.
func flood(ctx context.Context, a *api, conc int, dur time.Duration, limit int64, sent *atomic.Int64) (ok, failed int64, firstErr error, elapsed time.Duration) {
	body := a.messageBody()
	start := time.Now()
	deadline := start.Add(dur)
	var claimed, nfail atomic.Int64
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) && claimed.Add(1) <= limit {
				if err := a.send(ctx, body); err != nil {
					nfail.Add(1)
					errOnce.Do(func() { firstErr = err })
					if nfail.Load() > 100 {
						return
					}
					continue
				}
				sent.Add(1)
			}
		}()
	}
	wg.Wait()
	return sent.Load(), nfail.Load(), firstErr, time.Since(start)
}

// paced sends rate messages per second for dur (rate*dur messages in all,
// each on its own goroutine, at most 256 in flight) and returns the send
// latencies and failures. If the server cannot keep up, sending stops 30 s
// after dur; unsent counts the messages left out.
func paced(ctx context.Context, a *api, rate int, dur time.Duration, sent *atomic.Int64) (lat []time.Duration, failed, late, unsent int64, firstErr error) {
	body := a.messageBody()
	total := int(float64(rate) * dur.Seconds())
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	hard := time.NewTimer(dur + 30*time.Second)
	defer hard.Stop()
	sem := make(chan struct{}, 256)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var nfail atomic.Int64
	i := 0
loop:
	for ; i < total && ctx.Err() == nil; i++ {
		select {
		case <-tick.C:
		case <-hard.C:
			break loop
		}
		select {
		case sem <- struct{}{}:
		default:
			late++ // 256 requests in flight: wait for a slot, the pace slips
			select {
			case sem <- struct{}{}:
			case <-hard.C:
				break loop
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t := time.Now()
			err := a.send(ctx, body)
			d := time.Since(t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				nfail.Add(1)
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			sent.Add(1)
			lat = append(lat, d)
		}()
	}
	wg.Wait()
	return lat, nfail.Load(), late, int64(total - i), firstErr
}

// ---------------------------------------------------------------- run

func run(ctx context.Context, cfg *config) (err error) {
	work := cfg.work
	if work == "" {
		d, err := os.MkdirTemp("", "ams-bench-webhooks-")
		if err != nil {
			return err
		}
		work = d
	}
	defer func() {
		if cfg.keep || cfg.work != "" {
			return
		}
		if err != nil {
			progress("kept %s for inspection", work)
			return
		}
		os.RemoveAll(work)
	}()
	dataDir := filepath.Join(work, "data")
	logPath := filepath.Join(work, "serve.log")
	progress("work directory %s", work)

	const email = "bench-webhooks@example.com"
	if _, err := cli(ctx, cfg.ams, dataDir, "users", "create", "--email", email, "--plan", "enterprise"); err != nil {
		return err
	}
	if _, err := cli(ctx, cfg.ams, dataDir, "users", "update", "--email", email, "--rpm", "1000000000", "--rpd", "1000000000"); err != nil {
		return err
	}
	key, err := cli(ctx, cfg.ams, dataDir, "keys", "create", "--email", email, "--name", "bench", "--permissions", "read,write,messages")
	if err != nil {
		return err
	}
	ast, err := cli(ctx, cfg.ams, dataDir, "assistants", "create", "--email", email, "--name", "Bench")
	if err != nil {
		return err
	}
	version, _ := cli(ctx, cfg.ams, dataDir, "version")

	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	defer rcv.srv.Close()

	port, err := freePort()
	if err != nil {
		return err
	}
	srv, err := startServer(ctx, cfg, dataDir, logPath, port)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			srv.kill()
		}
	}()
	a := &api{base: fmt.Sprintf("http://127.0.0.1:%d", port), key: key, assistant: ast,
		c: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			Proxy: nil, MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: 60 * time.Second,
		}}}
	rss0, _ := rssKiB(srv.pid)
	whole := meter(srv.pid)
	progress("ams serve pid %d on %s, receiver %s", srv.pid, a.base, rcv.url)

	rep := &strings.Builder{}
	fmt.Fprintf(rep, "# ams webhook delivery benchmark\n\n")
	fmt.Fprintf(rep, "- ams: %s%s; `ams serve --dev --log-level warn --webhook-retry-schedule %s%s` on SQLite, GOGC=%s, GOMAXPROCS=%s\n",
		version, prefixed(", ", cfg.label), cfg.retry, prefixed(" ", cfg.serveArgs), envOr("GOGC", "unset (ams sets 400)"), envOr("GOMAXPROCS", "unset"))
	fmt.Fprintf(rep, "- machine: %d CPUs (%s), %s; server, receiver and load generator on one machine, loopback only\n",
		numCPU(), cpuModel(), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(rep, "- server RSS after start: %.1f MiB\n\n", float64(rss0)/1024)

	// RSS of the server every second for the whole run.
	type sample struct {
		t        time.Time
		rss, hwm int64
	}
	var smu sync.Mutex
	var samples []sample
	sctx, stopSampling := context.WithCancel(ctx)
	var swg sync.WaitGroup
	swg.Add(1)
	go func() {
		defer swg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			r, h := rssKiB(srv.pid)
			smu.Lock()
			samples = append(samples, sample{time.Now(), r, h})
			smu.Unlock()
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	defer func() { stopSampling(); swg.Wait() }()
	rssBetween := func(from, to time.Time) (lo, hi int64) {
		smu.Lock()
		defer smu.Unlock()
		lo = -1
		for _, s := range samples {
			if s.t.Before(from) || s.t.After(to) {
				continue
			}
			if lo < 0 || s.rss < lo {
				lo = s.rss
			}
			hi = max(hi, s.rss)
		}
		return
	}

	phases := map[string]bool{}
	for _, p := range strings.Split(cfg.phases, ",") {
		phases[strings.TrimSpace(p)] = true
	}
	var hooks []string // webhooks of the previous phase, deleted by the next
	deleteHooks := func() error {
		for _, id := range hooks {
			if err := a.deleteWebhook(ctx, id); err != nil {
				return err
			}
		}
		hooks = nil
		return nil
	}

	// ------------------------------------------------------------ phase 1
	if phases["1"] {
		progress("phase 1: %d webhooks, %d senders for %s", cfg.webhooks, cfg.senders, cfg.tputDur)
		for i := range cfg.webhooks {
			id, err := a.createWebhook(ctx, fmt.Sprintf("%s/p1/h%d", rcv.url, i))
			if err != nil {
				return err
			}
			hooks = append(hooks, id)
		}
		conns0 := rcv.conns.Load()
		m := meter(srv.pid)
		t0 := time.Now()
		var sent atomic.Int64
		msgs, failed, ferr, genDur := flood(ctx, a, cfg.senders, cfg.tputDur, 10_000_000, &sent)
		genEnd := time.Now()
		genSrv, genOwn, genOther := m.cores3()
		atGenEnd := rcv.count("/p1/")
		if failed > 0 {
			progress("phase 1: %d sends failed, first: %v", failed, ferr)
		}
		expected := int(2 * msgs * int64(cfg.webhooks))
		progress("phase 1: sent %d messages in %.1fs (%.0f/s); %d of %d deliveries arrived so far", msgs, genDur.Seconds(),
			float64(msgs)/genDur.Seconds(), atGenEnd, expected)
		m2 := meter(srv.pid)
		complete := waitFor(ctx, cfg.drainTimeout, "phase 1 deliveries", func() (bool, string) {
			n := rcv.count("/p1/")
			return n >= expected, fmt.Sprintf("%d of %d", n, expected)
		})
		drainSrv, drainOwn, drainOther := m2.cores3()
		time.Sleep(500 * time.Millisecond) // let any duplicate arrive
		arr := rcv.arrivals("/p1/")
		distinct, dups, perPath := rcv.check("/p1/")
		var first, last time.Time
		var lags []time.Duration
		for _, x := range arr {
			if first.IsZero() || x.at.Before(first) {
				first = x.at
			}
			if x.at.After(last) {
				last = x.at
			}
			lags = append(lags, x.at.Sub(x.created))
		}
		span := last.Sub(first)
		drained := len(arr) - atGenEnd
		drainSpan := last.Sub(genEnd)
		lo, hi := rssBetween(t0, time.Now())
		missing := expected - distinct
		fmt.Fprintf(rep, "## Phase 1: throughput (%d webhooks, %d senders for %s)\n\n", cfg.webhooks, cfg.senders, cfg.tputDur)
		fmt.Fprintf(rep, "| measure | value |\n|---|---|\n")
		fmt.Fprintf(rep, "| messages sent (201) | %d in %.1f s = **%.0f messages/s** (%.0f events/s, %.0f deliveries/s queued) |\n",
			msgs, genDur.Seconds(), float64(msgs)/genDur.Seconds(), 2*float64(msgs)/genDur.Seconds(), float64(expected)/genDur.Seconds())
		fmt.Fprintf(rep, "| failed sends | %d |\n", failed)
		fmt.Fprintf(rep, "| deliveries expected / received / distinct | %d / %d / %d |\n", expected, len(arr), distinct)
		fmt.Fprintf(rep, "| missing / duplicated | %d / %d%s |\n", missing, dups, rcv.dupNote("/p1/"))
		fmt.Fprintf(rep, "| all arrived within the drain timeout | %v |\n", complete)
		fmt.Fprintf(rep, "| **deliveries/s, first to last delivery** | **%.0f** (%d in %.1f s) |\n", float64(len(arr))/span.Seconds(), len(arr), span.Seconds())
		fmt.Fprintf(rep, "| deliveries/s while messages were being sent | %.0f (%d in %.1f s) |\n", float64(atGenEnd)/genEnd.Sub(first).Seconds(), atGenEnd, genEnd.Sub(first).Seconds())
		fmt.Fprintf(rep, "| deliveries/s after sending stopped (drain only) | %.0f (%d in %.1f s) |\n", float64(drained)/drainSpan.Seconds(), drained, drainSpan.Seconds())
		ls := stats(lags)
		fmt.Fprintf(rep, "| created_at → arrival (backlog wait) p50 / p99 / max | %s / %s / %s |\n", ms(ls.p50), ms(ls.p99), ms(ls.max))
		fmt.Fprintf(rep, "| CPU cores used, sending: ams / bench (load + receiver) / other processes | %.2f / %.2f / %.2f |\n", genSrv, genOwn, genOther)
		fmt.Fprintf(rep, "| CPU cores used, draining: ams / bench (receiver) / other processes | %.2f / %.2f / %.2f |\n", drainSrv, drainOwn, drainOther)
		fmt.Fprintf(rep, "| TCP connections the receiver accepted | %d (for %d deliveries) |\n", rcv.conns.Load()-conns0, len(arr))
		fmt.Fprintf(rep, "| server RSS min / max | %.1f / %.1f MiB |\n\n", float64(lo)/1024, float64(hi)/1024)
		var paths []string
		for p := range perPath {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		fmt.Fprintf(rep, "Distinct events per webhook:")
		for _, p := range paths {
			fmt.Fprintf(rep, " %s %d;", p, perPath[p])
		}
		fmt.Fprintf(rep, " expected %d each.\n\n", 2*msgs)
		if missing != 0 || dups != 0 || failed != 0 {
			fmt.Fprintf(rep, "**CHECK FAILED: %d missing, %d duplicated, %d failed sends.**\n\n", missing, dups, failed)
		}
		if err := deleteHooks(); err != nil {
			return err
		}
	}

	// ------------------------------------------------------------ phase 2
	if phases["2"] {
		if err := deleteHooks(); err != nil {
			return err
		}
		id, err := a.createWebhook(ctx, rcv.url+"/p2/h0")
		if err != nil {
			return err
		}
		hooks = append(hooks, id)
		time.Sleep(time.Second)
		progress("phase 2: %d messages/s for %s", cfg.rate, cfg.latDur)
		m := meter(srv.pid)
		t0 := time.Now()
		var sent atomic.Int64
		sendLat, failed, late, unsent, ferr := paced(ctx, a, cfg.rate, cfg.latDur, &sent)
		el := time.Since(t0)
		srvCores, ownCores, otherCores := m.cores3()
		if failed > 0 {
			progress("phase 2: %d sends failed, first: %v", failed, ferr)
		}
		expected := int(2 * sent.Load())
		complete := waitFor(ctx, cfg.latWait, "phase 2 deliveries", func() (bool, string) {
			n := rcv.count("/p2/")
			return n >= expected, fmt.Sprintf("%d of %d", n, expected)
		})
		time.Sleep(500 * time.Millisecond)
		distinct, dups, _ := rcv.check("/p2/")
		warmEnd := t0.Add(time.Second)
		var warm, steady []time.Duration
		for _, x := range rcv.firstArrivals("/p2/") {
			if x.created.Before(warmEnd) {
				warm = append(warm, x.at.Sub(x.created))
			} else {
				steady = append(steady, x.at.Sub(x.created))
			}
		}
		lo, hi := rssBetween(t0, time.Now())
		// Deliveries that never arrived count as slower than every arrival
		// (they are the latest events, so they count in the steady row).
		ss := statsMissing(steady, expected-distinct)
		fmt.Fprintf(rep, "## Phase 2: latency at %d messages/s (%d events/s) for %s, 1 webhook\n\n", cfg.rate, 2*cfg.rate, cfg.latDur)
		fmt.Fprintf(rep, "Latency = arrival at the receiver − the event's `created_at` (set before the commit; millisecond precision, truncated).\n")
		fmt.Fprintf(rep, "The first second is warm-up, reported on its own row and not in the steady figures.\n\n")
		fmt.Fprintln(rep, latHeader)
		fmt.Fprintln(rep, ss.row("**steady** (after 1 s)"))
		fmt.Fprintln(rep, stats(warm).row("warm-up (first 1 s)"))
		fmt.Fprintln(rep, stats(sendLat).row("POST /v1/messages response time (for reference)"))
		fmt.Fprintln(rep)
		fmt.Fprintf(rep, "| measure | value |\n|---|---|\n")
		fmt.Fprintf(rep, "| messages sent / failed / not sent (server too slow) | %d / %d / %d in %.1f s (%.1f/s) |\n", sent.Load(), failed, unsent, el.Seconds(), float64(sent.Load())/el.Seconds())
		fmt.Fprintf(rep, "| ticks that found 256 requests in flight (pace slipped) | %d |\n", late)
		fmt.Fprintf(rep, "| deliveries expected / distinct / duplicated | %d / %d / %d%s (all arrived within %s of the last send: %v) |\n", expected, distinct, dups, rcv.dupNote("/p2/"), cfg.latWait, complete)
		fmt.Fprintf(rep, "| CPU cores used: ams / bench / other processes | %.2f / %.2f / %.2f |\n", srvCores, ownCores, otherCores)
		fmt.Fprintf(rep, "| server RSS min / max | %.1f / %.1f MiB |\n\n", float64(lo)/1024, float64(hi)/1024)
		if expected != distinct || dups != 0 || failed != 0 || unsent != 0 {
			fmt.Fprintf(rep, "**CHECK FAILED: %d missing, %d duplicated, %d failed sends, %d not sent.**\n\n", expected-distinct, dups, failed, unsent)
		}
	}

	// ------------------------------------------------------------ phase 3
	if phases["3"] {
		if err := deleteHooks(); err != nil {
			return err
		}
		if err := phase3(ctx, cfg, a, rcv, srv, dataDir, rep, rssBetween); err != nil {
			return err
		}
	}

	// ------------------------------------------------------------ end
	if !srv.alive() {
		return fmt.Errorf("ams serve died during the run: %v (log: %s)", srv.err, logPath)
	}
	if n := rcv.bad.Load(); n > 0 {
		fmt.Fprintf(rep, "**%d requests to the receiver were not delivery envelopes.**\n\n", n)
	}
	stopSampling()
	swg.Wait()
	wSrv, wOwn, wOther := whole.cores3()
	fmt.Fprintf(rep, "Whole run: CPU cores used on average by ams %.2f, by this benchmark %.2f, by other processes on the machine %.2f", wSrv, wOwn, wOther)
	if wOther > 0.1 {
		fmt.Fprintf(rep, " (**other work on the machine: figures may be low; rerun**)")
	}
	fmt.Fprintf(rep, ".\n\n")
	err = srv.stop()
	stopped = true
	if err != nil {
		fmt.Fprintf(rep, "ams serve on SIGTERM: %v\n\n", err)
	}
	if lg, _ := os.ReadFile(logPath); len(lg) > 0 {
		// Warnings and errors, counted by message and error text.
		counts := map[string]int{}
		var first []string
		n := 0
		for _, l := range strings.Split(strings.TrimSpace(string(lg)), "\n") {
			var e struct{ Level, Msg, Err string }
			if json.Unmarshal([]byte(l), &e) != nil || (e.Level != "WARN" && e.Level != "ERROR") {
				continue
			}
			n++
			k := e.Level + " " + e.Msg
			if e.Err != "" {
				k += ": " + e.Err
			}
			if counts[k] == 0 {
				first = append(first, k)
			}
			counts[k]++
		}
		fmt.Fprintf(rep, "Server log: %d warning/error lines.\n", n)
		for _, k := range first {
			fmt.Fprintf(rep, "- %d × `%s`\n", counts[k], trunc(k, 300))
		}
	}
	fmt.Print(rep.String())
	return nil
}

func phase3(ctx context.Context, cfg *config, a *api, rcv *receiver, srv *server, dataDir string, rep *strings.Builder,
	rssBetween func(from, to time.Time) (int64, int64)) error {
	// The healthy webhook: a baseline trickle before anything else exists.
	healthy, err := a.createWebhook(ctx, rcv.url+"/p3/healthy")
	if err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	progress("phase 3: baseline trickle of %d messages/s to the healthy webhook for %s", cfg.trickle, cfg.baseline)
	var tsent atomic.Int64
	if _, f, _, _, ferr := paced(ctx, a, cfg.trickle, cfg.baseline, &tsent); f > 0 {
		return fmt.Errorf("baseline trickle: %d failed: %v", f, ferr)
	}
	bEnd := time.Now()
	waitFor(ctx, 30*time.Second, "baseline deliveries", func() (bool, string) {
		n := rcv.count("/p3/healthy")
		return n >= int(2*tsent.Load()), fmt.Sprintf("%d of %d", n, 2*tsent.Load())
	})
	baseCount := rcv.count("/p3/healthy")

	// The dead receiver: a loopback port that was free a moment ago.
	deadPort, err := freePort()
	if err != nil {
		return err
	}
	dead, err := a.createWebhook(ctx, fmt.Sprintf("http://127.0.0.1:%d/dead", deadPort))
	if err != nil {
		return err
	}
	// The healthy webhook is off during the burst so that the burst's
	// 100,000 events are queued for the dead receiver only (the healthy one
	// would otherwise have to work through the same number).
	if err := a.setActive(ctx, healthy, false); err != nil {
		return err
	}

	var db *sql.DB
	if cfg.observeDB {
		db, err = sql.Open("sqlite", "file:"+filepath.Join(dataDir, "ams.db")+"?mode=ro&_pragma=busy_timeout(5000)")
		if err != nil {
			return err
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
	}
	type qstate struct {
		attempts, firstDone, pending, neverTried int64
		lastAttempt                              string
	}
	queue := func() qstate {
		var q qstate
		if db != nil {
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			db.QueryRowContext(qctx, `SELECT count(*), coalesce(sum(attempt = 1), 0) FROM webhook_deliveries WHERE webhook_id = ?`, dead).Scan(&q.attempts, &q.firstDone)
			db.QueryRowContext(qctx, `SELECT count(*), coalesce(sum(attempts = 0), 0) FROM webhook_jobs WHERE webhook_id = ? AND state = 'pending'`, dead).Scan(&q.pending, &q.neverTried)
		}
		var page struct {
			Data []struct {
				Attempt   int     `json:"attempt"`
				Error     *string `json:"error"`
				CreatedAt string  `json:"created_at"`
			} `json:"data"`
		}
		if err := a.do(ctx, "GET", "/v1/webhooks/"+dead+"/deliveries?limit=1", nil, 200, &page); err == nil && len(page.Data) > 0 {
			d := page.Data[0]
			e := ""
			if d.Error != nil {
				e = *d.Error
			}
			q.lastAttempt = fmt.Sprintf("attempt %d, %s", d.Attempt, e)
		}
		return q
	}

	type row struct {
		t        time.Duration
		stage    string
		sent     int64
		rss, hwm int64
		q        qstate
		healthy  int
		dbMiB    float64
	}
	var rows []row
	var rmu sync.Mutex
	var stage atomic.Value
	stage.Store("burst")
	var burstSent, trickleSent atomic.Int64
	start := time.Now()
	m := meter(srv.pid)
	obsCtx, stopObs := context.WithCancel(ctx)
	var owg sync.WaitGroup
	defer func() { stopObs(); owg.Wait() }()
	owg.Add(1)
	go func() { // a row every 5 s, bounded by the context and 1 h
		defer owg.Done()
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for i := 0; i < 720; i++ {
			r, h := rssKiB(srv.pid)
			rr := row{t: time.Since(start).Round(time.Second), stage: stage.Load().(string), sent: burstSent.Load() + trickleSent.Load(),
				rss: r, hwm: h, q: queue(), healthy: rcv.count("/p3/healthy") - baseCount, dbMiB: dirMiB(dataDir)}
			rmu.Lock()
			rows = append(rows, rr)
			rmu.Unlock()
			select {
			case <-obsCtx.Done():
				return
			case <-t.C:
			}
		}
	}()

	progress("phase 3: %d messages (%d deliveries) for the dead receiver at 127.0.0.1:%d, %d senders", cfg.deadMsgs, 2*cfg.deadMsgs, deadPort, cfg.deadConc)
	msgs, failed, ferr, burstDur := flood(ctx, a, cfg.deadConc, cfg.burstTimeout, int64(cfg.deadMsgs), &burstSent)
	if failed > 0 {
		progress("phase 3: %d burst sends failed, first: %v", failed, ferr)
	}
	burstEnd := time.Now()
	progress("phase 3: burst of %d messages took %.1f s (%.0f/s); healthy webhook back on, trickle %d/s for %s", msgs, burstDur.Seconds(),
		float64(msgs)/burstDur.Seconds(), cfg.trickle, cfg.observe)
	burstSrv, burstOwn := m.cores()
	stage.Store("trickle")
	if err := a.setActive(ctx, healthy, true); err != nil {
		return err
	}
	m2 := meter(srv.pid)
	obsStart := time.Now()
	_, tFailed, _, tUnsent, tErr := paced(ctx, a, cfg.trickle, cfg.observe, &trickleSent)
	if tFailed > 0 {
		progress("phase 3: %d trickle sends failed, first: %v", tFailed, tErr)
	}
	obsSrv, obsOwn := m2.cores()
	want := baseCount + int(2*trickleSent.Load())
	waitFor(ctx, 30*time.Second, "trickle deliveries", func() (bool, string) {
		n := rcv.count("/p3/healthy")
		return n >= want, fmt.Sprintf("%d of %d", n, want)
	})
	obsEnd := time.Now()
	stopObs()
	owg.Wait()
	final := queue()

	var base, during []time.Duration
	healthyFirst := rcv.firstArrivals("/p3/healthy")
	for _, x := range healthyFirst {
		if x.created.Before(bEnd) {
			base = append(base, x.at.Sub(x.created))
		} else {
			during = append(during, x.at.Sub(x.created))
		}
	}
	_, hDups, _ := rcv.check("/p3/healthy")
	lo, hi := rssBetween(start, obsEnd)
	bLo, bHi := rssBetween(start, burstEnd)
	oLo, oHi := rssBetween(obsStart, obsEnd)

	fmt.Fprintf(rep, "## Phase 3: dead receiver (%d deliveries queued to a closed loopback port)\n\n", 2*msgs)
	fmt.Fprintf(rep, "Burst: %d messages by %d clients in %.1f s (%.0f messages/s); the dead webhook (127.0.0.1:%d, connection refused) is the only one subscribed during it.\n",
		msgs, cfg.deadConc, burstDur.Seconds(), float64(msgs)/burstDur.Seconds(), deadPort)
	if msgs < int64(cfg.deadMsgs) {
		fmt.Fprintf(rep, "**The burst was cut at its time limit (%s): %d of the %d messages were sent, so %d deliveries, not %d, were queued for the dead receiver.**",
			cfg.burstTimeout, msgs, cfg.deadMsgs, 2*msgs, 2*cfg.deadMsgs)
		if failed > 0 {
			fmt.Fprintf(rep, " %d sends failed (first: `%s`).", failed, trunc(fmt.Sprint(ferr), 200))
		}
		fmt.Fprintln(rep)
	}
	fmt.Fprintf(rep, "Then the healthy webhook is turned back on and receives a trickle of %d messages/s (%d deliveries/s; each of these events is also queued for the dead one) for %s.\n\n",
		cfg.trickle, 2*cfg.trickle, cfg.observe)
	fmt.Fprintf(rep, "| t | stage | messages sent | dead: attempts recorded (first attempts) | dead: pending jobs (never tried) | dead: latest attempt | healthy: deliveries | ams RSS | peak RSS (VmHWM) | data dir |\n")
	fmt.Fprintf(rep, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(rep, "| %s | %s | %d | %d (%d) | %d (%d) | %s | %d | %.1f MiB | %.1f MiB | %.0f MiB |\n", r.t, r.stage, r.sent,
			r.q.attempts, r.q.firstDone, r.q.pending, r.q.neverTried, r.q.lastAttempt, r.healthy, float64(r.rss)/1024, float64(r.hwm)/1024, r.dbMiB)
	}
	fmt.Fprintln(rep)
	fmt.Fprintf(rep, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(rep, "| **server RSS min / max, whole phase (1 s samples)** | **%.1f / %.1f MiB** |\n", float64(lo)/1024, float64(hi)/1024)
	fmt.Fprintf(rep, "| RSS during the burst | %.1f – %.1f MiB |\n", float64(bLo)/1024, float64(bHi)/1024)
	fmt.Fprintf(rep, "| RSS while the backlog waits (trickle) | %.1f – %.1f MiB |\n", float64(oLo)/1024, float64(oHi)/1024)
	fmt.Fprintf(rep, "| dead webhook at the end: attempts recorded (first attempts), pending jobs (never tried) | %d (%d), %d (%d) |\n",
		final.attempts, final.firstDone, final.pending, final.neverTried)
	fmt.Fprintf(rep, "| CPU cores used: ams / bench, burst | %.2f / %.2f |\n", burstSrv, burstOwn)
	fmt.Fprintf(rep, "| CPU cores used: ams / bench, trickle | %.2f / %.2f |\n\n", obsSrv, obsOwn)
	fmt.Fprintf(rep, "Healthy webhook latency (created_at → arrival), %d messages/s:\n\n", cfg.trickle)
	fmt.Fprintln(rep, latHeader)
	fmt.Fprintln(rep, statsMissing(base, int(2*tsent.Load())-len(base)).row("baseline (no dead webhook)"))
	fmt.Fprintln(rep, statsMissing(during, int(2*trickleSent.Load())-len(during)).row("**while the dead backlog waits**"))
	fmt.Fprintf(rep, "\nHealthy deliveries expected %d, received %d (distinct %d), duplicated %d%s; trickle sends failed %d, not sent %d.\n\n",
		want, rcv.count("/p3/healthy"), len(healthyFirst), hDups, rcv.dupNote("/p3/healthy"), tFailed, tUnsent)
	return nil
}

func dirMiB(dir string) float64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if i, err := e.Info(); err == nil && !e.IsDir() {
			n += i.Size()
		}
	}
	return float64(n) / (1 << 20)
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
	return max(1, strings.Count(string(b), "\nprocessor")+boolInt(strings.HasPrefix(string(b), "processor")))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
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
