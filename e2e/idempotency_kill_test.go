package e2e

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // to move the killed store's idempotency records back in time
)

// TestKillNineKeyedWritesNoDuplicates (issue 26, M2 and point 5): POST
// /v1/tasks and POST /v1/conversations (whose answer its service keeps,
// ams.KeepAnswer) with an Idempotency-Key each, many at once; the process
// is killed with
// SIGKILL while they run. Then five minutes pass (the records' times are
// moved back: a claim whose process died counts as abandoned after
// ams.IdempotencyAbandoned) and a new process gets every request again,
// same key, same body. No task is made twice, and no task.created is
// emitted twice: a request whose change committed replays its stored
// answer (Idempotent-Replayed), the one stored with the change when the
// process died before storing the answer it gave; one whose change did
// not commit makes it now. Every answer the first process gave before
// dying is replayed with its record. On both engines.
func TestKillNineKeyedWritesNoDuplicates(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			var shift func(d time.Duration)
			if engine == "postgres" {
				shift = postgresStore(t, dir)
			} else {
				shift = func(d time.Duration) {
					db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "ams.db"))
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					if _, err := db.Exec(`UPDATE idempotency_keys SET created_at = created_at - ?`, d.Milliseconds()); err != nil {
						t.Fatal(err)
					}
				}
			}
			killNineKeyedWrites(t, dir, shift)
		})
	}
}

// postgresStore points the ams processes at a fresh schema of the test
// database (skipping the test without one) and returns the function that
// moves the store's idempotency records back by d.
func postgresStore(t *testing.T, dir string) func(d time.Duration) {
	base := os.Getenv("AMS_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("AMS_TEST_DATABASE_URL is not set: PostgreSQL end-to-end test skipped")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	b := make([]byte, 6)
	rand.Read(b)
	schema := "e2e_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	key := make([]byte, 32)
	rand.Read(key)
	t.Setenv("AMS_DATABASE_URL", base+sep+"search_path="+schema)
	t.Setenv("AMS_SECRET_KEY", base64.StdEncoding.EncodeToString(key))
	run(t, dir, "", "migrate")
	return func(d time.Duration) {
		if _, err := conn.Exec(ctx, `UPDATE `+schema+`.idempotency_keys SET created_at = created_at - $1`, d.Milliseconds()); err != nil {
			t.Fatal(err)
		}
	}
}

// keyedAnswer is one answer of a POST with an Idempotency-Key.
type keyedAnswer struct {
	status   int
	body     map[string]any
	replayed bool
}

func keyedPost(c *http.Client, url, apiKey, idemKey, body string) (*keyedAnswer, error) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	a := &keyedAnswer{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	if err := json.NewDecoder(resp.Body).Decode(&a.body); err != nil {
		return nil, err // cut off by the kill
	}
	return a, nil
}

func killNineKeyedWrites(t *testing.T, dir string, shift func(time.Duration)) {
	const n = 60
	s := startServe(t, dir)
	key := s.field(t, `API key\s+(ams_sk_\w+)`)
	asst := s.field(t, `assistant\s+(ast_\w+)`)
	run(t, dir, "", "users", "update", "--email", "dev@example.com", "--plan", "enterprise", "--rpm", "100000")
	// Even requests create tasks (their answer kept from the task.created
	// event), odd ones conversations (their answer kept by the service,
	// ams.KeepAnswer).
	path := func(i int) string {
		if i%2 == 0 {
			return "/v1/tasks"
		}
		return "/v1/conversations"
	}
	body := func(i int) string { return fmt.Sprintf(`{"assistant_id":%q,"title":"keyed %d"}`, asst, i) }
	idem := func(i int) string { return fmt.Sprintf("kill9-%d", i) }

	c := &http.Client{Timeout: 60 * time.Second}
	first := make([]*keyedAnswer, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered := 0
	enough := make(chan struct{})
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			a, err := keyedPost(c, s.base+path(i), key, idem(i), body(i))
			if err != nil {
				return // unacknowledged: the process died
			}
			mu.Lock()
			defer mu.Unlock()
			first[i] = a
			if answered++; answered == n/4 {
				close(enough)
			}
		}()
	}
	close(start)
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
		t.Fatalf("a quarter of the requests not answered in 60 s\n%s", s.logs.String())
	}
	if err := s.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	s.cmd.Wait()
	wg.Wait()
	acked := 0
	for _, a := range first {
		if a != nil {
			if a.status != http.StatusCreated {
				t.Fatalf("first answer: %d %v", a.status, a.body)
			}
			acked++
		}
	}
	t.Logf("%d of %d requests answered before the kill", acked, n)

	shift(abandonedAfter)
	s2 := startServe(t, dir)
	key2 := s2.field(t, `API key\s+(ams_sk_\w+)`)
	lost := 0
	for i := range n {
		a, err := keyedPost(c, s2.base+path(i), key2, idem(i), body(i))
		// On PostgreSQL a statement the killed process had sent may still
		// commit after the kill, and so after the shift: a claim of the
		// dead process that is not abandoned yet. Move it back too.
		for tries := 0; err == nil && a.status == http.StatusConflict && tries < 5; tries++ {
			if e, _ := a.body["error"].(map[string]any); e["code"] != "idempotency_key_in_use" {
				break
			}
			shift(abandonedAfter)
			a, err = keyedPost(c, s2.base+path(i), key2, idem(i), body(i))
		}
		if err != nil {
			t.Fatalf("retry %d: %v", i, err)
		}
		switch {
		case a.status == http.StatusConflict:
			if e, _ := a.body["error"].(map[string]any); e["code"] != "idempotency_key_answer_lost" {
				t.Fatalf("retry %d: %d %v", i, a.status, a.body)
			}
			lost++
		case a.status != http.StatusCreated:
			t.Fatalf("retry %d: %d %v", i, a.status, a.body)
		case first[i] != nil && (!a.replayed || a.body["id"] != first[i].body["id"]):
			t.Errorf("retry %d of an answered request: replayed %v, record %v, want the first answer's %v", i, a.replayed, a.body["id"], first[i].body["id"])
		}
	}
	if lost > 0 {
		// Both store their answer with the change: a retry replays it even
		// when the process died before storing the answer it gave.
		t.Errorf("%d retries answered idempotency_key_answer_lost, want the stored answers", lost)
	}

	// Every request's task exists once, with one task.created.
	var tasks, created map[string]int // title -> tasks; task id -> task.created events
	list := func(path string, each func(m map[string]any)) {
		after := ""
		for {
			st, pg := request(t, "GET", s2.base+path+after, key2, "")
			if st != http.StatusOK {
				t.Fatalf("GET %s: %d %v", path, st, pg)
			}
			for _, x := range pg["data"].([]any) {
				each(x.(map[string]any))
			}
			if pg["has_more"] != true {
				return
			}
			after = "&after=" + pg["last_id"].(string)
		}
	}
	// An event is listed once no write that began before it still runs:
	// read until all are there, or a while.
	wait.Until(func() bool {
		tasks, created = map[string]int{}, map[string]int{}
		list("/v1/tasks?limit=100", func(m map[string]any) { tasks[m["title"].(string)]++ })
		list("/v1/conversations?limit=100", func(m map[string]any) { tasks[m["title"].(string)]++ })
		list("/v1/events?type=task.created&limit=100", func(m map[string]any) {
			if d := m["data"].(map[string]any); strings.HasPrefix(d["title"].(string), "keyed ") {
				created[d["id"].(string)]++
			}
		})
		return len(created) >= n/2
	})
	for i := range n {
		if got := tasks[fmt.Sprintf("keyed %d", i)]; got != 1 {
			t.Errorf("request %d made %d records (%s), want 1", i, got, path(i))
		}
	}
	for id, k := range created {
		if k != 1 {
			t.Errorf("task %s has %d task.created events", id, k)
		}
	}
	if len(created) != n/2 {
		t.Errorf("%d task.created events, want %d", len(created), n/2)
	}
}

// abandonedAfter is how far the records are moved back: more than
// ams.IdempotencyAbandoned (5 minutes), after which a running claim may
// be taken over.
const abandonedAfter = 6 * time.Minute
