// Command turns is the benchmark of issue 29's turns (docs/benchmarks.md,
// "Issue 29"). Given an ams binary, it starts `ams serve --dev` on a fresh
// SQLite data directory (or PostgreSQL with -db) with a webhook to an
// in-process receiver subscribed to turn.completed, and measures:
//
//  1. background: POST /v1/messages with "background": true at a steady
//     -rate (turns a second, each a new conversation) for -duration; the
//     latency of each turn is from just before its POST is sent to the
//     arrival of its turn.completed at the receiver (p50, p99, max);
//  2. queue: -convs conversations, each with a first turn, then -queued
//     background sends to each, all at once (multitask_strategy enqueue):
//     the turns run one at a time per conversation, in order; the figure
//     is turns completed per second, from the first send to the last
//     turn.completed.
//
// It prints a markdown report on stdout and progress on stderr. All
// traffic stays on 127.0.0.1.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	amsBin := flag.String("ams", "", "path of the ams binary (required)")
	db := flag.String("db", "", "PostgreSQL URL (empty: SQLite in a temporary directory)")
	rate := flag.Int("rate", 100, "background turns a second in phase 1")
	duration := flag.Duration("duration", 20*time.Second, "how long phase 1 sends")
	convs := flag.Int("convs", 20, "conversations of phase 2")
	queued := flag.Int("queued", 10, "queued turns per conversation in phase 2")
	flag.Parse()
	if *amsBin == "" {
		log.Fatal("-ams is required")
	}
	rec := newReceiver()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, rec)
	dir, err := os.MkdirTemp("", "ams-bench-turns")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	env := append(os.Environ(), "AMS_DATA_DIR="+dir, "AMS_MAX_CONCURRENT_TURNS_PER_ACCOUNT=100000", "AMS_LOG_LEVEL=warn")
	if *db != "" {
		env = append(env, "AMS_DATABASE_URL="+*db)
	}
	cmd := exec.Command(*amsBin, "serve", "--dev", "--addr", "127.0.0.1:0")
	cmd.Env = env
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	var printed strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), `"message": "Hello! What can you do?"`) {
			break
		}
	}
	go io.Copy(io.Discard, out)
	field := func(re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(printed.String())
		if m == nil {
			log.Fatalf("%s not in:\n%s", re, printed.String())
		}
		return m[1]
	}
	base, key, asst := field(`ams is running in dev mode at (http://\S+)`), field(`API key\s+(ams_sk_\w+)`), field(`assistant\s+(ast_\w+)`)
	cli := exec.Command(*amsBin, "users", "update", "--email", "dev@example.com", "--plan", "enterprise", "--rpm", "100000000", "--rpd", "1000000000")
	cli.Env = env
	if b, err := cli.CombinedOutput(); err != nil {
		log.Fatalf("users update: %v %s", err, b)
	}
	api := &client{base: base, key: key, c: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	var wh map[string]any
	if err := api.do("POST", "/v1/webhooks", fmt.Sprintf(`{"url":"http://%s/hook","events":["turn.completed"],"secret":"bench-turns-secret-0123"}`, ln.Addr()), 201, &wh); err != nil {
		log.Fatal(err)
	}

	fmt.Printf("| phase | figure |\n|---|---|\n")
	// Phase 1: background turns at a steady rate.
	log.Printf("background: %d turns/s for %s", *rate, *duration)
	var mu sync.Mutex
	sent := map[string]time.Time{}
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	stop := time.After(*duration)
	errs := 0
loop:
	for {
		select {
		case <-stop:
			break loop
		case <-tick.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := time.Now()
			var t map[string]any
			if err := api.do("POST", "/v1/messages", fmt.Sprintf(`{"assistant_id":%q,"message":"Hello there","background":true}`, asst), 202, &t); err != nil {
				mu.Lock()
				errs++
				mu.Unlock()
				return
			}
			mu.Lock()
			sent[t["id"].(string)] = at
			mu.Unlock()
		}()
	}
	tick.Stop()
	wg.Wait()
	ids := make([]string, 0, len(sent))
	for id := range sent {
		ids = append(ids, id)
	}
	arrived := rec.wait(ids, 120*time.Second)
	var lat []time.Duration
	for id, at := range sent {
		if a, ok := arrived[id]; ok {
			lat = append(lat, a.Sub(at))
		}
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	fmt.Printf("| background POST → turn.completed at the receiver, %d turns/s for %s | p50 %s, p99 %s, max %s (%d turns, %d arrived, %d POST errors) |\n",
		*rate, *duration, ms(q(0.50)), ms(q(0.99)), ms(q(1)), len(sent), len(lat), errs)

	// Phase 2: queued turns drained.
	log.Printf("queue: %d conversations × %d queued turns", *convs, *queued)
	conv := make([]string, *convs)
	for i := range conv {
		var m map[string]any
		if err := api.do("POST", "/v1/messages", fmt.Sprintf(`{"assistant_id":%q,"message":"Start %d"}`, asst, i), 201, &m); err != nil {
			log.Fatal(err)
		}
		conv[i] = m["conversation_id"].(string)
	}
	var qmu sync.Mutex
	var qids []string
	began := time.Now()
	for j := range *queued {
		for i := range conv {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var t map[string]any
				body := fmt.Sprintf(`{"assistant_id":%q,"conversation_id":%q,"message":"Queued %d","background":true}`, asst, conv[i], j)
				if err := api.do("POST", "/v1/messages", body, 202, &t); err != nil {
					log.Print(err)
					return
				}
				qmu.Lock()
				qids = append(qids, t["id"].(string))
				qmu.Unlock()
			}()
		}
	}
	wg.Wait()
	arrived = rec.wait(qids, 300*time.Second)
	var last time.Time
	for _, id := range qids {
		if a := arrived[id]; a.After(last) {
			last = a
		}
	}
	n := len(arrived)
	el := last.Sub(began)
	fmt.Printf("| %d conversations × %d queued turns drained | %.0f turns/s (%d of %d completed in %s) |\n",
		*convs, *queued, float64(n)/el.Seconds(), n, len(qids), ms(el))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// receiver records the arrival of each turn.completed by turn id.
type receiver struct {
	mu      sync.Mutex
	arrived map[string]time.Time
	changed chan struct{}
}

func newReceiver() *receiver {
	return &receiver{arrived: map[string]time.Time{}, changed: make(chan struct{})}
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	var e struct {
		Type   string `json:"type"`
		TurnID string `json:"turn_id"`
	}
	b, _ := io.ReadAll(req.Body)
	json.Unmarshal(b, &e)
	w.WriteHeader(200)
	if e.Type != "turn.completed" {
		return
	}
	r.mu.Lock()
	if _, ok := r.arrived[e.TurnID]; !ok {
		r.arrived[e.TurnID] = at
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// wait returns the arrivals of ids once all have arrived, or after max.
func (r *receiver) wait(ids []string, max time.Duration) map[string]time.Time {
	deadline := time.After(max)
	for {
		r.mu.Lock()
		got := map[string]time.Time{}
		for _, id := range ids {
			if a, ok := r.arrived[id]; ok {
				got[id] = a
			}
		}
		ch := r.changed
		r.mu.Unlock()
		if len(got) == len(ids) {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			return got
		}
	}
}

type client struct {
	base, key string
	c         *http.Client
}

func (a *client) do(method, path, body string, want int, out any) error {
	req, _ := http.NewRequestWithContext(context.Background(), method, a.base+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}
