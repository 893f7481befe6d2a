package messaging_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/messaging"
	"github.com/amsdev/ams/sqlite"
)

type engineFunc func(ctx context.Context, a *ams.Assistant, h []*ams.Message) (*ams.Reply, error)

func (f engineFunc) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	return f(ctx, req.Assistant, req.History)
}

// setup gives a service on a fresh store, with one account and assistant;
// its engine may take a minute (a bound for a loaded machine, not a figure).
func setup(t *testing.T, e ams.Engine) (*messaging.Service, *sqlite.DB, *ams.User, *ams.Assistant) {
	t.Helper()
	ctx := context.Background()
	db := sqlitetest.Open(t)
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "m@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "A", Model: ams.ModelBuiltin, CreatedAt: now, UpdatedAt: now}
	if err := errors.Join(db.CreateUser(ctx, u), db.CreateAssistant(ctx, a)); err != nil {
		t.Fatal(err)
	}
	s := &messaging.Service{Store: ams.Narrow[messaging.Tx](db), Clock: func() time.Time { return now },
		EngineFor: func(*ams.Assistant) (ams.Engine, error) { return e, nil }, EngineTimeout: time.Minute}
	return s, db, u, a
}

// onlyFailedTurn checks what a failed turn leaves: its conversation, its
// inbound message with its message.created event, the turn, failed
// with code, and its turn.failed event; no reply.
func onlyFailedTurn(t *testing.T, db *sqlite.DB, u *ams.User, code string) {
	t.Helper()
	ctx := context.Background()
	c, _ := db.ListConversations(ctx, u.ID, "", ams.ListParams{Limit: 10})
	e, _ := db.ListEvents(ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10})
	tr, _ := db.ListTurns(ctx, u.ID, "", ams.ListParams{Limit: 10})
	if len(c.Data) != 1 || len(e.Data) != 3 || len(tr.Data) != 1 || e.Data[0].Type != ams.EventTurnFailed {
		t.Fatalf("stored %d conversations, %d events, %d turns after a failure", len(c.Data), len(e.Data), len(tr.Data))
	}
	m, _ := db.ListMessages(ctx, u.ID, c.Data[0].ID, ams.ListParams{Limit: 10})
	if len(m.Data) != 1 || m.Data[0].Direction != ams.DirectionInbound || m.Data[0].ID != tr.Data[0].InboundMessageID {
		t.Fatalf("messages of a failed turn: %v", m.Data)
	}
	if got := tr.Data[0]; got.Status != ams.TurnFailed || got.Error == nil || got.Error.Code != code || got.ReplyMessageID != "" || got.CompletedAt == nil ||
		got.StopReason != ams.StopError {
		t.Fatalf("failed turn: %+v", got)
	}
}

func TestEngineFailureLeavesAFailedTurn(t *testing.T) {
	t.Parallel()
	s, db, u, a := setup(t, engineFunc(func(context.Context, *ams.Assistant, []*ams.Message) (*ams.Reply, error) {
		return nil, errors.New("provider said: secret internal detail")
	}))
	_, err := s.Send(context.Background(), u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi"})
	var e *ams.Error
	if !errors.As(err, &e) || e.Kind != ams.EUPSTREAM || e.Code != "engine_error" || strings.Contains(e.Message, "secret") {
		t.Fatalf("engine failure: %#v", err)
	}
	onlyFailedTurn(t, db, u, "engine_error")
}

func TestEngineTimeout(t *testing.T) {
	t.Parallel()
	s, db, u, a := setup(t, engineFunc(func(ctx context.Context, _ *ams.Assistant, _ []*ams.Message) (*ams.Reply, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	s.EngineTimeout = 50 * time.Millisecond
	_, err := s.Send(context.Background(), u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi"})
	var e *ams.Error
	if !errors.As(err, &e) || e.Kind != ams.EUPSTREAM || !strings.Contains(e.Message, "in time") {
		t.Fatalf("engine timeout: %#v", err)
	}
	onlyFailedTurn(t, db, u, "engine_error")
}

func TestEmptyReplyRefused(t *testing.T) {
	t.Parallel()
	s, db, u, a := setup(t, engineFunc(func(context.Context, *ams.Assistant, []*ams.Message) (*ams.Reply, error) {
		return &ams.Reply{Content: "  "}, nil
	}))
	if _, err := s.Send(context.Background(), u.ID, messaging.SendInput{AssistantID: a.ID, Message: "hi"}); ams.ErrorKindOf(err) != ams.EUPSTREAM {
		t.Fatalf("empty reply: %v", err)
	}
	onlyFailedTurn(t, db, u, "engine_error")
}

func TestEngineSeesHistoryEndingWithInbound(t *testing.T) {
	t.Parallel()
	var seen [][]*ams.Message
	s, _, u, a := setup(t, engineFunc(func(_ context.Context, _ *ams.Assistant, h []*ams.Message) (*ams.Reply, error) {
		seen = append(seen, h)
		return &ams.Reply{Content: "ok " + h[len(h)-1].Content}, nil
	}))
	ctx := context.Background()
	r1, err := s.Send(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "two", ConversationID: r1.ConversationID}); err != nil {
		t.Fatal(err)
	}
	h := seen[1]
	if len(h) != 3 || h[0].Content != "one" || h[1].Content != "ok one" || h[2].Content != "two" || h[2].Direction != ams.DirectionInbound {
		t.Fatalf("history of the second turn: %v", h)
	}
}

func TestTitle(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"  Hello  ":                 "Hello",
		"first line\nsecond":        "first line",
		strings.Repeat("é", 100):    strings.Repeat("é", 79) + "…",
		strings.Repeat("word ", 30): strings.TrimSpace(strings.Repeat("word ", 16)[:79]) + "…",
	} {
		if got := messaging.Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}
