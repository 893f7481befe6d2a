package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/builtin"
	"github.com/amsdev/ams/engine/openai"
	"github.com/amsdev/ams/engine/openai/openaitest"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// turnWorld counts what a turn left: tasks, task.created events, and the
// messages of its conversation. It waits (up to 5 s) for the counts to be
// want: on PostgreSQL the events list holds back events while any older
// transaction of the database is open, other tests' included.
func (f *fixture) turnWorld(conv string, want [3]int) [3]int {
	f.T.Helper()
	ctx := context.Background()
	var got [3]int
	wait.Until(func() bool {
		ts, err1 := f.Data.ListTasks(ctx, f.User.ID, ams.TaskFilter{}, ams.ListParams{Limit: 100})
		evs, err2 := f.Data.ListEvents(ctx, f.User.ID, ams.EventFilter{Type: "task.created"}, ams.ListParams{Limit: 100})
		ms, err3 := f.Data.ListMessages(ctx, f.User.ID, conv, ams.ListParams{Limit: 100})
		if err := errors.Join(err1, err2, err3); err != nil {
			f.T.Fatal(err)
		}
		got = [3]int{len(ts.Data), len(evs.Data), len(ms.Data)}
		return got == want
	})
	return got
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
	t.Parallel()
	stores := map[string]func(t *testing.T) ams.Store{
		"sqlite":   func(*testing.T) ams.Store { return nil },
		"postgres": func(t *testing.T) ams.Store { return pgtest.Open(t) },
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
	if got := f.turnWorld(conv, [3]int{1, 1, 1}); got != [3]int{1, 1, 1} {
		t.Fatalf("after the failure: %v tasks, task.created, messages; want 1, 1, 1 (the inbound message)", got)
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
	if got := f.turnWorld(conv, [3]int{1, 1, 2}); got != [3]int{1, 1, 2} {
		t.Fatalf("after the retry: %v tasks, task.created, messages; want 1, 1, 2", got)
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
	if !strings.HasPrefix(got, "turn.started tool_call tool_result") || !strings.Contains(got, "error turn.failed turn.started tool_call tool_result") ||
		!strings.HasSuffix(got, "message.completed turn.completed") || !strings.Contains(got, "error turn.failed turn.started") {
		t.Fatalf("stream of the turn: %s", got)
	}
	// A third try replays the reply; another message with the key is refused.
	r = f.do("POST", "/v1/messages", string(body), "Idempotency-Key", "k-tools")
	if r.status != 201 || r.json(t)["id"] != reply["id"] {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	if got := f.turnWorld(conv, [3]int{1, 1, 2}); got != [3]int{1, 1, 2} {
		t.Fatalf("after the replay: %v tasks, task.created, messages", got)
	}
}

// waitTurn waits until the turn has ended and returns it.
func (f *fixture) waitTurn(id string) map[string]any {
	f.T.Helper()
	// The store is watched, not the API, whose rate limit a poll would
	// run into; the API's record is read once the turn has ended. On the
	// fixture's own SQLite store the check runs again at each turn that
	// ends in the server (messaging's TurnEnded signal).
	if f.Store != nil {
		ended := &f.App.Messages.Signals.TurnEnded
		for {
			turn, err := f.Store.FindTurn(context.Background(), f.User.ID, id)
			if err != nil {
				f.T.Fatalf("find turn %s: %v", id, err)
			}
			if turn.Status != ams.TurnRunning {
				return f.do("GET", "/v1/turns/"+id, "").json(f.T)
			}
			ended.Wait(f.T)
		}
	}
	var turn map[string]any
	wait.Until(func() bool {
		turn = f.do("GET", "/v1/turns/"+id, "").json(f.T)
		return turn["status"] != "running"
	})
	return turn
}

// TestCancelEndpoints: POST /v1/messages/{id}/cancel (the inbound
// message's id) stops a running turn: the stream ends with an error event
// of code turn_cancelled, the turn is cancelled; cancelling again, or
// through POST /v1/turns/{id}/cancel, answers it unchanged. A retry with
// the key of a turn still running (its client left) is 409
// turn_in_progress.
func TestCancelEndpoints(t *testing.T) {
	t.Parallel()
	f := setup(t)
	started := make(chan struct{}, 1)
	f.useEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	ctx, leave := context.WithCancel(context.Background())
	resp := f.openStream(ctx, t, http.DefaultClient, f.streamBody("hi"), "Idempotency-Key", "k-c")
	br := bufio.NewReader(resp.Body)
	ev, err := readEvent(br)
	if err != nil || ev.name != "turn.started" {
		t.Fatalf("first event %+v %v", ev, err)
	}
	<-started
	var start struct {
		TurnID           string `json:"turn_id"`
		InboundMessageID string `json:"inbound_message_id"`
	}
	if err := json.Unmarshal([]byte(ev.data), &start); err != nil {
		t.Fatal(err)
	}
	// The client leaves; its key is freed, and a retry finds the turn
	// running.
	leave()
	resp.Body.Close()
	var r *response
	wait.Until(func() bool {
		r = f.do("POST", "/v1/messages", f.streamBody("hi"), "Idempotency-Key", "k-c")
		return r.status != 409 || !strings.Contains(string(r.body), "idempotency_key_in_use")
	})
	wantError(t, r, 409, "invalid_request_error", "turn_in_progress", "")
	// Follow it from another connection while cancelling.
	follow := make(chan []sseEvent, 1)
	go func() {
		follow <- readEvents(t, f.do("GET", "/v1/turns/"+start.TurnID+"/events", "", "Last-Event-ID", "1").body)
	}()
	r = f.do("POST", "/v1/messages/"+start.InboundMessageID+"/cancel", "")
	turn := r.json(t)
	if r.status != 200 || turn["status"] != "cancelled" || turn["error"].(map[string]any)["code"] != "turn_cancelled" {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	select {
	case evs := <-follow:
		if len(evs) != 2 || evs[0].name != "error" || !strings.Contains(evs[0].data, "turn_cancelled") || evs[1].name != "turn.cancelled" {
			t.Fatalf("followed events %+v", evs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the followed stream did not end")
	}
	again := f.do("POST", "/v1/turns/"+start.TurnID+"/cancel", "{}")
	if again.status != 200 || again.json(t)["updated_at"] != turn["updated_at"] {
		t.Fatalf("second cancel: %d %s", again.status, again.body)
	}
	wantError(t, f.do("POST", "/v1/messages", f.streamBody("hi"), "Idempotency-Key", "k-c"), 409, "invalid_request_error", "turn_cancelled", "")
	wantError(t, f.do("POST", "/v1/turns/trn_nothere/cancel", ""), 404, "invalid_request_error", "resource_missing", "")
	// The list, by conversation.
	list := f.do("GET", "/v1/turns?conversation_id="+turn["conversation_id"].(string), "").json(t)
	if data := list["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != start.TurnID {
		t.Fatalf("list: %v", list)
	}
	wantError(t, f.do("GET", "/v1/turns?conversation_id=x", ""), 400, "invalid_request_error", "parameter_invalid", "conversation_id")
}
