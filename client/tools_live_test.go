package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/testing/amstest"
)

// TestRunTurnLive: RunTurn answers a client tool call with its callback
// and returns the completed turn and its reply; an approval callback
// decides on a built-in tool's call.
func TestRunTurnLive(t *testing.T) {
	f := amstest.New(t)
	c := client.New(f.Server.URL, f.Key)
	ctx := context.Background()
	var calls []client.RequestedToolCall
	turn, reply, err := c.RunTurn(ctx, client.RunTurnParams{AssistantID: f.Assistant.ID, Message: `lookup_order {"id": 7}`,
		Tools: []client.ClientTool{{Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object"}`)}}},
		func(ctx context.Context, call client.RequestedToolCall) (string, error) {
			calls = append(calls, call)
			return "shipped", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Name != "lookup_order" || string(calls[0].Arguments) != `{"id":7}` {
		t.Fatalf("calls = %+v", calls)
	}
	if turn.Status != client.TurnCompleted || turn.StopReason != "end_turn" || reply == nil || reply.Content != "lookup_order returned: shipped" {
		t.Fatalf("turn %+v reply %+v", turn, reply)
	}

	strategy := "enqueue"
	if _, err := c.UpdateAssistant(ctx, f.Assistant.ID, client.UpdateAssistantParams{RequireApproval: []string{"create_task"}, MultitaskStrategy: &strategy}); err != nil {
		t.Fatal(err)
	}
	var asked []string
	turn, reply, err = c.RunTurn(ctx, client.RunTurnParams{AssistantID: f.Assistant.ID, Message: "add a task: renew passport",
		Approve: func(ctx context.Context, call client.RequestedToolCall) (bool, string) {
			asked = append(asked, call.Name)
			return false, "not today"
		}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != "create_task" || turn.Status != client.TurnCompleted || !strings.Contains(reply.Content, "did not approve") ||
		len(turn.ActionIDs) != 1 {
		t.Fatalf("asked %v turn %+v reply %+v", asked, turn, reply)
	}
	act, err := c.GetAction(ctx, f.Assistant.ID, turn.ActionIDs[0])
	if err != nil || act.Status != "rejected" {
		t.Fatalf("action %+v %v", act, err)
	}
}
