package messaging_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/messaging"
)

func echo() ams.Engine {
	return engineFunc(func(_ context.Context, _ *ams.Assistant, h []*ams.Message) (*ams.Reply, error) {
		return &ams.Reply{Content: "you said " + h[len(h)-1].Content}, nil
	})
}

func eventsOf(t *testing.T, s *messaging.Service, u *ams.User, typ string) []*ams.Event {
	t.Helper()
	p, err := s.Store.(ams.Narrowed[messaging.Tx]).ListEvents(context.Background(), u.ID, ams.EventFilter{Type: typ}, ams.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return p.Data
}

func TestEditMessage(t *testing.T) {
	t.Parallel()
	s, db, u, a := setup(t, echo())
	ctx := context.Background()
	reply, err := s.Send(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := db.RecentMessages(ctx, u.ID, reply.ConversationID, 10)
	in := hist[0]
	m, err := s.EditMessage(ctx, u.ID, in.ID, "uno")
	if err != nil || m.Content != "uno" || m.Direction != ams.DirectionInbound {
		t.Fatalf("edit: %+v %v", m, err)
	}
	if got, _ := db.FindMessage(ctx, u.ID, in.ID); got.Content != "uno" {
		t.Fatalf("stored: %+v", got)
	}
	ev := eventsOf(t, s, u, ams.EventMessageUpdated)
	if len(ev) != 1 || ev[0].Data["message_id"] != in.ID || ev[0].Data["content"] != "uno" || ev[0].Data["direction"] != ams.DirectionInbound {
		t.Fatalf("message.updated: %+v", ev)
	}
	// Unchanged content: no event.
	if _, err := s.EditMessage(ctx, u.ID, in.ID, "uno"); err != nil {
		t.Fatal(err)
	}
	if n := len(eventsOf(t, s, u, ams.EventMessageUpdated)); n != 1 {
		t.Fatalf("%d message.updated after a no-op edit", n)
	}
	// Refused: the reply, bad content, unknown or another account's id.
	other := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "o@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
	if err := db.CreateUser(ctx, other); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, id, content string
		kind              ams.ErrorKind
		code              string
	}{
		{u.ID, reply.ID, "edited reply", ams.EINVALID, "message_not_editable"},
		{u.ID, in.ID, "", ams.EINVALID, "parameter_invalid"},
		{u.ID, in.ID, strings.Repeat("x", ams.MaxMessageLength+1), ams.EINVALID, "parameter_invalid"},
		{u.ID, in.ID, "a\x00b", ams.EINVALID, "parameter_invalid"},
		{u.ID, in.ID, "\xff", ams.EINVALID, "parameter_invalid"},
		{u.ID, "msg_nothere", "x", ams.ENOTFOUND, "resource_missing"},
		{other.ID, in.ID, "x", ams.ENOTFOUND, "resource_missing"},
	} {
		_, err := s.EditMessage(ctx, c.user, c.id, c.content)
		var e *ams.Error
		if !errors.As(err, &e) || e.Kind != c.kind || e.Code != c.code {
			t.Errorf("EditMessage(%s, %.20q): %v, want %s", c.id, c.content, err, c.code)
		}
	}
	if got, _ := db.FindMessage(ctx, u.ID, reply.ID); got.Content != reply.Content {
		t.Fatalf("reply changed: %+v", got)
	}
	if n := len(eventsOf(t, s, u, ams.EventMessageUpdated)); n != 1 {
		t.Fatalf("%d message.updated after refused edits", n)
	}
}

func TestDeleteMessage(t *testing.T) {
	t.Parallel()
	s, db, u, a := setup(t, echo())
	ctx := context.Background()
	reply, err := s.Send(ctx, u.ID, messaging.SendInput{AssistantID: a.ID, Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMessage(ctx, u.ID, reply.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FindMessage(ctx, u.ID, reply.ID); !ams.IsNotFound(err) {
		t.Fatalf("deleted message found: %v", err)
	}
	c, _ := db.FindConversation(ctx, u.ID, reply.ConversationID)
	if c.MessageCount != 1 {
		t.Fatalf("message_count %d after delete", c.MessageCount)
	}
	ev := eventsOf(t, s, u, ams.EventMessageDeleted)
	if _, has := ev[0].Data["content"]; len(ev) != 1 || ev[0].Data["message_id"] != reply.ID || has {
		t.Fatalf("message.deleted: %+v", ev)
	}
	for _, e := range eventsOf(t, s, u, ams.EventMessageCreated) {
		if e.Data["message_id"] == reply.ID && e.Data["content"] != nil {
			t.Fatalf("the message.created of the deleted reply still carries %q", e.Data["content"])
		}
	}
	if err := s.DeleteMessage(ctx, u.ID, reply.ID); !ams.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
	if n := len(eventsOf(t, s, u, ams.EventMessageDeleted)); n != 1 {
		t.Fatalf("%d message.deleted", n)
	}
}

func TestCheckContent(t *testing.T) {
	t.Parallel()
	for text, ok := range map[string]bool{
		"hello":       true,
		"line\nbreak": true,
		strings.Repeat("é", ams.MaxMessageLength/2): true,
		" \t\n": false,
		strings.Repeat("x", ams.MaxMessageLength+1): false,
		"nul\x00":  false,
		"bad \xc3": false,
	} {
		err := messaging.CheckContent(text, "content")
		var e *ams.Error
		if ok != (err == nil) || (err != nil && (!errors.As(err, &e) || e.Param != "content")) {
			t.Errorf("CheckContent(%.20q) = %v", text, err)
		}
	}
}
