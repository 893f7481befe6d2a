// Package e2e runs the real ams binary and drives it from the outside: the
// CLI, `ams serve --dev`, graceful shutdown and restart on the same store.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/testing/wait"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// amsBinary builds ./cmd/ams once per test run.
func amsBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ams-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "ams")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/ams").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// run runs an ams subcommand to completion and returns its stdout.
func run(t *testing.T, dataDir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(amsBinary(t), args...)
	cmd.Env = append(os.Environ(), "AMS_DATA_DIR="+dataDir)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ams %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// server is a running `ams serve`.
type server struct {
	cmd    *exec.Cmd
	base   string
	stdout string // what it printed before it was ready
	logs   *bytes.Buffer
}

var baseRE = regexp.MustCompile(`ams is running in dev mode at (http://\S+)`)

// startServe starts `ams serve --dev` on a free port and waits until it
// has printed its dev credentials.
func startServe(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	cmd := exec.Command(amsBinary(t), append([]string{"serve", "--dev", "--addr", "127.0.0.1:0", "--shutdown-timeout", "20s"}, extra...)...)
	cmd.Env = append(os.Environ(), "AMS_DATA_DIR="+dataDir)
	logs := &bytes.Buffer{}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, logs: logs}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
	})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), `"message": "Hello! What can you do?"`) {
				s.stdout = b.String()
				ready <- nil
				io.Copy(io.Discard, out)
				return
			}
		}
		ready <- fmt.Errorf("ams serve ended before it was ready:\n%s\n%s", b.String(), logs.String())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ams serve not ready after 30s; stderr:\n%s", logs.String())
	}
	m := baseRE.FindStringSubmatch(s.stdout)
	if m == nil {
		t.Fatalf("no base URL in dev output:\n%s", s.stdout)
	}
	s.base = m[1]
	// The dev account is on the standard plan, 60 requests a minute. The
	// tests poll the API while they wait (up to 20 requests a second), and
	// on a loaded machine a wait can outlast a minute's allowance: twice a
	// test read a 429 instead of what it waited for. Tests of the limits
	// use accounts of their own (ratelimit_test.go, authcache_test.go).
	run(t, dataDir, "", "users", "update", "--email", "dev@example.com", "--plan", "enterprise", "--rpm", "1000000", "--rpd", "100000000")
	return s
}

func (s *server) field(t *testing.T, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s.stdout)
	if m == nil {
		t.Fatalf("%s not found in dev output:\n%s", re, s.stdout)
	}
	return m[1]
}

func request(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestServeDevCLIAndGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir)
	key := s.field(t, `API key\s+(ams_sk_\w+)`)
	asst := s.field(t, `assistant\s+(ast_\w+)`)

	// The printed walkthrough works: a message gets a reply.
	st, reply := request(t, "POST", s.base+"/v1/messages", key, `{"assistant_id":"`+asst+`","message":"Hello! What can you do?"}`)
	if st != 201 || reply["direction"] != "outbound" {
		t.Fatalf("dev walkthrough: %d %v", st, reply)
	}

	// The CLI works on the same store while the server runs.
	if out := run(t, dir, "", "migrate"); out != schemaVersion(t, "sqlite") {
		t.Fatalf("migrate printed %q", out)
	}
	uid := strings.TrimSpace(run(t, dir, "", "users", "create", "--email", "cli@example.com", "--plan", "professional"))
	if !strings.HasPrefix(uid, "usr_") {
		t.Fatalf("users create printed %q", uid)
	}
	secret := strings.TrimSpace(run(t, dir, "", "keys", "create", "--email", "cli@example.com", "--name", "script", "--permissions", "read,messages"))
	if !regexp.MustCompile(`^ams_sk_[0-9A-Za-z]{40}$`).MatchString(secret) {
		t.Fatalf("keys create printed %q (want only the key)", secret)
	}
	aid := strings.TrimSpace(run(t, dir, "", "assistants", "create", "--email", "cli@example.com", "--name", "Helper"))
	st, _ = request(t, "POST", s.base+"/v1/messages", secret, `{"assistant_id":"`+aid+`","message":"hi"}`)
	if st != 201 {
		t.Fatalf("CLI key and assistant: %d", st)
	}
	st, got := request(t, "GET", s.base+"/v1/assistants", secret, "")
	if st != 200 || len(got["data"].([]any)) != 1 {
		t.Fatalf("CLI user's assistants: %d %v", st, got)
	}
	cli := run(t, dir, "", "oauth-clients", "create", "--email", "cli@example.com", "--name", "Script app", "--redirect-uri", "http://127.0.0.1:9999/callback")
	if !regexp.MustCompile(`(?m)^client_id cli_\w+\nclient_secret ams_cs_\w+\n$`).MatchString(cli) {
		t.Fatalf("oauth-clients create printed %q", cli)
	}
	resp, err := http.Get(s.base + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if md["issuer"] != s.base || md["token_endpoint"] != s.base+"/oauth/token" {
		t.Fatalf("authorization server metadata: %v", md)
	}
	// A dev password is printed for the login and consent pages (the
	// oauth package's tests sign in through them).
	if devPW := s.field(t, `password\s+(\w+)`); len(devPW) != 16 {
		t.Fatalf("dev password %q", devPW)
	}
	list := run(t, dir, "", "keys", "list", "--email", "cli@example.com")
	keyID := regexp.MustCompile(`(key_\w+)\s+script`).FindStringSubmatch(list)
	if keyID == nil || strings.Contains(list, secret) || !strings.Contains(list, "read,messages") {
		t.Fatalf("keys list:\n%s", list)
	}
	if out := run(t, dir, "", "users", "update", "--email", "cli@example.com", "--plan", "enterprise", "--rpm", "5000"); !strings.Contains(out, "rpm=5000") {
		t.Fatalf("users update: %s", out)
	}
	run(t, dir, "", "keys", "revoke", keyID[1])
	st, body := request(t, "GET", s.base+"/v1/assistants", secret, "")
	if st != 401 || body["error"].(map[string]any)["code"] != "api_key_revoked" {
		t.Fatalf("revoked key: %d %v", st, body)
	}

	// SIGTERM while a request is in flight: the request finishes and its
	// message is stored.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", s.base+"/v1/messages", pr)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	type result struct {
		status int
		body   map[string]any
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		done <- result{status: resp.StatusCode, body: m}
	}()
	fmt.Fprintf(pw, `{"assistant_id":"%s",`, asst)
	time.Sleep(200 * time.Millisecond) // the server is now reading the body
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	fmt.Fprint(pw, `"message":"sent during shutdown"}`)
	pw.Close()
	res := <-done
	if res.err != nil || res.status != 201 {
		t.Fatalf("in-flight request during shutdown: %d %v %v", res.status, res.body, res.err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- s.cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("ams serve exit: %v\n%s", err, s.logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ams serve did not stop after SIGTERM")
	}
	if !strings.Contains(s.logs.String(), `"msg":"stopped"`) {
		t.Fatalf("no clean stop in the log:\n%s", s.logs.String())
	}

	// Restart on the same data: the message accepted during shutdown is
	// there. --dev prints the same key again (derived from the store's
	// token key), so a second dev process on the store does not cut off
	// the first's key.
	s2 := startServe(t, dir)
	key2 := s2.field(t, `API key\s+(ams_sk_\w+)`)
	if key2 != key {
		t.Fatalf("dev key changed across restarts: %s then %s", key, key2)
	}
	id := res.body["id"].(string)
	st, m := request(t, "GET", s2.base+"/v1/messages/"+id, key2, "")
	if st != 200 || m["conversation_id"] != res.body["conversation_id"] {
		t.Fatalf("message after restart: %d %v", st, m)
	}
	if s2.field(t, `assistant\s+(ast_\w+)`) != asst {
		t.Fatal("dev assistant not reused across restarts")
	}
}

// TestKillNineLosesNoDelivery kills `ams serve` with -9 while deliveries
// are pending (the receiver fails at first), restarts it, and checks that
// every event still arrives, with its event id, and that the restarted
// process delivers each one once.
func TestKillNineLosesNoDelivery(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	delivered := map[string]int{} // event id -> 2xx deliveries
	attempts := 0
	// Until the kill, the receiver answers 503. After it, a second receiver
	// on the same address answers 200. The first one is closed before the
	// second listens: Close waits for the requests the killed process had
	// already sent and drops its connections, so what the second receiver
	// counts comes from the restarted process only. (A request the killed
	// process sent just before dying is one the receiver may see answered
	// 2xx once more: at least once, never lost.)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		attempts++
		mu.Unlock()
		w.WriteHeader(503)
	}))
	defer failing.Close()
	addr := failing.Listener.Addr().String()
	args := []string{"--webhook-retry-schedule", "0s,1s,1s,1s,1s", "--webhook-lease", "6s"}
	s := startServe(t, dir, args...)
	key := s.field(t, `API key\s+(ams_sk_\w+)`)
	asst := s.field(t, `assistant\s+(ast_\w+)`)
	st, wh := request(t, "POST", s.base+"/v1/webhooks", key, `{"url":"`+failing.URL+`","events":["message.created"],"secret":"0123456789abcdef0123"}`)
	if st != 201 {
		t.Fatalf("create webhook: %d %v", st, wh)
	}
	for i := 0; i < 10; i++ {
		if st, m := request(t, "POST", s.base+"/v1/messages", key, `{"assistant_id":"`+asst+`","message":"hi"}`); st != 201 {
			t.Fatalf("send: %d %v", st, m)
		}
	}
	// Let some first attempts fail, then kill the process mid-flight.
	wait.Until(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return attempts >= 5
	})
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
	failing.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on the webhook's address: %v", err)
	}
	rc := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		delivered[r.Header.Get("Webhook-Id")]++
	}))
	rc.Listener.Close()
	rc.Listener = ln
	rc.Start()
	defer rc.Close()

	s2 := startServe(t, dir, args...)
	key2 := s2.field(t, `API key\s+(ams_sk_\w+)`)
	_, evs := request(t, "GET", s2.base+"/v1/events?type=message.created&limit=100", key2, "")
	var want []string
	for _, e := range evs["data"].([]any) {
		want = append(want, e.(map[string]any)["id"].(string))
	}
	if len(want) != 20 {
		t.Fatalf("%d message.created events stored, want 20", len(want))
	}
	missing := 0
	if !wait.Until(func() bool {
		mu.Lock()
		defer mu.Unlock()
		missing = 0
		for _, id := range want {
			if delivered[id] == 0 {
				missing++
			}
		}
		return missing == 0
	}) {
		t.Fatalf("%d of 20 events never arrived after the restart\n%s", missing, s2.logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range delivered {
		if !slices.Contains(want, id) {
			t.Fatalf("delivered an unknown event id %s", id)
		}
		if n != 1 {
			t.Errorf("event %s delivered %d times after the restart\n%s", id, n, s2.logs.String())
		}
	}
}

// schemaVersion is what `ams migrate` prints for a fresh store of the
// engine (sqlite or postgres): its newest migration's number.
func schemaVersion(t *testing.T, engine string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", engine, "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	latest := 0
	for _, e := range entries {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "%d_", &n); err == nil && n > latest {
			latest = n
		}
	}
	return fmt.Sprintf("schema version %d\n", latest)
}
