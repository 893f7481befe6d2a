// Command delivery is the delivery benchmark of issue 13
// (docs/benchmarks.md, "Issue 13"). It is given an ams binary
// (scripts/bench-delivery.sh builds one) and measures, against in-process
// receivers on 127.0.0.1:
//
//  1. cross: two `ams serve` processes on one fresh PostgreSQL schema, the
//     first with --webhook-concurrency 0 (it takes the requests and sends no
//     deliveries), the second delivering; messages go to the first at a
//     steady rate (100 a second: 200 message.created events a second) for
//     -duration, and the latency from each event's created_at to the
//     arrival of its first attempt is the cross-process wake-up plus the
//     delivery;
//  2. noisy: one process (SQLite, or PostgreSQL with -noisy-engine pg);
//     account A has 100 webhooks to a receiver that answers after 4.5 s and
//     a backlog of 1,000 deliveries; account B has one webhook to a receiver
//     that answers at once and sends 10 messages a second for -duration; the
//     latency of B's first attempts is the noisy-neighbour figure.
//
// It prints a markdown report on stdout and progress on stderr. All traffic
// stays on 127.0.0.1; every wait is bounded.
package main

import (
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
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

type config struct {
	ams, db, label, phases, noisyEngine, serveArgs string
	duration                                       time.Duration
	rate                                           int
}

func main() {
	cfg := &config{}
	flag.StringVar(&cfg.ams, "ams", "", "path of the ams binary (required)")
	flag.StringVar(&cfg.db, "db", "", "PostgreSQL URL (a fresh schema is made per phase and dropped after)")
	flag.StringVar(&cfg.label, "label", "", "what the ams binary is, printed in the report")
	flag.StringVar(&cfg.phases, "phases", "cross,noisy", "phases to run, comma-separated")
	flag.StringVar(&cfg.noisyEngine, "noisy-engine", "sqlite", "engine of the noisy phase: sqlite or pg")
	flag.StringVar(&cfg.serveArgs, "serve-args", "", "extra arguments for ams serve, space-separated")
	flag.DurationVar(&cfg.duration, "duration", 20*time.Second, "how long each phase sends")
	flag.IntVar(&cfg.rate, "rate", 100, "cross: messages a second (each makes 2 events)")
	flag.Parse()
	if cfg.ams == "" {
		log.Fatal("-ams is required")
	}
	ctx := context.Background()
	fmt.Printf("## Delivery benchmark (issue 13)\n\nams: %s\n\n", orDefault(cfg.label, cfg.ams))
	for _, ph := range strings.Split(cfg.phases, ",") {
		var err error
		switch ph {
		case "cross":
			err = cross(ctx, cfg)
		case "noisy":
			err = noisy(ctx, cfg)
		default:
			err = fmt.Errorf("unknown phase %q", ph)
		}
		if err != nil {
			log.Fatalf("%s: %v", ph, err)
		}
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// ---------------------------------------------------------------- receiver

// receiver records, per path prefix, each first arrival's latency from
// the event's created_at; paths starting with /slow answer after 4.5 s.
type receiver struct {
	url  string
	mu   sync.Mutex
	seen map[string]bool
	lat  map[string][]time.Duration
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String(), seen: map[string]bool{}, lat: map[string][]time.Duration{}}
	go http.Serve(ln, r)
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	var env struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"created_at"`
	}
	if err := json.NewDecoder(req.Body).Decode(&env); err != nil {
		w.WriteHeader(400)
		return
	}
	key := req.URL.Path
	if strings.HasPrefix(key, "/slow") {
		key = "/slow"
	}
	r.mu.Lock()
	if !r.seen[key+env.ID] {
		r.seen[key+env.ID] = true
		r.lat[key] = append(r.lat[key], at.Sub(env.CreatedAt))
	}
	r.mu.Unlock()
	if key == "/slow" {
		select {
		case <-time.After(4500 * time.Millisecond):
		case <-req.Context().Done():
		}
	}
}

func (r *receiver) latencies(key string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lat[key])
}

// ---------------------------------------------------------------- processes

type proc struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
	log  string
}

func startProc(ctx context.Context, cfg *config, env []string, logPath string, extra ...string) (*proc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	args := append([]string{"serve", "--dev", "--addr", addr, "--log-level", "warn", "--shutdown-timeout", "5s"}, extra...)
	if cfg.serveArgs != "" {
		args = append(args, strings.Fields(cfg.serveArgs)...)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.ams, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, base: "http://" + addr, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); logf.Close(); close(p.done) }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := http.Get(p.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("ams serve exited at start (log %s)", logPath)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, errors.New("ams serve not ready in 30 s")
		}
	}
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

func cli(cfg *config, env []string, args ...string) (string, error) {
	cmd := exec.Command(cfg.ams, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("ams %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// environment returns the processes' environment: a data directory, and
// for PostgreSQL a fresh schema (dropped by the returned func) and a key.
func environment(cfg *config, pg bool, work string) ([]string, func(), error) {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AMS_") {
			env = append(env, kv)
		}
	}
	// The load sends more turns at once than an account may hold by
	// default (--max-concurrent-turns-per-account): as an environment
	// variable, which builds older than the flag ignore.
	env = append(env, "AMS_DATA_DIR="+work, "AMS_MAX_CONCURRENT_TURNS_PER_ACCOUNT=1000000")
	if !pg {
		return env, func() {}, nil
	}
	if cfg.db == "" {
		return nil, nil, errors.New("-db is required for PostgreSQL")
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "bench_delivery_" + hex.EncodeToString(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, cfg.db)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, nil, err
	}
	drop := func() {
		if c, err := pgx.Connect(ctx, cfg.db); err == nil {
			c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c.Close(ctx)
		}
	}
	sep := "?"
	if strings.Contains(cfg.db, "?") {
		sep = "&"
	}
	key := make([]byte, 32)
	rand.Read(key)
	env = append(env, "AMS_DATABASE_URL="+cfg.db+sep+"search_path="+url.QueryEscape(schema),
		"AMS_SECRET_KEY="+base64.StdEncoding.EncodeToString(key))
	return env, drop, nil
}

// account makes an enterprise account with limits far above the load and
// returns its API key and an assistant.
func account(cfg *config, env []string, email string) (key, asst string, err error) {
	steps := [][]string{
		{"users", "create", "--email", email, "--plan", "enterprise"},
		{"users", "update", "--email", email, "--rpm", "1000000000", "--rpd", "1000000000"},
	}
	for _, s := range steps {
		if _, err := cli(cfg, env, s...); err != nil {
			return "", "", err
		}
	}
	if key, err = cli(cfg, env, "keys", "create", "--email", email, "--name", "bench", "--permissions", "read,write,messages"); err != nil {
		return "", "", err
	}
	asst, err = cli(cfg, env, "assistants", "create", "--email", email, "--name", "Bench")
	return key, asst, err
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func call(key, method, u, body string, want int, out any) error {
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, u, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func webhook(key, base, url string) error {
	return call(key, "POST", base+"/v1/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.created"],"secret":"bench-secret-0123456789"}`, url), 201, nil)
}

// send posts messages at rate a second for d, as one client per message.
func send(key, base, asst string, rate int, d time.Duration) (int, error) {
	body := fmt.Sprintf(`{"assistant_id":%q,"message":"Hello! What can you do?"}`, asst)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		<-tick.C
		wg.Go(func() {
			if err := call(key, "POST", base+"/v1/messages", body, 201, nil); err != nil {
				mu.Lock()
				firstErr = cmpOr(firstErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return n, firstErr
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// wait waits until the receiver has n first arrivals under key, up to max.
func wait(r *receiver, key string, n int, max time.Duration) {
	for end := time.Now().Add(max); time.Now().Before(end) && len(r.latencies(key)) < n; {
		time.Sleep(50 * time.Millisecond)
	}
}

func pct(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func report(title string, lat []time.Duration, want int) {
	slices.Sort(lat)
	fmt.Printf("| %s | %d of %d | %s | %s | %s |\n", title, len(lat), want, ms(pct(lat, 0.5)), ms(pct(lat, 0.99)), ms(pct(lat, 1)))
}

// ---------------------------------------------------------------- phases

func cross(ctx context.Context, cfg *config) error {
	work, err := os.MkdirTemp("", "bench-delivery-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	env, drop, err := environment(cfg, true, work)
	if err != nil {
		return err
	}
	defer drop()
	if _, err := cli(cfg, env, "migrate"); err != nil {
		return err
	}
	key, asst, err := account(cfg, env, "cross@example.com")
	if err != nil {
		return err
	}
	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	api, err := startProc(ctx, cfg, env, filepath.Join(work, "api.log"), "--webhook-concurrency", "0")
	if err != nil {
		return err
	}
	defer api.stop()
	worker, err := startProc(ctx, cfg, env, filepath.Join(work, "worker.log"))
	if err != nil {
		return err
	}
	defer worker.stop()
	if err := webhook(key, api.base, rcv.url+"/cross"); err != nil {
		return err
	}
	progress("cross: %d messages a second for %v to the API-only process", cfg.rate, cfg.duration)
	n, err := send(key, api.base, asst, cfg.rate, cfg.duration)
	if err != nil {
		return err
	}
	wait(rcv, "/cross", 2*n, 60*time.Second)
	fmt.Printf("### Cross-process first attempts (PostgreSQL, 2 processes, %d events/s for %v)\n\n", 2*cfg.rate, cfg.duration)
	fmt.Println("Events committed by a process with `--webhook-concurrency 0`, delivered by the other; latency from the event's `created_at` to its first attempt's arrival.")
	fmt.Println()
	fmt.Println("| | arrived | p50 | p99 | max |\n|---|---|---|---|---|")
	report("first attempts", rcv.latencies("/cross"), 2*n)
	fmt.Println()
	return nil
}

func noisy(ctx context.Context, cfg *config) error {
	work, err := os.MkdirTemp("", "bench-delivery-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	pg := cfg.noisyEngine == "pg"
	env, drop, err := environment(cfg, pg, work)
	if err != nil {
		return err
	}
	defer drop()
	if _, err := cli(cfg, env, "migrate"); err != nil {
		return err
	}
	keyA, asstA, err := account(cfg, env, "noisy@example.com")
	if err != nil {
		return err
	}
	keyB, asstB, err := account(cfg, env, "quiet@example.com")
	if err != nil {
		return err
	}
	// Since issue 13 an account has at most 50 webhooks unless it is an
	// enterprise account with a cap of its own; older binaries have no cap.
	if help, _ := cli(cfg, env, "users", "update", "--help"); strings.Contains(help, "--max-webhooks") {
		if _, err := cli(cfg, env, "users", "update", "--email", "noisy@example.com", "--max-webhooks", "100"); err != nil {
			return err
		}
	}
	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	p, err := startProc(ctx, cfg, env, filepath.Join(work, "ams.log"))
	if err != nil {
		return err
	}
	defer p.stop()
	for i := range 100 {
		if err := webhook(keyA, p.base, fmt.Sprintf("%s/slow/%d", rcv.url, i)); err != nil {
			return fmt.Errorf("account A's webhook %d: %w", i+1, err)
		}
	}
	if err := webhook(keyB, p.base, rcv.url+"/quiet"); err != nil {
		return err
	}
	progress("noisy: account A queues 1,000 deliveries to 100 webhooks answering in 4.5 s")
	if _, err := send(keyA, p.base, asstA, 50, 100*time.Millisecond); err != nil { // 5 messages: 10 events × 100 webhooks
		return err
	}
	time.Sleep(time.Second)
	progress("noisy: account B sends 10 messages a second for %v", cfg.duration)
	n, err := send(keyB, p.base, asstB, 10, cfg.duration)
	if err != nil {
		return err
	}
	wait(rcv, "/quiet", 2*n, 120*time.Second)
	engine := "SQLite"
	if pg {
		engine = "PostgreSQL"
	}
	fmt.Printf("### Noisy neighbour (%s, one process, defaults)\n\n", engine)
	fmt.Println("Account A: 100 webhooks to a receiver answering in 4.5 s, 1,000 deliveries queued; account B: one webhook answering at once, 20 events a second. Latency of B's first attempts from the event's `created_at`.")
	fmt.Println()
	fmt.Println("| | arrived | p50 | p99 | max |\n|---|---|---|---|---|")
	report("account B", rcv.latencies("/quiet"), 2*n)
	fmt.Println()
	return nil
}
