package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestKillNineWaitingTurnResumesElsewhere (issue 29): a turn that waits
// for a client tool's output survives kill -9 of the process that ran
// it, and completes when the output is posted to another process (on
// SQLite the next process on the same data directory; on PostgreSQL a
// second process that ran beside the killed one). Its stream, read from
// the other process, ends the first attempt at turn.requires_action and
// goes on with the resumed attempt to the reply.
func TestKillNineWaitingTurnResumesElsewhere(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			if engine == "postgres" {
				postgresStore(t, dir)
			}
			s1 := startServe(t, dir)
			key := s1.field(t, `API key\s+(ams_sk_\w+)`)
			asst := s1.field(t, `assistant\s+(ast_\w+)`)
			var s2 *server
			if engine == "postgres" {
				s2 = startServe(t, dir)
			}
			status, turn := request(t, "POST", s1.base+"/v1/messages", key, fmt.Sprintf(`{"assistant_id": %q, "message": "lookup_order {\"id\": 7}",
				"tools": [{"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}]}`, asst))
			ra, _ := turn["required_action"].(map[string]any)
			if status != 200 || turn["status"] != "requires_action" || ra == nil {
				t.Fatalf("send: %d %v", status, turn)
			}
			call := ra["tool_calls"].([]any)[0].(map[string]any)["id"].(string)
			id := turn["id"].(string)
			if err := s1.cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			s1.cmd.Wait()
			if s2 == nil {
				s2 = startServe(t, dir)
			}
			status, got := request(t, "GET", s2.base+"/v1/turns/"+id, key, "")
			if status != 200 || got["status"] != "requires_action" {
				t.Fatalf("the waiting turn after the kill: %d %v", status, got)
			}
			status, done := request(t, "POST", s2.base+"/v1/turns/"+id+"/tool_outputs", key,
				fmt.Sprintf(`{"tool_outputs": [{"tool_call_id": %q, "output": "shipped"}]}`, call))
			if status != 200 || done["status"] != "completed" {
				t.Fatalf("outputs to the other process: %d %v\n%s", status, done, s2.logs.String())
			}
			status, reply := request(t, "GET", s2.base+"/v1/messages/"+done["reply_message_id"].(string), key, "")
			if status != 200 || reply["content"] != "lookup_order returned: shipped" {
				t.Fatalf("reply: %d %v", status, reply)
			}
			events := streamEvents(t, s2.base+"/v1/turns/"+id+"/events", key)
			joined := strings.Join(events, " ")
			if !strings.Contains(joined, "turn.requires_action turn.started") || events[len(events)-1] != "turn.completed" {
				t.Fatalf("stream of the turn: %v", events)
			}
		})
	}
}

// streamEvents reads a turn's stream to its end and returns its event
// names in order.
func streamEvents(t *testing.T, url, key string) []string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var names []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			names = append(names, name)
		}
	}
	return names
}
