package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amsdev/ams/ratelimit/redisrate"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// TestRateLimitAcrossProcesses runs two `ams serve` processes on one
// PostgreSQL schema and spreads one standard account's requests over
// both: the plan's 60 requests a minute are counted together, so the 61st
// is refused whichever process receives it. Each process alone has seen
// only 30, so limiters of their own would have let it through.
func TestRateLimitAcrossProcesses(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		conn := postgresSchemaEnv(t)
		// Behind a load balancer on this machine: X-Forwarded-For tells
		// the client's address (the env variables of --trusted-proxies
		// and --client-address-header).
		t.Setenv("AMS_TRUSTED_PROXIES", "127.0.0.1/32")
		t.Setenv("AMS_CLIENT_ADDRESS_HEADER", "X-Forwarded-For")
		a, b := startPair(t)
		user, key := standardAccount(t)
		checkSharedMinuteLimit(t, a, b, key)
		checkSharedLoginThrottle(t, a, b)
		stop(t, a, b)
		for _, s := range []*server{a, b} {
			if !strings.Contains(s.logs.String(), `"rate_limiter":"postgres","login_throttle":"postgres"`) {
				t.Errorf("the server did not log that it counts in PostgreSQL:\n%s", s.logs.String())
			}
			if !strings.Contains(s.logs.String(), `"client_address_header":"X-Forwarded-For"`) {
				t.Errorf("the server did not log the header it reads client addresses from:\n%s", s.logs.String())
			}
		}
		var n int64
		if err := conn.QueryRow(context.Background(), `SELECT (SELECT sum(c) FROM unnest(minute) c) FROM rate_windows WHERE account = $1`, user).Scan(&n); err != nil || n != 60 {
			t.Errorf("rate_windows row of %s: %d requests in the minute window (%v), want 60", user, n, err)
		}
	})
	t.Run("redis", func(t *testing.T) {
		redisURL := os.Getenv("AMS_TEST_REDIS_URL")
		if redisURL == "" {
			t.Skip("AMS_TEST_REDIS_URL is not set: Redis end-to-end test skipped (.ci/run sets it)")
		}
		conn := postgresSchemaEnv(t)
		t.Setenv("AMS_REDIS_URL", redisURL)
		a, b := startPair(t)
		user, key := standardAccount(t)
		opt, err := redis.ParseURL(redisURL)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		ctx := context.Background()
		keys := []string{"ams:rl:{" + user + "}:m", "ams:rl:{" + user + "}:d"}
		t.Cleanup(func() { rdb.Del(context.Background(), keys...) })

		checkSharedMinuteLimit(t, a, b, key)
		stop(t, a, b)
		for _, s := range []*server{a, b} {
			if !strings.Contains(s.logs.String(), `"rate_limiter":"redis"`) {
				t.Errorf("the server did not log that it counts in Redis:\n%s", s.logs.String())
			}
		}
		// The counts are in Redis, not in PostgreSQL.
		st, err := redisrate.New(rdb, redisrate.DefaultPrefix).State(ctx, user)
		var n int32
		for _, c := range st.Minute {
			n += c
		}
		if err != nil || n != 60 {
			t.Errorf("Redis minute window of %s counts %d (%v), want 60", user, n, err)
		}
		var rows int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM rate_windows`).Scan(&rows); err != nil || rows != 0 {
			t.Errorf("rate_windows has %d rows (%v), want none with --redis-url", rows, err)
		}
	})
}

// postgresSchemaEnv points AMS_DATABASE_URL at a new schema of the test's
// own (dropped at its end), sets a shared AMS_SECRET_KEY, and returns a
// connection to the schema. It skips when AMS_TEST_DATABASE_URL is unset.
func postgresSchemaEnv(t *testing.T) *pgx.Conn {
	t.Helper()
	base := os.Getenv("AMS_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("AMS_TEST_DATABASE_URL is not set: PostgreSQL end-to-end test skipped (.ci/run sets it)")
	}
	ctx := context.Background()
	b := make([]byte, 6)
	rand.Read(b)
	schema := "e2e_" + hex.EncodeToString(b)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	dbURL := base + sep + "search_path=" + schema
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	key := make([]byte, 32)
	rand.Read(key)
	t.Setenv("AMS_DATABASE_URL", dbURL)
	t.Setenv("AMS_SECRET_KEY", base64.StdEncoding.EncodeToString(key))
	return conn
}

// startPair starts two servers on the store and limiter the environment
// names, one after the other (the first applies the migrations).
func startPair(t *testing.T) (a, b *server) {
	t.Helper()
	a = startServe(t, t.TempDir())
	b = startServe(t, t.TempDir())
	return a, b
}

// standardAccount creates a standard-plan account (60 requests a minute)
// and a read key for it with the CLI, and returns the user id and key.
func standardAccount(t *testing.T) (user, key string) {
	t.Helper()
	dir := t.TempDir()
	email := "rl-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "@example.com"
	user = strings.TrimSpace(run(t, dir, "", "users", "create", "--email", email, "--plan", "standard"))
	key = strings.TrimSpace(run(t, dir, "", "keys", "create", "--email", email, "--name", "rl", "--permissions", "read"))
	if !strings.HasPrefix(user, "usr_") || !strings.HasPrefix(key, "ams_sk_") {
		t.Fatalf("users create / keys create printed %q, %q", user, key)
	}
	return user, key
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func get(t *testing.T, url, key string) answer {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return answer{resp.StatusCode, resp.Header, m}
}

// checkSharedMinuteLimit sends 60 requests of one account alternately to
// a and b (all allowed, the remaining count falling by one each time
// whichever process answers), then one more to each (both refused).
func checkSharedMinuteLimit(t *testing.T, a, b *server, key string) {
	t.Helper()
	// The minute window slides: every answer's X-RateLimit-Reset is when
	// the first request's second leaves it, 61 s after that second began.
	servers := []*server{a, b}
	var reset string
	for i := range 60 {
		r := get(t, servers[i%2].base+"/v1/assistants", key)
		if r.status != 200 {
			t.Fatalf("request %d (process %d): %d %v; want 200", i+1, i%2+1, r.status, r.body)
		}
		if got, want := r.header.Get("X-RateLimit-Remaining"), strconv.Itoa(59-i); got != want {
			t.Fatalf("request %d (process %d): X-RateLimit-Remaining %s, want %s: the processes do not count together", i+1, i%2+1, got, want)
		}
		if r.header.Get("X-RateLimit-Limit") != "60" {
			t.Fatalf("request %d: X-RateLimit-Limit %q, want 60", i+1, r.header.Get("X-RateLimit-Limit"))
		}
		if i == 0 {
			reset = r.header.Get("X-RateLimit-Reset")
		} else if got := r.header.Get("X-RateLimit-Reset"); got != reset {
			t.Fatalf("request %d: X-RateLimit-Reset %s, the first said %s", i+1, got, reset)
		}
	}
	resetAt, err := strconv.ParseInt(reset, 10, 64)
	if err != nil {
		t.Fatalf("X-RateLimit-Reset %q: %v", reset, err)
	}
	for i, s := range servers {
		r := get(t, s.base+"/v1/assistants", key)
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("request %d, to process %d: %d %v; want 429", 61+i, i+1, r.status, r.body)
		}
		e, _ := r.body["error"].(map[string]any)
		if e["type"] != "rate_limit_error" || e["code"] != "rate_limit_exceeded" || e["param"] != nil ||
			!strings.HasPrefix(e["message"].(string), "Rate limit exceeded: your plan allows 60 requests per minute and 10000 per day. Retry after ") {
			t.Errorf("429 body from process %d: %v", i+1, r.body)
		}
		if rid := r.header.Get("X-Request-Id"); rid == "" || r.body["request_id"] != rid {
			t.Errorf("429 from process %d: request_id %v, X-Request-Id %q", i+1, r.body["request_id"], rid)
		}
		if got := r.header.Get("X-RateLimit-Reset"); got != reset {
			t.Fatalf("429 from process %d: X-RateLimit-Reset %s, want %s", i+1, got, reset)
		}
		if r.header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("429 from process %d: X-RateLimit-Remaining %q, want 0", i+1, r.header.Get("X-RateLimit-Remaining"))
		}
		// Retry-After is the wait until the first requests leave the window.
		retry, err := strconv.Atoi(r.header.Get("Retry-After"))
		left := time.Until(time.Unix(resetAt, 0))
		if err != nil || retry < 1 || retry > 61 || time.Duration(retry)*time.Second < left-time.Second || time.Duration(retry)*time.Second > left+2*time.Second {
			t.Errorf("429 from process %d: Retry-After %q, want the %v until X-RateLimit-Reset", i+1, r.header.Get("Retry-After"), left.Round(time.Second))
		}
		if !strings.HasSuffix(e["message"].(string), "Retry after "+r.header.Get("Retry-After")+" seconds.") {
			t.Errorf("429 message %q does not name Retry-After %s", e["message"], r.header.Get("Retry-After"))
		}
	}
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// failLogin posts the sign-in form of s with a wrong password and returns the
// status and Retry-After.
func failLogin(t *testing.T, s *server, email string, xff ...string) (int, string) {
	t.Helper()
	resp, err := http.Get(s.base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := csrfRE.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf_token in the login page:\n%s", page)
	}
	form := url.Values{"email": {email}, "password": {"not the password"}, "csrf_token": {string(m[1])}, "return_to": {"/login"}}
	req, _ := http.NewRequest("POST", s.base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, a := range xff {
		req.Header.Add("X-Forwarded-For", a)
	}
	for _, c := range resp.Cookies() {
		req.AddCookie(c)
	}
	post, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	return post.StatusCode, post.Header.Get("Retry-After")
}

// checkSharedLoginThrottle fails five logins of one account from one
// client address, alternately on a and b: the sixth attempt is refused by
// both, although neither saw five failures itself. The servers trust
// 127.0.0.1 as a proxy: another client behind it (X-Forwarded-For) is not
// blocked from the account.
func checkSharedLoginThrottle(t *testing.T, a, b *server) {
	t.Helper()
	email := "victim-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "@example.com"
	servers := []*server{a, b}
	for i := range 5 {
		if st, _ := failLogin(t, servers[i%2], email); st != http.StatusOK {
			t.Fatalf("failed login %d on process %d: %d, want 200 (the form again)", i+1, i%2+1, st)
		}
	}
	for i, s := range servers {
		st, retry := failLogin(t, s, email)
		if n, _ := strconv.Atoi(retry); st != http.StatusTooManyRequests || n < 14*60 || n > 15*60 {
			t.Errorf("6th login, on process %d: %d with Retry-After %q; want 429 for about 15 minutes", i+1, st, retry)
		}
		if st, _ := failLogin(t, s, email, "198.51.100.7"); st != http.StatusOK {
			t.Errorf("another client behind the proxy, on process %d: %d, want 200 (not blocked)", i+1, st)
		}
	}
}

// stop shuts the servers down (SIGTERM) and waits for them, so that their
// logs are complete.
func stop(t *testing.T, servers ...*server) {
	t.Helper()
	for _, s := range servers {
		s.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, s := range servers {
		if err := s.cmd.Wait(); err != nil {
			t.Errorf("ams serve exited with %v:\n%s", err, s.logs.String())
		}
	}
}
