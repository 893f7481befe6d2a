package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/jackc/pgx/v5"
)

// The identifiers of this file start with ex (the export test) so that they
// cannot collide with other files of the package.

const exSecret = "whsec_ZXhwb3J0LXRlc3Qtc2lnbmluZy1rZXktMDEyMzQ1"

// exReceiver is a webhook receiver that answers 503 until it is told to
// accept, and records the accepted events whose signature verifies.
type exReceiver struct {
	mu       sync.Mutex
	accept   bool
	attempts int
	good     map[string]int // event id -> verified 2xx deliveries
	bad      []string
}

func (r *exReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	mac := hmac.New(sha256.New, []byte(exSecret))
	mac.Write(body)
	valid := hmac.Equal([]byte(req.Header.Get("X-Service-Signature")), []byte("sha256="+hex.EncodeToString(mac.Sum(nil))))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts++
	if !valid {
		r.bad = append(r.bad, req.Header.Get("Webhook-Id"))
		w.WriteHeader(400)
		return
	}
	if !r.accept {
		w.WriteHeader(503)
		return
	}
	r.good[req.Header.Get("Webhook-Id")]++
}

func (r *exReceiver) state() (attempts int, good map[string]int, bad []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts, maps.Clone(r.good), slices.Clone(r.bad)
}

func exStop(t *testing.T, s *server) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ams serve exit: %v\n%s", err, s.logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ams serve did not stop after SIGTERM")
	}
}

// exPostgres points AMS_DATABASE_URL at a new schema of the test
// database, with a new AMS_SECRET_KEY, for the rest of the test.
func exPostgres(t *testing.T, base string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "e2e_export_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	key := make([]byte, 32)
	rand.Read(key)
	t.Setenv("AMS_DATABASE_URL", base+sep+"search_path="+schema)
	t.Setenv("AMS_SECRET_KEY", base64.StdEncoding.EncodeToString(key))
}

// TestMoveSQLiteToPostgres moves a store with the binary, as
// docs/operations.md says: serve on SQLite, send a message to a webhook
// whose receiver is down, stop; ams export; ams migrate and ams import on
// PostgreSQL (a second SQLite store when AMS_TEST_DATABASE_URL is unset);
// serve there. The same API key reads the same message and conversation,
// and the deliveries pending before the move arrive after it, signed with
// the same secret.
func TestMoveSQLiteToPostgres(t *testing.T) {
	pg := os.Getenv("AMS_TEST_DATABASE_URL")
	t.Setenv("AMS_DATABASE_URL", "")
	t.Setenv("AMS_SECRET_KEY", "")
	rc := &exReceiver{good: map[string]int{}}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	retry := []string{"--webhook-retry-schedule", "0s,2s,2s,2s,2s"}

	src := t.TempDir()
	s := startServe(t, src, retry...)
	asst := s.field(t, `assistant\s+(ast_\w+)`)
	// A key of its own, which the move carries to the other store.
	key := strings.TrimSpace(run(t, src, "", "keys", "create", "--email", "dev@example.com", "--name", "move", "--permissions", "read,write,messages"))
	st, wh := request(t, "POST", s.base+"/v1/webhooks", key, `{"url":"`+hook.URL+`","events":["message.created"],"secret":"`+exSecret+`"}`)
	if st != 201 {
		t.Fatalf("create webhook: %d %v", st, wh)
	}
	st, reply := request(t, "POST", s.base+"/v1/messages", key, `{"assistant_id":"`+asst+`","message":"Hello! My name is Ada."}`)
	if st != 201 {
		t.Fatalf("send: %d %v", st, reply)
	}
	conv := reply["conversation_id"].(string)
	_, evs := request(t, "GET", s.base+"/v1/events?type=message.created", key, "")
	var events []string
	for _, e := range evs["data"].([]any) {
		events = append(events, e.(map[string]any)["id"].(string))
	}
	if len(events) != 2 {
		t.Fatalf("events before the move: %v", evs)
	}
	// Wait for a failed attempt, so that the deliveries are pending with
	// a retry when the server stops.
	if !wait.Until(func() bool { n, _, _ := rc.state(); return n >= 2 }) {
		t.Fatalf("no delivery attempt before the move\n%s", s.logs.String())
	}
	exStop(t, s)
	_, good, bad := rc.state()
	if len(good) != 0 || len(bad) != 0 {
		t.Fatalf("before the move: delivered %v, bad signatures %v", good, bad)
	}

	dumpFile := filepath.Join(t.TempDir(), "ams.dump")
	run(t, src, "", "export", "--output", dumpFile)
	if fi, err := os.Stat(dumpFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("dump file: %v %v (want mode 0600)", fi, err)
	}

	dst := t.TempDir()
	if pg != "" {
		exPostgres(t, pg)
		if out := run(t, dst, "", "migrate"); !strings.HasPrefix(out, "schema version ") {
			t.Fatalf("migrate: %q", out)
		}
	} else {
		t.Log("AMS_TEST_DATABASE_URL is not set: moving to a second SQLite store instead of PostgreSQL")
	}
	if out := run(t, dst, "", "import", "--input", dumpFile); !strings.Contains(out, "imported") || !strings.Contains(out, "messages 2") {
		t.Fatalf("import printed %q", out)
	}
	// A second import is refused: the store is no longer empty.
	cmd := exec.Command(amsBinary(t), "import", "--input", dumpFile)
	cmd.Env = append(os.Environ(), "AMS_DATA_DIR="+dst)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not empty") {
		t.Fatalf("second import: %v %s", err, out)
	}

	rc.mu.Lock()
	rc.accept = true
	rc.mu.Unlock()
	s2 := startServe(t, dst, retry...)
	if got := s2.field(t, `assistant\s+(ast_\w+)`); got != asst {
		t.Fatalf("dev assistant after the move: %s, want %s", got, asst)
	}
	st, m := request(t, "GET", s2.base+"/v1/messages/"+reply["id"].(string), key, "")
	if st != 200 || m["content"] != reply["content"] || m["conversation_id"] != conv || m["created_at"] != reply["created_at"] {
		t.Fatalf("message after the move: %d %v, want %v", st, m, reply)
	}
	st, c := request(t, "GET", s2.base+"/v1/conversations/"+conv, key, "")
	if st != 200 || c["message_count"] != float64(2) || c["title"] != "Hello! My name is Ada." {
		t.Fatalf("conversation after the move: %d %v", st, c)
	}
	// The conversation goes on, in order, with its context.
	st, r2 := request(t, "POST", s2.base+"/v1/messages", key, `{"assistant_id":"`+asst+`","conversation_id":"`+conv+`","message":"What's my name?"}`)
	if st != 201 || !strings.Contains(r2["content"].(string), "Ada") {
		t.Fatalf("message after the move: %d %v", st, r2)
	}
	st, list := request(t, "GET", s2.base+"/v1/conversations/"+conv+"/messages?order=asc", key, "")
	data, _ := list["data"].([]any)
	if st != 200 || len(data) != 4 || data[1].(map[string]any)["id"] != reply["id"] || data[3].(map[string]any)["id"] != r2["id"] {
		t.Fatalf("messages after the move: %d %v", st, list)
	}

	// The deliveries pending before the move arrive, signed with the
	// secret (sealed again with the target's key), and so does the new
	// message's.
	if !wait.Until(func() bool {
		_, good, bad := rc.state()
		if len(bad) > 0 {
			t.Fatalf("deliveries with a bad signature after the move: %v", bad)
		}
		return len(good) == 4 && good[events[0]] >= 1 && good[events[1]] >= 1
	}) {
		_, good, _ := rc.state()
		t.Fatalf("delivered after the move: %v, want %v and the new message's two events\n%s", good, events, s2.logs.String())
	}
	// An attempt is recorded just after the receiver has answered it, so
	// the log may trail the receiver by a moment.
	var dl map[string]any
	if !wait.Until(func() bool {
		st, dl = request(t, "GET", s2.base+"/v1/webhooks/"+wh["id"].(string)+"/deliveries?limit=100", key, "")
		return st == 200 && len(dl["data"].([]any)) >= 6
	}) {
		t.Fatalf("delivery log after the move (failed attempts before, successes after): %d %v", st, dl)
	}
	exStop(t, s2)
}
