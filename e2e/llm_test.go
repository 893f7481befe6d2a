package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/engine/openai/openaitest"
)

// TestModelBackedAssistant runs `ams serve --llm-base-url` against a fake
// chat-completions server: an assistant whose model is not builtin answers
// with the model's text, plain and streamed, and the model's tool calls
// run through the real toolbox.
func TestModelBackedAssistant(t *testing.T) {
	llm := openaitest.New(t)
	dir := t.TempDir()
	s := startServe(t, dir, "--llm-base-url", llm.URL, "--llm-api-key", "sk-e2e", "--llm-timeout", "10s")
	key := s.field(t, `API key\s+(ams_sk_\w+)`)
	builtinAsst := s.field(t, `assistant\s+(ast_\w+)`)

	st, a := request(t, "POST", s.base+"/v1/assistants", key, `{"name":"Gepetto","model":"gpt-test","instructions":"Answer in one sentence."}`)
	if st != 201 || a["model"] != "gpt-test" {
		t.Fatalf("create assistant: %d %v", st, a)
	}
	asst := a["id"].(string)
	// The CLI makes model-backed assistants too (beside the running server).
	cliAsst := strings.TrimSpace(run(t, dir, "", "assistants", "create", "--email", "dev@example.com", "--name", "Cli", "--model", "llama3.1:8b"))
	if st, got := request(t, "GET", s.base+"/v1/assistants/"+cliAsst, key, ""); st != 200 || got["model"] != "llama3.1:8b" {
		t.Fatalf("assistant made by the CLI: %d %v", st, got)
	}

	// A plain reply.
	llm.Push(openaitest.Text("Hello from the model."))
	st, reply := request(t, "POST", s.base+"/v1/messages", key, `{"assistant_id":"`+asst+`","message":"Hi there"}`)
	if st != 201 || reply["content"] != "Hello from the model." || reply["direction"] != "outbound" {
		t.Fatalf("plain reply: %d %v", st, reply)
	}
	reqs := llm.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests to the model", len(reqs))
	}
	if reqs[0].Body["model"] != "gpt-test" || reqs[0].Header.Get("Authorization") != "Bearer sk-e2e" {
		t.Fatalf("model request: %v %v", reqs[0].Body["model"], reqs[0].Header)
	}
	msgs := reqs[0].Messages()
	if len(msgs) != 2 || !strings.Contains(msgs[0]["content"].(string), "Answer in one sentence.") || msgs[1]["content"] != "Hi there" {
		t.Fatalf("messages sent to the model: %v", msgs)
	}
	if tools, _ := reqs[0].Body["tools"].([]any); len(tools) == 0 {
		t.Fatal("no tools offered to the model")
	}

	// The built-in assistant still answers without the model.
	if st, r := request(t, "POST", s.base+"/v1/messages", key, `{"assistant_id":"`+builtinAsst+`","message":"Hello!"}`); st != 201 || r["content"] == "" {
		t.Fatalf("builtin reply: %d %v", st, r)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Fatalf("the built-in assistant asked the model (%d requests)", n)
	}

	// A streamed reply, after a tool call that creates a task.
	llm.Push(
		openaitest.ToolCalls(openaitest.Call{ID: "call_1", Name: "create_task", Arguments: `{"title":"Call Ann","due_at":"2026-11-22T09:00:00Z"}`}),
		openaitest.Text("Added ", "your task."))
	conv := reply["conversation_id"].(string)
	events := streamMessage(t, s.base, key, `{"assistant_id":"`+asst+`","conversation_id":"`+conv+`","message":"Remind me to call Ann tomorrow at 9","stream":true}`)
	// The turn's events: turn.started, the tool call and its result, the
	// deltas, the stored reply.
	var names []string
	for _, ev := range events {
		names = append(names, ev[0])
	}
	if len(events) < 4 || strings.Join(names[:3], " ") != "turn.started tool_call tool_result" ||
		!strings.Contains(events[1][1], `"name":"create_task"`) || !strings.Contains(events[2][1], `"status":"succeeded"`) {
		t.Fatalf("events %q", names)
	}
	var deltas []string
	// The stream ends with message.completed, then the turn's lifecycle
	// event (turn.completed).
	if len(events) < 5 || events[len(events)-1][0] != "turn.completed" {
		t.Fatalf("events %q: the last is not turn.completed", names)
	}
	events = events[:len(events)-1]
	for _, ev := range events[3 : len(events)-1] {
		var d struct{ Delta string }
		if ev[0] != "message.delta" || json.Unmarshal([]byte(ev[1]), &d) != nil {
			t.Fatalf("event %q", ev)
		}
		deltas = append(deltas, d.Delta)
	}
	last := events[len(events)-1]
	var done map[string]any
	if last[0] != "message.completed" || json.Unmarshal([]byte(last[1]), &done) != nil {
		t.Fatalf("last event %q", last)
	}
	if strings.Join(deltas, "|") != "Added |your task." || done["content"] != "Added your task." || done["conversation_id"] != conv {
		t.Fatalf("deltas %q, completed %v", deltas, done)
	}
	if st, m := request(t, "GET", s.base+"/v1/messages/"+done["id"].(string), key, ""); st != 200 || m["content"] != "Added your task." {
		t.Fatalf("GET the streamed reply: %d %v", st, m)
	}
	st, tasks := request(t, "GET", s.base+"/v1/tasks", key, "")
	if data, _ := tasks["data"].([]any); st != 200 || len(data) != 1 || data[0].(map[string]any)["title"] != "Call Ann" {
		t.Fatalf("tasks after the tool call: %d %v", st, tasks)
	}
	tool := llm.Requests()[2].Messages()
	if last := tool[len(tool)-1]; last["role"] != "tool" || !strings.Contains(last["content"].(string), `"status":"succeeded"`) {
		t.Fatalf("tool message sent to the model: %v", last)
	}

	// The Go client streams the same way.
	llm.Push(openaitest.Text("Via ", "the SDK."))
	c := client.New(s.base, key)
	var got strings.Builder
	var final *client.Message
	for ev, err := range c.SendMessageStream(context.Background(), client.SendMessageParams{AssistantID: asst, ConversationID: conv, Message: "And now?"}) {
		if err != nil {
			t.Fatalf("SendMessageStream: %v", err)
		}
		got.WriteString(ev.Delta)
		if ev.Message != nil {
			final = ev.Message
		}
	}
	if got.String() != "Via the SDK." || final == nil || final.Content != "Via the SDK." {
		t.Fatalf("SDK stream: %q %+v", got.String(), final)
	}

	// The provider refusing the key is a documented 502; the failed turn
	// keeps its inbound message (in a new conversation), without a reply.
	llm.Push(openaitest.Error(401, "", "Incorrect API key provided: sk-e2e"))
	st, e := request(t, "POST", s.base+"/v1/messages", key, `{"assistant_id":"`+asst+`","message":"Hi again"}`)
	errBody, _ := e["error"].(map[string]any)
	if st != 502 || errBody["code"] != "engine_unauthorized" || strings.Contains(errBody["message"].(string), "sk-e2e") {
		t.Fatalf("provider 401: %d %v", st, e)
	}
	st, convs := request(t, "GET", s.base+"/v1/conversations?assistant_id="+asst, key, "")
	if data, _ := convs["data"].([]any); st != 200 || len(data) != 2 || data[0].(map[string]any)["message_count"] != 1.0 {
		t.Fatalf("conversations after a failed turn: %v", convs)
	}
	st, turns := request(t, "GET", s.base+"/v1/turns?conversation_id="+convs["data"].([]any)[0].(map[string]any)["id"].(string), key, "")
	if data, _ := turns["data"].([]any); st != 200 || len(data) != 1 || data[0].(map[string]any)["status"] != "failed" {
		t.Fatalf("the failed turn: %d %v", st, turns)
	}
}

// TestModelNotSupportedWithoutLLM: without --llm-base-url an assistant of
// another model is refused with model_not_supported, and so is a model
// --llm-models does not list; a bad base URL stops the server at start.
func TestModelNotSupportedWithoutLLM(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir)
	key := s.field(t, `API key\s+(ams_sk_\w+)`)
	_, a := request(t, "POST", s.base+"/v1/assistants", key, `{"name":"Gepetto","model":"gpt-test"}`)
	st, e := request(t, "POST", s.base+"/v1/messages", key, `{"assistant_id":"`+a["id"].(string)+`","message":"Hi"}`)
	if errBody, _ := e["error"].(map[string]any); st != 400 || errBody["code"] != "model_not_supported" {
		t.Fatalf("%d %v", st, e)
	}

	// --llm-models limits which models assistants may use on the server.
	llm := openaitest.New(t)
	s2 := startServe(t, t.TempDir(), "--llm-base-url", llm.URL, "--llm-models", "gpt-allowed,gpt-other")
	key2 := s2.field(t, `API key\s+(ams_sk_\w+)`)
	for model, want := range map[string]int{"gpt-test": 400, "gpt-allowed": 201} {
		_, a := request(t, "POST", s2.base+"/v1/assistants", key2, `{"name":"Gepetto","model":"`+model+`"}`)
		llm.Push(openaitest.Text("Allowed."))
		if st, e := request(t, "POST", s2.base+"/v1/messages", key2, `{"assistant_id":"`+a["id"].(string)+`","message":"Hi"}`); st != want {
			t.Fatalf("model %s: %d %v", model, st, e)
		}
	}
	if n := len(llm.Requests()); n != 1 {
		t.Fatalf("%d requests to the model, want 1 (gpt-allowed's)", n)
	}

	cmd := exec.Command(amsBinary(t), "serve", "--addr", "127.0.0.1:0", "--llm-base-url", "ftp://example.com/v1")
	cmd.Env = append(os.Environ(), "AMS_DATA_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--llm-base-url") {
		t.Fatalf("ams serve with a bad --llm-base-url: %v\n%s", err, out)
	}
}

// streamMessage posts a streamed message and returns its events as
// [name, data] pairs.
func streamMessage(t *testing.T, base, key, body string) [][2]string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream answer: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var events [][2]string
	var cur [2]string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur != [2]string{} {
				events = append(events, cur)
				cur = [2]string{}
			}
		case strings.HasPrefix(line, "event: "):
			cur[0] = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur[1] += strings.TrimPrefix(line, "data: ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		t.Fatal("no events")
	}
	return events
}
