package messaging_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/engine/openai"
	"github.com/amsdev/ams/engine/openai/openaitest"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/messaging"
)

// taskTools is a toolbox with one tool, create_task, that records its
// runs.
type taskTools struct {
	mu   sync.Mutex
	runs []string
}

func (b *taskTools) Specs() []ams.ToolSpec {
	return []ams.ToolSpec{{Name: "create_task", Parameters: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}}}`)}}
}

func (b *taskTools) Run(ctx context.Context, name string, input json.RawMessage) (*ams.Action, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs = append(b.runs, name)
	return &ams.Action{ID: ams.NewID(ams.PrefixAction), Object: "action", Type: name, Input: input, Status: ams.ActionSucceeded,
		Result: json.RawMessage(`{"id":"task_1"}`)}, nil
}

func (b *taskTools) ran() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.runs...)
}

// TestApprovalThenClientOutputs: one model round calls a tool that needs
// approval and a client tool. The turn stops for the approval; once
// approved (the tool runs), it stops for the client call's output
// without asking the model again; with the output, the model is given
// both calls answered and the turn completes. The client call is never
// lost, on either store, and each stop is a turn.requires_action event.
func TestApprovalThenClientOutputs(t *testing.T) {
	onBoth(t, func(t *testing.T, db ams.Store) {
		ctx := context.Background()
		srv := openaitest.New(t,
			openaitest.ToolCalls(
				openaitest.Call{ID: "call_a", Name: "create_task", Arguments: `{"title":"Call Ann"}`},
				openaitest.Call{ID: "call_b", Name: "lookup_order", Arguments: `{"id":7}`},
			),
			openaitest.Text("Task made; order 7 has shipped."),
		)
		e, err := openai.New(openai.Config{BaseURL: srv.URL, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := services(t, db, e)
		tb := &taskTools{}
		s.Tools = func(string, *ams.Assistant, string) ams.Toolbox { return tb }
		u, _ := account(t, db)
		now := time.Now().UTC()
		a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "B", Model: "gpt-test", RequireApproval: []string{"create_task"},
			CreatedAt: now, UpdatedAt: now}
		if err := db.CreateAssistant(ctx, a); err != nil {
			t.Fatal(err)
		}
		lookup := &ams.ClientTool{Type: "function", Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object"}`)}
		r, err := s.Start(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "Remind me to call Ann; where is order 7?",
			Options: &ams.TurnOptions{Tools: []*ams.ClientTool{lookup}}})
		if err != nil {
			t.Fatal(err)
		}
		first := r.Final()
		if first == nil || first.Status != ams.TurnRequiresAction || first.RequiredAction.Type != ams.RequiredApproveToolCalls ||
			len(first.RequiredAction.ToolCalls) != 1 || first.RequiredAction.ToolCalls[0].ID != "call_a" {
			t.Fatalf("first stop: %+v", first)
		}
		// The client call waits, stored, and cannot be answered yet.
		if _, err := s.SubmitToolOutputs(ctx, u.ID, first.ID, "UTC", []messaging.ToolOutput{{ToolCallID: "call_b", Output: "x"}}); !hasCode(err, "turn_not_waiting") {
			t.Fatalf("outputs before the approval: %v", err)
		}
		stored, err := db.FindTurn(ctx, u.ID, first.ID)
		if err != nil || len(ams.PendingCalls(stored.Calls)) != 1 {
			t.Fatalf("stored calls %+v err %v", stored, err)
		}
		run, err := s.Approve(ctx, u.ID, first.ID, "UTC", []messaging.Approval{{ToolCallID: "call_a", Approved: true}})
		if err != nil {
			t.Fatal(err)
		}
		second := run.Final()
		if second == nil || second.Status != ams.TurnRequiresAction || second.RequiredAction.Type != ams.RequiredSubmitToolOutputs ||
			len(second.RequiredAction.ToolCalls) != 1 || second.RequiredAction.ToolCalls[0].ID != "call_b" ||
			second.RequiredAction.ToolCalls[0].Name != "lookup_order" || string(second.RequiredAction.ToolCalls[0].Arguments) != `{"id":7}` {
			t.Fatalf("second stop: %+v", second)
		}
		if got := tb.ran(); len(got) != 1 || got[0] != "create_task" {
			t.Fatalf("tool runs after the approval: %v", got)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("the model was asked %d times before the client's output", n)
		}
		// Answered twice or for the approved call: refused.
		if _, err := s.SubmitToolOutputs(ctx, u.ID, first.ID, "UTC", []messaging.ToolOutput{{ToolCallID: "call_a", Output: "x"}}); ams.ErrorKindOf(err) != ams.EINVALID {
			t.Fatalf("output for the approved call: %v", err)
		}
		run, err = s.SubmitToolOutputs(ctx, u.ID, first.ID, "UTC", []messaging.ToolOutput{{ToolCallID: "call_b", Output: "shipped"}})
		if err != nil {
			t.Fatal(err)
		}
		reply, err := run.Result()
		if err != nil || reply.Content != "Task made; order 7 has shipped." {
			t.Fatalf("reply %+v err %v", reply, err)
		}
		done := run.Final()
		if done.Status != ams.TurnCompleted || done.StopReason != ams.StopEndTurn || len(done.ActionIDs) != 1 {
			t.Fatalf("turn: %+v", done)
		}
		answers := map[string]string{}
		for _, m := range srv.Requests()[1].Messages() {
			if m["role"] == "tool" {
				c, _ := m["content"].(string)
				answers[m["tool_call_id"].(string)] = c
			}
		}
		if len(answers) != 2 || answers["call_b"] != "shipped" || !strings.Contains(answers["call_a"], "task_1") {
			t.Fatalf("tool messages = %v", answers)
		}
		if got := tb.ran(); len(got) != 1 {
			t.Fatalf("tool runs: %v", got)
		}
		// The events reach the log through the outbox.
		wait.Eventually(t, "two turn.requires_action events", func() bool {
			evs, err := db.ListEvents(ctx, u.ID, ams.EventFilter{Type: ams.EventTurnRequiresAction}, ams.ListParams{Limit: 10})
			return err == nil && len(evs.Data) == 2
		})
	})
}
