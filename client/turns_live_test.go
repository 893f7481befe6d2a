package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// cutTransport cuts the body of the first POST /v1/messages answer after
// limit bytes, as a dropped connection would.
type cutTransport struct {
	limit int
	cut   atomic.Bool
}

func (t *cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == "POST" && r.URL.Path == "/v1/messages" && !t.cut.Swap(true) {
		resp.Body = &cutBody{ReadCloser: resp.Body, left: t.limit}
	}
	return resp, err
}

type cutBody struct {
	io.ReadCloser
	left int
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= n
	return n, err
}

// TestTurnsLive: a streamed reply with its tool events and event ids,
// resumed after a dropped connection without a lost or repeated event;
// the turn's record, its actions' turn_id, following it again, and
// cancelling it.
func TestTurnsLive(t *testing.T) {
	f := amstest.New(t)
	tr := &cutTransport{limit: 300}
	c := client.New(f.Server.URL, f.Key, client.WithHTTPClient(&http.Client{Transport: tr}))
	ctx := context.Background()
	var evs []client.MessageStreamEvent
	for ev, err := range c.SendMessageStream(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: "Remind me to call Anna tomorrow at 9"}) {
		if err != nil {
			t.Fatalf("stream: %v (after %d events)", err, len(evs))
		}
		evs = append(evs, ev)
	}
	if !tr.cut.Load() {
		t.Fatal("the connection was not cut")
	}
	var types []string
	var text strings.Builder
	for i, ev := range evs {
		if ev.ID != strconv.Itoa(i+1) {
			t.Fatalf("event %d has id %q: an event was lost or repeated", i, ev.ID)
		}
		types = append(types, ev.Type)
		text.WriteString(ev.Delta)
	}
	got := strings.Join(types, " ")
	if !strings.HasPrefix(got, "turn.started tool_call tool_result message.delta message.delta") || !strings.HasSuffix(got, "message.completed") {
		t.Fatalf("events %s", got)
	}
	last := evs[len(evs)-1]
	turnID := evs[0].Turn.TurnID
	if text.String() != last.Message.Content || last.TurnID != turnID || evs[1].ToolCall.Name != "create_task" || evs[1].ToolCall.CallSeq != 1 {
		t.Fatalf("deltas %q, reply %+v, call %+v", text.String(), last.Message, evs[1].ToolCall)
	}
	if act := evs[2].ToolResult.Action; act == nil || act.TurnID != turnID || act.CallSeq != 1 || act.Status != "succeeded" {
		t.Fatalf("tool result %+v", evs[2].ToolResult)
	}

	turn, err := c.GetTurn(ctx, turnID)
	if err != nil || turn.Status != client.TurnCompleted || turn.ReplyMessageID != last.Message.ID || turn.InboundMessageID != evs[0].Turn.InboundMessageID {
		t.Fatalf("GetTurn: %+v %v", turn, err)
	}
	turns, err := c.ListTurns(ctx, &client.ListTurnsParams{ConversationID: turn.ConversationID})
	if err != nil || len(turns.Data) != 1 || turns.Data[0].ID != turnID {
		t.Fatalf("ListTurns: %+v %v", turns, err)
	}
	acts, err := c.ListConversationActions(ctx, f.Assistant.ID, turn.ConversationID, nil)
	if err != nil || len(acts.Data) != 1 || acts.Data[0].TurnID != turnID || acts.Data[0].CallSeq != 1 {
		t.Fatalf("actions: %+v %v", acts, err)
	}
	// Following the finished turn from an event gives the rest.
	var rest []string
	err = c.FollowTurn(ctx, turnID, evs[len(evs)-3].ID, func(ev client.MessageStreamEvent) error {
		rest = append(rest, ev.ID+" "+ev.Type)
		return nil
	})
	if err != nil || len(rest) != 2 || rest[1] != last.ID+" message.completed" {
		t.Fatalf("FollowTurn: %v %v", rest, err)
	}
	// Cancelling a finished turn changes nothing.
	if ct, err := c.CancelTurn(ctx, turnID); err != nil || ct.Status != client.TurnCompleted {
		t.Fatalf("CancelTurn: %+v %v", ct, err)
	}
	if ct, err := c.CancelMessage(ctx, turn.InboundMessageID); err != nil || ct.ID != turnID {
		t.Fatalf("CancelMessage: %+v %v", ct, err)
	}
	var apiErr *client.Error
	if _, err := c.GetTurn(ctx, "trn_nothere"); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("GetTurn of nothing: %v", err)
	}
}

// TestCancelTurnLive: CancelMessage stops a running turn; the stream
// ends with an *Error of code turn_cancelled.
func TestCancelTurnLive(t *testing.T) {
	started := make(chan struct{}, 1)
	f := amstest.New(t, amstest.WithEngine(engineFunc(func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
		req.Stream("Thinking")
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})))
	c := client.New(f.Server.URL, f.Key)
	ctx := context.Background()
	done := make(chan error, 1)
	var first client.MessageStreamEvent
	go func() {
		for ev, err := range c.SendMessageStream(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: "hi"}) {
			if err != nil {
				done <- err
				return
			}
			if ev.Type == client.StreamEventTurnStarted {
				first = ev
			}
		}
		done <- nil
	}()
	<-started
	// The engine runs: the turn is stored (wait on the store, then read
	// the API once).
	wait.Until(func() bool {
		p, err := f.Data.ListTurns(ctx, f.User.ID, "", ams.ListParams{Limit: 10})
		return err == nil && len(p.Data) == 1
	})
	turns, err := c.ListTurns(ctx, nil)
	if err != nil || len(turns.Data) != 1 {
		t.Fatalf("turns: %+v %v", turns, err)
	}
	ct, err := c.CancelMessage(ctx, turns.Data[0].InboundMessageID)
	if err != nil || ct.Status != client.TurnCancelled || ct.Error == nil || ct.Error.Code != "turn_cancelled" {
		t.Fatalf("CancelMessage: %+v %v", ct, err)
	}
	var apiErr *client.Error
	if err := <-done; !errors.As(err, &apiErr) || apiErr.Code != "turn_cancelled" || first.TurnID != ct.ID {
		t.Fatalf("stream of the cancelled turn: %v", err)
	}
}

type engineFunc func(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error)

func (f engineFunc) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	return f(ctx, req)
}
