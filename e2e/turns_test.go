//go:build linux

package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams/engine/openai/openaitest"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/jackc/pgx/v5"
)

// TestBackgroundTurnSurvivesKillNine: a background turn whose process is
// killed with SIGKILL while its model call is in flight is taken over by
// another process (its runner claims the turn once the lease has lapsed)
// and completed there, with its turn.completed event. On SQLite, and on
// PostgreSQL when AMS_TEST_DATABASE_URL is set.
func TestBackgroundTurnSurvivesKillNine(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			var lapse func(turnID string)
			if engine == "postgres" {
				schema := turnsPostgres(t)
				lapse = func(id string) {
					conn, err := pgx.Connect(context.Background(), os.Getenv("AMS_TEST_DATABASE_URL"))
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close(context.Background())
					if _, err := conn.Exec(context.Background(), `UPDATE `+schema+`.turns SET lease_until = lease_until - 600000 WHERE id = $1`, id); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				lapse = func(id string) {
					db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "ams.db"))
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					if _, err := db.Exec(`UPDATE turns SET lease_until = lease_until - 600000 WHERE id = ?`, id); err != nil {
						t.Fatal(err)
					}
				}
			}
			backgroundKillNine(t, dir, lapse)
		})
	}
}

// turnsPostgres points the processes at a fresh schema of the test
// database (skipping without one) and returns the schema's name.
func turnsPostgres(t *testing.T) string {
	base := os.Getenv("AMS_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("AMS_TEST_DATABASE_URL is not set: PostgreSQL end-to-end test skipped")
	}
	u := mpSchema(t, base)
	t.Setenv("AMS_DATABASE_URL", u)
	t.Setenv("AMS_SECRET_KEY", mpSecretKey())
	i := strings.Index(u, "search_path=")
	return u[i+len("search_path="):]
}

func backgroundKillNine(t *testing.T, dir string, lapse func(turnID string)) {
	llm := openaitest.New(t)
	arrived := make(chan struct{}, 1)
	// The first model call hangs (the process is killed during it); the
	// taken-over turn's call answers.
	llm.Push(func(w http.ResponseWriter, r *http.Request, req *openaitest.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	llm.Repeat(openaitest.Text("Finished after all."))
	flags := []string{"--llm-base-url", llm.URL, "--llm-timeout", "60s"}
	s := startServe(t, dir, flags...)
	key := s.field(t, `API key\s+(ams_sk_\w+)`)
	st, a := request(t, "POST", s.base+"/v1/assistants", key, `{"name":"Slow","model":"gpt-test"}`)
	if st != 201 {
		t.Fatalf("create assistant: %d %v", st, a)
	}
	st, turn := request(t, "POST", s.base+"/v1/messages", key, `{"assistant_id":"`+a["id"].(string)+`","message":"Think it over","background":true}`)
	if st != 202 || turn["status"] != "running" {
		t.Fatalf("background send: %d %v", st, turn)
	}
	id := turn["id"].(string)
	select {
	case <-arrived:
	case <-time.After(60 * time.Second):
		t.Fatalf("the model call never arrived\n%s", s.logs.String())
	}
	if err := s.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	s.cmd.Wait()
	// The lease (30 s) is moved back rather than waited for.
	lapse(id)
	s2 := startServe(t, dir, flags...)
	key2 := s2.field(t, `API key\s+(ams_sk_\w+)`)
	var got map[string]any
	wait.Eventually(t, "the turn to be completed by the second process", func() bool {
		_, got = request(t, "GET", s2.base+"/v1/turns/"+id, key2, "")
		return got["status"] == "completed"
	})
	if got["reply_message_id"] == "" || got["stop_reason"] != "end_turn" || got["background"] != true {
		t.Fatalf("taken-over turn: %v", got)
	}
	_, reply := request(t, "GET", s2.base+"/v1/messages/"+got["reply_message_id"].(string), key2, "")
	if reply["content"] != "Finished after all." {
		t.Fatalf("reply: %v", reply)
	}
	wait.Eventually(t, "turn.completed in the event log", func() bool {
		_, evs := request(t, "GET", s2.base+"/v1/events?type=turn.completed", key2, "")
		for _, e := range evs["data"].([]any) {
			if e.(map[string]any)["turn_id"] == id {
				return true
			}
		}
		return false
	})
}

// TestTwoProcessesEnqueue: two `ams serve` processes on one PostgreSQL
// schema get 20 concurrent sends to one conversation (enqueue, the
// default), ten each. All complete; the model (a fake in this test)
// never has two calls of the conversation in flight at once; every call
// sees the conversation alternate and end with its own message; the
// stored conversation alternates.
func TestTwoProcessesEnqueue(t *testing.T) {
	dbURL := os.Getenv("AMS_TEST_DATABASE_URL")
	if dbURL == "" {
		t.Skip("AMS_TEST_DATABASE_URL is not set: the multi-process PostgreSQL test is skipped")
	}
	bin := amsBinary(t)
	env := mpEnv(mpSchema(t, dbURL), mpSecretKey())
	key, _ := mpAccount(t, bin, env, "enqueue@example.com")
	llm := openaitest.New(t)
	var inFlight, maxInFlight atomic.Int64
	var badMu sync.Mutex
	var bad []string
	llm.Repeat(func(w http.ResponseWriter, r *http.Request, req *openaitest.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
		}
		var turns []map[string]any
		for _, m := range req.Messages() {
			if m["role"] == "user" || m["role"] == "assistant" {
				turns = append(turns, m)
			}
		}
		last := ""
		for i, m := range turns {
			want := "user"
			if (len(turns)-1-i)%2 == 1 {
				want = "assistant"
			}
			c, _ := m["content"].(string)
			if m["role"] != want || (want == "assistant" && c != "re: "+last) {
				badMu.Lock()
				bad = append(bad, fmt.Sprintf("message %d of %d: %v %q", i, len(turns), m["role"], c))
				badMu.Unlock()
			}
			last = c
		}
		// Some work, during which another call would overlap.
		select {
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
		openaitest.Text("re: "+last)(w, r, req)
	})
	p1 := mpStart(t, bin, env, 0, "--llm-base-url", llm.URL)
	p2 := mpStart(t, bin, env, 1, "--llm-base-url", llm.URL)
	procs := []*mpProc{p1, p2}
	api := &mpAPI{key: key, c: &http.Client{Timeout: 120 * time.Second}}
	var a map[string]any
	if err := api.do("POST", p1.base+"/v1/assistants", `{"name":"Queue","model":"gpt-test"}`, 201, &a); err != nil {
		t.Fatal(err)
	}
	var first map[string]any
	if err := api.do("POST", p1.base+"/v1/messages", `{"assistant_id":"`+a["id"].(string)+`","message":"m first"}`, 201, &first); err != nil {
		t.Fatal(err)
	}
	conv := first["conversation_id"].(string)
	const n = 20
	errs := make([]error, n)
	replies := make([]map[string]any, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			body := fmt.Sprintf(`{"assistant_id":%q,"conversation_id":%q,"message":"m %d"}`, a["id"], conv, i)
			errs[i] = api.do("POST", procs[i%2].base+"/v1/messages", body, 201, &replies[i])
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || replies[i]["content"] != fmt.Sprintf("re: m %d", i) {
			t.Fatalf("send %d: %v %v\n%s", i, errs[i], replies[i], mpLogs(procs))
		}
	}
	if m := maxInFlight.Load(); m != 1 {
		t.Errorf("the model had %d calls of one conversation in flight at once", m)
	}
	if len(bad) > 0 {
		t.Errorf("histories that do not alternate: %v", bad[:min(len(bad), 5)])
	}
	var msgs map[string]any
	if err := api.do("GET", p2.base+"/v1/conversations/"+conv+"/messages?order=asc&limit=100", "", 200, &msgs); err != nil {
		t.Fatal(err)
	}
	data := msgs["data"].([]any)
	if len(data) != 2*(n+1) {
		t.Fatalf("%d messages, want %d", len(data), 2*(n+1))
	}
	for i := 0; i < len(data); i += 2 {
		in, out := data[i].(map[string]any), data[i+1].(map[string]any)
		if in["direction"] != "inbound" || out["direction"] != "outbound" || out["content"] != "re: "+in["content"].(string) {
			t.Fatalf("the conversation does not alternate at %d: %v / %v", i, in["content"], out["content"])
		}
	}
}
