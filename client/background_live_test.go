package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// TestBackgroundLive: SendMessageBackground answers the turn at once; it
// completes on the server with its usage and stop reason; a send with
// MultitaskReject to a conversation whose turn is unfinished is a 409
// conversation_busy.
func TestBackgroundLive(t *testing.T) {
	f := amstest.New(t)
	c := client.New(f.Server.URL, f.Key)
	ctx := context.Background()
	turn, err := c.SendMessageBackground(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: "Hello in the background"})
	if err != nil || turn.Status != "running" || !turn.Background || turn.MultitaskStrategy != client.MultitaskEnqueue {
		t.Fatalf("background send: %+v %v", turn, err)
	}
	wait.Eventually(t, "the background turn to complete", func() bool {
		got, err := f.Store.FindTurn(ctx, f.User.ID, turn.ID) // not the API, whose rate limit a poll would meet
		return err == nil && got.Status == "completed"
	})
	if turn, err = c.GetTurn(ctx, turn.ID); err != nil {
		t.Fatal(err)
	}
	if turn.StopReason != "end_turn" || turn.Usage.TotalTokens != turn.Usage.InputTokens+turn.Usage.OutputTokens ||
		turn.ReplyMessageID == "" || turn.ActionIDs == nil {
		t.Fatalf("completed turn: %+v", turn)
	}
	// A conversation with an unfinished (queued) turn refuses a send
	// with reject.
	f.App.Messages.EngineFor = func(a *ams.Assistant) (ams.Engine, error) { return blockEngine{}, nil }
	first, err := c.SendMessageBackground(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: "wait", ConversationID: turn.ConversationID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SendMessage(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: "now", ConversationID: turn.ConversationID,
		MultitaskStrategy: client.MultitaskReject})
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 409 || e.Code != "conversation_busy" {
		t.Fatalf("reject: %v", err)
	}
	if _, err := c.CancelTurn(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
}

// blockEngine replies when its context ends (the turn is cancelled).
type blockEngine struct{}

func (blockEngine) Reply(ctx context.Context, _ *ams.EngineRequest) (*ams.Reply, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
