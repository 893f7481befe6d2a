package http_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/postgres"
	"github.com/jackc/pgx/v5"
)

// Faults answer cleanly (issue 26, point 8; L2, L3): a database that
// cannot be reached or cannot write answers 503 with Retry-After and a
// clear code, not 500; a request that waits on a database that does not
// answer gives up at its deadline; and /readyz fails while writes fail.

// wantUnavailable checks that r is the documented 503 answer with code,
// Retry-After, and no internal text.
func wantUnavailable(t *testing.T, what string, r *amstest.Response, code string) {
	t.Helper()
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("%s: %d %s, want 503 %s", what, r.Status, r.Body, code)
	}
	e, _ := r.JSON(t)["error"].(map[string]any)
	if e["type"] != "api_error" || e["code"] != code || e["message"] == "" {
		t.Fatalf("%s: error %v, want type api_error, code %s", what, e, code)
	}
	if ra := r.Header.Get("Retry-After"); ra == "" || strings.Trim(ra, "0123456789") != "" {
		t.Fatalf("%s: Retry-After %q, want a number of seconds", what, ra)
	}
	body := strings.ToLower(string(r.Body))
	for _, leak := range []string{"sqlite", "full", "disk", "locked", "postgres", "pgx", "sqlstate", "dial", "127.0.0.1", "eof", "connect", "deadline", "context"} {
		if strings.Contains(body, leak) {
			t.Fatalf("%s: the answer shows internal text (%q): %s", what, leak, r.Body)
		}
	}
}

// task is the body of POST /v1/tasks for the fixture's assistant.
func task(f *amstest.Fixture, title string) string {
	return fmt.Sprintf(`{"assistant_id":%q,"title":%q}`, f.Assistant.ID, title)
}

// readyStatus returns GET /readyz's status.
func readyStatus(f *amstest.Fixture) int { return f.Do("GET", "/readyz", "", "").Status }

// waitReady waits until /readyz answers 200.
func waitReady(t *testing.T, f *amstest.Fixture) {
	t.Helper()
	wait.Eventually(t, "/readyz to come back to 200", func() bool { return readyStatus(f) == 200 })
}

// countTasks returns the number of the fixture account's tasks, through
// the API.
func countTasks(t *testing.T, f *amstest.Fixture) int {
	t.Helper()
	r := f.Do("GET", "/v1/tasks?limit=100", f.Key, "")
	if r.Status != 200 {
		t.Fatalf("list tasks: %d %s", r.Status, r.Body)
	}
	data, _ := r.JSON(t)["data"].([]any)
	return len(data)
}

// TestFullDiskAnswers503 (SQLite): the database file cannot grow, as on
// a full disk. Writes answer 503 service_unavailable with Retry-After,
// reads go on, /readyz fails until a write can succeed again, and what
// failed left nothing stored.
func TestFullDiskAnswers503(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := amstest.New(t)
	if s := readyStatus(f); s != 200 {
		t.Fatalf("/readyz before: %d", s)
	}
	if err := f.Store.FillForTest(ctx); err != nil {
		t.Fatal(err)
	}
	notes := strings.Repeat("x", 2000)
	created := 0
	var failed *amstest.Response
	for range 500 { // free pages fill first
		r := f.Do("POST", "/v1/tasks", f.Key, fmt.Sprintf(`{"assistant_id":%q,"title":"fill","notes":%q}`, f.Assistant.ID, notes))
		if r.Status != 201 {
			failed = r
			break
		}
		created++
	}
	if failed == nil {
		t.Fatal("500 tasks written to a full database")
	}
	wantUnavailable(t, "a write to a full disk", failed, "service_unavailable")
	if n := countTasks(t, f); n != created {
		t.Fatalf("%d tasks listed, want the %d created", n, created)
	}
	if s := readyStatus(f); s != 503 {
		t.Fatalf("/readyz while writes fail for a full disk: %d, want 503", s)
	}
	// Still full: the probe of /readyz fails too.
	if s := readyStatus(f); s != 503 {
		t.Fatalf("/readyz again while the disk is full: %d, want 503", s)
	}
	if err := f.Store.UnfillForTest(ctx); err != nil {
		t.Fatal(err)
	}
	if s := readyStatus(f); s != 200 {
		t.Fatalf("/readyz once space is free: %d, want 200", s)
	}
	if r := f.Do("POST", "/v1/tasks", f.Key, task(f, "after")); r.Status != 201 {
		t.Fatalf("a write once space is free: %d %s", r.Status, r.Body)
	}
	if n := countTasks(t, f); n != created+1 {
		t.Fatalf("%d tasks listed, want %d", n, created+1)
	}
}

// TestLockedDatabaseAnswers503 (SQLite): another process holds the write
// lock longer than the busy timeout. The write gives up and answers 503
// request_timeout, not 500.
func TestLockedDatabaseAnswers503(t *testing.T) {
	t.Parallel() // it waits out SQLite's busy timeout on a file of its own
	f := amstest.New(t, amstest.WithRequestTimeout(30*time.Second))
	if r := f.Do("POST", "/v1/tasks", f.Key, task(f, "before")); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	other, err := sql.Open("sqlite", "file:"+f.Store.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	wantUnavailable(t, "a write while another process holds the lock", f.Do("POST", "/v1/tasks", f.Key, task(f, "blocked")), "request_timeout")
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if n := countTasks(t, f); n != 1 {
		t.Fatalf("%d tasks listed, want 1", n)
	}
}

// cutProxy is a TCP proxy in front of PostgreSQL that the test cuts
// (connections reset and refused: the server is gone) or stalls (bytes
// go nowhere and nothing answers: a network partition), and restores.
type cutProxy struct {
	ln      net.Listener
	backend string
	mu      sync.Mutex
	mode    string                // "up", "down" or "stall"
	clients map[net.Conn]net.Conn // client side -> backend side (nil while stalled)
	wg      sync.WaitGroup
}

func newCutProxy(t *testing.T, backend string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, backend: backend, mode: "up", clients: map[net.Conn]net.Conn{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		p.set("down")
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.mu.Unlock()
		switch mode {
		case "down":
			c.Close()
			continue
		case "stall":
			p.mu.Lock()
			p.clients[c] = nil
			p.mu.Unlock()
			continue
		}
		b, err := net.Dial("tcp", p.backend)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.clients[c] = b
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(b, c); b.Close() }()
		go func() {
			defer p.wg.Done()
			io.Copy(c, b)
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.mode == "up" { // the server or the client ended it
				c.Close()
				delete(p.clients, c)
			}
		}()
	}
}

// set changes the mode: "down" closes every connection, "stall" leaves
// the clients' connections open with nothing behind them, "up" forwards
// new connections again (stalled ones are closed).
func (p *cutProxy) set(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = mode
	for c, b := range p.clients {
		if b != nil {
			b.Close()
		}
		if mode != "stall" {
			c.Close()
			delete(p.clients, c)
		} else {
			p.clients[c] = nil
		}
	}
}

// proxiedStore opens a PostgreSQL store of the test's own through a
// cutProxy.
func proxiedStore(t *testing.T, opts ...amstest.Option) (*amstest.Fixture, *cutProxy) {
	raw := pgtest.URL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p := newCutProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	schema := pgtest.FreshSchema(t, raw)
	db := pgtest.OpenSchema(t, u.String(), schema)
	t.Cleanup(func() { p.set("up") }) // before the store closes (cleanups run last first)
	f := amstest.New(t, append(opts, amstest.OnStore(db))...)
	// And before the server closes, which waits for the requests in
	// flight: one that hangs on a stalled connection ends with it.
	t.Cleanup(func() { p.set("up") })
	return f, p
}

// TestDatabaseGoneAnswers503 (PostgreSQL): the server goes away
// (connections reset, new ones refused). Requests answer 503
// service_unavailable with Retry-After, /readyz fails, and once the
// server is back everything works and nothing half-written is left.
func TestDatabaseGoneAnswers503(t *testing.T) {
	t.Parallel()
	f, p := proxiedStore(t)
	if r := f.Do("POST", "/v1/tasks", f.Key, task(f, "before")); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	p.set("down")
	wantUnavailable(t, "a write with the database gone", f.Do("POST", "/v1/tasks", f.Key, task(f, "lost")), "service_unavailable")
	wantUnavailable(t, "a read with the database gone", f.Do("GET", "/v1/tasks", f.Key, ""), "service_unavailable")
	if s := readyStatus(f); s != 503 {
		t.Fatalf("/readyz with the database gone: %d", s)
	}
	p.set("up")
	waitReady(t, f)
	if r := f.Do("POST", "/v1/tasks", f.Key, task(f, "after")); r.Status != 201 {
		t.Fatalf("create once the database is back: %d %s", r.Status, r.Body)
	}
	if n := countTasks(t, f); n != 2 {
		t.Fatalf("%d tasks listed, want 2", n)
	}
}

// TestDatabasePartitionTimesOut (PostgreSQL, L2): the network to the
// server drops every byte. A request does not hang as long as the
// network does: it gives up at its deadline (--request-timeout) and
// answers 503 request_timeout.
func TestDatabasePartitionTimesOut(t *testing.T) {
	f, p := proxiedStore(t, amstest.WithRequestTimeout(time.Second))
	if r := f.Do("POST", "/v1/tasks", f.Key, task(f, "before")); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	p.set("stall")
	client := &http.Client{Timeout: 60 * time.Second} // today's code waits as long as the partition lasts
	do := func(method, path, body string) *amstest.Response {
		t.Helper()
		req, _ := http.NewRequest(method, f.Server.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+f.Key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s during a partition: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return &amstest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
	wantUnavailable(t, "a write during a partition", do("POST", "/v1/tasks", task(f, "lost")), "request_timeout")
	wantUnavailable(t, "a read during a partition", do("GET", "/v1/tasks", ""), "request_timeout")
	p.set("up")
	waitReady(t, f)
	var r *amstest.Response
	for i := 0; i < 5; i++ { // the pool may hand out a connection cut by the partition once
		if r = f.Do("POST", "/v1/tasks", f.Key, task(f, fmt.Sprintf("after %d", i))); r.Status == 201 {
			break
		}
	}
	if r.Status != 201 {
		t.Fatalf("create after the partition: %d %s", r.Status, r.Body)
	}
}

// TestStatementTimeoutAnswers503 (PostgreSQL): a statement that waits
// longer than the statement timeout (here for a lock another session
// holds, well inside the request's deadline) is cancelled by the server,
// and the request answers 503 request_timeout.
func TestStatementTimeoutAnswers503(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	schema := pgtest.FreshSchema(t, url)
	db := pgtest.OpenSchema(t, url, schema, postgres.WithStatementTimeout(200*time.Millisecond))
	f := amstest.New(t, amstest.OnStore(db), amstest.WithRequestTimeout(time.Minute))
	if r := f.Do("POST", "/v1/tasks", f.Key, task(f, "before")); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE `+pgx.Identifier{schema, "tasks"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 50 * time.Second} // without a statement timeout the request waits for the lock
	req, _ := http.NewRequest("POST", f.Server.URL+"/v1/tasks", strings.NewReader(task(f, "blocked")))
	req.Header.Set("Authorization", "Bearer "+f.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		tx.Rollback(ctx)
		t.Fatalf("a write waiting for a lock: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tx.Rollback(ctx)
	wantUnavailable(t, "a write waiting for a lock", &amstest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, "request_timeout")
	if n := countTasks(t, f); n != 1 {
		t.Fatalf("%d tasks listed, want 1", n)
	}
}

// TestStreamOutlivesRequestDeadline: the request deadline bounds a
// stream only until it begins. GET /v1/turns/{id}/events follows a turn
// past --request-timeout (here 300 ms): it is open across five
// keep-alives 100 ms apart before the turn ends, and ends with
// message.completed.
func TestStreamOutlivesRequestDeadline(t *testing.T) {
	release := make(chan struct{})
	f := &fixture{amstest.New(t, amstest.WithRequestTimeout(300*time.Millisecond),
		amstest.WithEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
			<-release
			return &ams.Reply{Content: "Late answer."}, nil
		})))}
	f.API.KeepAlive = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	post := f.openStream(ctx, t, http.DefaultClient, f.streamBody("hi"))
	defer post.Body.Close()
	turn := post.Header.Get("X-Turn-Id")
	if post.StatusCode != 200 || turn == "" {
		t.Fatalf("stream: %d, turn %q", post.StatusCode, turn)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", f.Server.URL+"/v1/turns/"+turn+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+f.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET events: %d %s", resp.StatusCode, b)
	}
	br := bufio.NewReader(resp.Body)
	for alive := 0; alive < 5; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before the turn did, after %d keep-alives: %v", alive, err)
		}
		if strings.HasPrefix(line, ": keep-alive") {
			alive++
		}
	}
	close(release)
	var last string
	for {
		ev, err := readEvent(br)
		if err != nil {
			break
		}
		last = ev.name
	}
	if last != "turn.completed" {
		t.Fatalf("the stream past the request deadline ended with %q", last)
	}
}
