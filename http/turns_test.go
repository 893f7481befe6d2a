package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/builtin"
	"github.com/amsdev/ams/engine/openai"
	"github.com/amsdev/ams/engine/openai/openaitest"
	"github.com/amsdev/ams/internal/amstest"
	"github.com/amsdev/ams/internal/pgtest"
)

// turnWorld counts what a turn left: tasks, task.created events, and the
// messages of its conversation.
func (f *fixture) turnWorld(conv string) (tasks, created, msgs int) {
	f.T.Helper()
	ctx := context.Background()
	ts, err1 := f.Data.ListTasks(ctx, f.User.ID, ams.TaskFilter{}, ams.ListParams{Limit: 100})
	evs, err2 := f.Data.ListEvents(ctx, f.User.ID, ams.EventFilter{Type: "task.created"}, ams.ListParams{Limit: 100})
	ms, err3 := f.Data.ListMessages(ctx, f.User.ID, conv, ams.ListParams{Limit: 100})
	if err := errors.Join(err1, err2, err3); err != nil {
		f.T.Fatal(err)
	}
	return len(ts.Data), len(evs.Data), len(ms.Data)
}

// TestFailureAfterToolRound is the scenario: the engine commits a
// create_task call, then fails. The turn is failed, the task and its
// task.created stay, there is no reply. A retry with the same
// Idempotency-Key resumes the turn: the engine asks for the same call,
// which is answered from the stored action (not run again); the reply is
// stored: exactly one task, one task.created, one reply. On both stores,
// with a model-backed engine (an OpenAI-compatible server that answers
// 500 on the second round) and with the built-in engine (wrapped to fail
// after its tool call).
func TestFailureAfterToolRound(t *testing.T) {
	stores := map[string]func(t *testing.T) ams.Store{
		"sqlite":   func(*testing.T) ams.Store { return nil },
		"postgres": func(t *testing.T) ams.Store { return pgtest.New(t) },
	}
	for sname, newStore := range stores {
		t.Run(sname+"/openai", func(t *testing.T) {
			llm := openaitest.New(t)
			eng, err := openai.New(openai.Config{BaseURL: llm.URL, APIKey: "sk-test", MaxRetries: -1, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			llm.Push(openaitest.ToolCalls(openaitest.Call{ID: "call_1", Name: "create_task", Arguments: `{"title":"Call Bob"}`}),
				openaitest.Error(500, "", "the model fell over"))
			retry := func() {
				llm.Push(openaitest.ToolCalls(openaitest.Call{ID: "call_1", Name: "create_task", Arguments: `{"title":"Call Bob"}`}),
					openaitest.Text("Done: ", "Call Bob."))
			}
			testFailureAfterToolRound(t, newStore(t), eng, "Remind me to call Bob", retry, "Done: Call Bob.")
			// The model saw the stored action as the tool's result on the
			// retry, as on the first attempt.
			reqs := llm.Requests()
			tool := reqs[len(reqs)-1].Messages()
			if last := tool[len(tool)-1]; last["role"] != "tool" || !strings.Contains(last["content"].(string), `"status":"succeeded"`) {
				t.Fatalf("tool message of the retry: %v", last)
			}
		})
		t.Run(sname+"/builtin", func(t *testing.T) {
			b := builtin.New()
			b.Now = func() time.Time { return amstest.Start }
			var fail atomic.Bool
			fail.Store(true)
			eng := engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
				r, err := b.Reply(ctx, req)
				if err == nil && fail.Swap(false) {
					return nil, errors.New("the reply could not be finished")
				}
				return r, err
			})
			testFailureAfterToolRound(t, newStore(t), eng, "Remind me to call Anna tomorrow at 9", func() {}, "")
		})
	}
}

func testFailureAfterToolRound(t *testing.T, store ams.Store, eng ams.Engine, msg string, beforeRetry func(), wantReply string) {
	var opts []amstest.Option
	if store != nil {
		opts = append(opts, amstest.OnStore(store))
	}
	opts = append(opts, amstest.WithEngine(eng))
	f := &fixture{amstest.New(t, opts...)}
	body, _ := json.Marshal(map[string]any{"assistant_id": f.Assistant.ID, "message": msg})
	r := f.do("POST", "/v1/messages", string(body), "Idempotency-Key", "k-tools")
	if r.status != 502 {
		t.Fatalf("first attempt: %d %s", r.status, r.body)
	}
	turnID := r.header.Get("X-Turn-Id")
	turn := f.do("GET", "/v1/turns/"+turnID, "").json(t)
	conv, _ := turn["conversation_id"].(string)
	if turn["status"] != "failed" || turn["reply_message_id"] != "" || turn["error"].(map[string]any)["code"] != "engine_error" || turn["completed_at"] == nil {
		t.Fatalf("turn after the failure: %v", turn)
	}
	if tasks, created, msgs := f.turnWorld(conv); tasks != 1 || created != 1 || msgs != 1 {
		t.Fatalf("after the failure: %d tasks, %d task.created, %d messages; want 1, 1, 1 (the inbound message)", tasks, created, msgs)
	}
	acts := f.do("GET", "/v1/assistants/"+f.Assistant.ID+"/actions?conversation_id="+conv, "").json(t)["data"].([]any)
	if len(acts) != 1 || acts[0].(map[string]any)["turn_id"] != turnID || acts[0].(map[string]any)["call_seq"] != 1.0 {
		t.Fatalf("actions of the failed turn: %v", acts)
	}
	if c, err := f.Data.FindConversation(context.Background(), f.User.ID, conv); err != nil || c.ID != conv {
		t.Fatalf("the conversation named by the action: %v %v", c, err)
	}

	beforeRetry()
	r = f.do("POST", "/v1/messages", string(body), "Idempotency-Key", "k-tools")
	if r.status != 201 || r.header.Get("X-Turn-Id") != turnID {
		t.Fatalf("retry: %d %v %s", r.status, r.header, r.body)
	}
	reply := r.json(t)
	if wantReply != "" && reply["content"] != wantReply {
		t.Fatalf("reply %v", reply)
	}
	if tasks, created, msgs := f.turnWorld(conv); tasks != 1 || created != 1 || msgs != 2 {
		t.Fatalf("after the retry: %d tasks, %d task.created, %d messages; want 1, 1, 2", tasks, created, msgs)
	}
	turn = f.do("GET", "/v1/turns/"+turnID, "").json(t)
	if turn["status"] != "completed" || turn["reply_message_id"] != reply["id"] || turn["error"] != nil {
		t.Fatalf("turn after the retry: %v", turn)
	}
	acts = f.do("GET", "/v1/assistants/"+f.Assistant.ID+"/actions?conversation_id="+conv, "").json(t)["data"].([]any)
	if len(acts) != 1 {
		t.Fatalf("%d actions after the retry, want the one of the first attempt", len(acts))
	}
	// The stream of the turn tells both attempts: the second found the
	// call committed.
	evs := readEvents(t, f.do("GET", "/v1/turns/"+turnID+"/events", "").body)
	var names []string
	for _, ev := range evs {
		names = append(names, ev.name)
		if ev.name == "tool_result" && strings.Contains(ev.data, `"replayed":true`) && !strings.Contains(ev.data, `"call_seq":1`) {
			t.Fatalf("replayed call %s", ev.data)
		}
	}
	got := strings.Join(names, " ")
	if !strings.HasPrefix(got, "turn.started tool_call tool_result") || !strings.Contains(got, "error turn.started tool_call tool_result") ||
		!strings.HasSuffix(got, "message.completed") {
		t.Fatalf("stream of the turn: %s", got)
	}
	// A third try replays the reply; another message with the key is refused.
	r = f.do("POST", "/v1/messages", string(body), "Idempotency-Key", "k-tools")
	if r.status != 201 || r.json(t)["id"] != reply["id"] {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	if tasks, created, msgs := f.turnWorld(conv); tasks != 1 || created != 1 || msgs != 2 {
		t.Fatalf("after the replay: %d tasks, %d task.created, %d messages", tasks, created, msgs)
	}
}
