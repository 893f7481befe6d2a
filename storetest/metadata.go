package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// Metadata on every record that carries it, and conversations as
// resources (create, update, delete with their messages).

func testMetadata(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "meta@example.com")
	md := ams.Metadata{"order": "A-17", "crm": "x\ny ünïcode"}
	want := func(what string, got ams.Metadata) {
		t.Helper()
		if !got.Equal(md) {
			t.Fatalf("%s metadata: %v, want %v", what, got, md)
		}
	}
	empty := func(what string, got ams.Metadata) {
		t.Helper()
		if got == nil || len(got) != 0 {
			t.Fatalf("%s metadata: %#v, want empty and not nil", what, got)
		}
		if b, _ := json.Marshal(got); string(b) != "{}" {
			t.Fatalf("%s metadata encodes as %s", what, b)
		}
	}

	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "m", Model: ams.ModelBuiltin, Metadata: md, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateAssistant(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindAssistant(ctx, u.ID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	want("assistant", got.Metadata)
	plain := mustAssistant(t, s, u, "plain")
	if got, err := s.FindAssistant(ctx, u.ID, plain.ID); err != nil {
		t.Fatal(err)
	} else {
		empty("assistant without", got.Metadata)
	}
	got.Metadata = ams.Metadata{"only": "this"}
	update(t, s, func(tx ams.Tx) error { return tx.UpdateAssistant(ctx, got) })
	if got, _ := s.FindAssistant(ctx, u.ID, a.ID); got.Metadata["only"] != "this" || len(got.Metadata) != 1 {
		t.Fatalf("updated assistant metadata: %v", got.Metadata)
	}

	x := exchange(u, a, ams.NewID(ams.PrefixConversation), true, "hi", t0)
	x.NewConversation.Metadata, x.Inbound.Metadata = md, md
	if err := s.SaveExchange(ctx, x); err != nil {
		t.Fatal(err)
	}
	c, err := s.FindConversation(ctx, u.ID, x.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	want("conversation", c.Metadata)
	m, err := s.FindMessage(ctx, u.ID, x.Inbound.ID)
	if err != nil {
		t.Fatal(err)
	}
	want("message", m.Metadata)
	r, _ := s.FindMessage(ctx, u.ID, x.Reply.ID)
	empty("reply", r.Metadata)
	m.Metadata = ams.Metadata{}
	update(t, s, func(tx ams.Tx) error { return tx.UpdateMessage(ctx, m) })
	m, _ = s.FindMessage(ctx, u.ID, m.ID)
	empty("cleared message", m.Metadata)

	tk := newTask(u, a, "t", nil)
	tk.Metadata = md
	update(t, s, func(tx ams.Tx) error { return tx.CreateTask(ctx, tk) })
	gt, err := s.FindTask(ctx, u.ID, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	want("task", gt.Metadata)
	gt.Metadata = ams.Metadata{"k": "v"}
	update(t, s, func(tx ams.Tx) error { return tx.UpdateTask(ctx, gt) })
	if gt, _ := s.FindTask(ctx, u.ID, tk.ID); gt.Metadata["k"] != "v" || len(gt.Metadata) != 1 {
		t.Fatalf("updated task metadata: %v", gt.Metadata)
	}

	ev := newCalendarEvent(u, a, "e", t0, time.Hour)
	ev.Metadata = md
	update(t, s, func(tx ams.Tx) error { return tx.CreateCalendarEvent(ctx, ev) })
	ge, err := s.FindCalendarEvent(ctx, u.ID, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	want("calendar event", ge.Metadata)
	ge.Metadata = nil
	update(t, s, func(tx ams.Tx) error { return tx.UpdateCalendarEvent(ctx, ge) })
	ge, _ = s.FindCalendarEvent(ctx, u.ID, ev.ID)
	empty("cleared calendar event", ge.Metadata)
	pg, err := s.ListCalendarEvents(ctx, u.ID, ams.CalendarFilter{}, ams.ListParams{Limit: 10})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].Metadata == nil {
		t.Fatalf("list calendar events: %v %v", pg, err)
	}

	w := mustWebhook(t, s, u, ams.EventTaskCreated)
	gw, _ := s.FindWebhook(ctx, u.ID, w.ID)
	empty("webhook", gw.Metadata)
	patch := func(js string) ams.MetadataPatch { return ams.MetadataPatch{Set: true, Raw: json.RawMessage(js)} }
	gw, err = s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Metadata: patch(`{"a": "1", "b": "2"}`)}, t0)
	if err != nil || gw.Metadata["a"] != "1" || gw.Metadata["b"] != "2" {
		t.Fatalf("webhook metadata set: %v %v", gw, err)
	}
	gw, err = s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Metadata: patch(`{"a": null, "c": "3"}`)}, t0)
	if err != nil || !gw.Metadata.Equal(ams.Metadata{"b": "2", "c": "3"}) {
		t.Fatalf("webhook metadata merge: %v %v", gw.Metadata, err)
	}
	// A merge past the limit is refused under the lock and stores nothing.
	big := map[string]string{}
	for i := range ams.MaxMetadataKeys - 1 {
		big[string(rune('A'+i%26))+string(rune('a'+i/26))] = "v"
	}
	b, _ := json.Marshal(big)
	_, err = s.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Metadata: patch(string(b)), URL: ptr("https://example.com/changed")}, t0)
	wantKind(t, err, ams.EINVALID)
	if gw, _ := s.FindWebhook(ctx, u.ID, w.ID); !gw.Metadata.Equal(ams.Metadata{"b": "2", "c": "3"}) || gw.URL == "https://example.com/changed" {
		t.Fatalf("refused merge stored: %+v", gw)
	}
}

func ptr[T any](v T) *T { return &v }

func testConversations(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "conv@example.com"), mustUser(t, s, "conv2@example.com")
	a := mustAssistant(t, s, u, "c")
	c := &ams.Conversation{ID: ams.NewID(ams.PrefixConversation), Object: "conversation", UserID: u.ID, AssistantID: a.ID,
		Title: "Planning", Metadata: ams.Metadata{"k": "v"}, LastMessageAt: t0, CreatedAt: t0, UpdatedAt: t0}
	update(t, s, func(tx ams.Tx) error {
		bad := *c
		bad.ID, bad.UserID = ams.NewID(ams.PrefixConversation), other.ID
		wantKind(t, tx.CreateConversation(ctx, &bad), ams.ENOTFOUND) // the assistant is not other's
		return tx.CreateConversation(ctx, c)
	})
	got, err := s.FindConversation(ctx, u.ID, c.ID)
	if err != nil || got.Title != "Planning" || got.MessageCount != 0 || got.AssistantID != a.ID || got.Metadata["k"] != "v" || !got.CreatedAt.Equal(t0) {
		t.Fatalf("created conversation: %+v %v", got, err)
	}
	got.Title, got.Metadata, got.UpdatedAt = "Renamed", ams.Metadata{}, t0.Add(time.Minute)
	update(t, s, func(tx ams.Tx) error {
		o := *got
		o.UserID = other.ID
		wantKind(t, tx.UpdateConversation(ctx, &o), ams.ENOTFOUND)
		return tx.UpdateConversation(ctx, got)
	})
	got, _ = s.FindConversation(ctx, u.ID, c.ID)
	if got.Title != "Renamed" || len(got.Metadata) != 0 || !got.UpdatedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("updated conversation: %+v", got)
	}
	// Turns into a conversation created empty.
	x1 := exchange(u, a, c.ID, false, "one", t0.Add(2*time.Minute))
	x2 := exchange(u, a, c.ID, false, "two", t0.Add(3*time.Minute))
	for _, x := range []*ams.Exchange{x1, x2} {
		if err := s.SaveExchange(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	keep := sendTurn(t, s, u, a, t0) // another conversation: untouched
	act := &ams.Action{ID: ams.NewID(ams.PrefixAction), UserID: u.ID, AssistantID: a.ID, ConversationID: c.ID, Type: "create_task",
		Input: json.RawMessage(`{}`), Status: ams.ActionSucceeded, Result: json.RawMessage(`{}`), CreatedAt: t0}
	update(t, s, func(tx ams.Tx) error { return tx.CreateAction(ctx, act) })

	var msgs []*ams.Message
	err = s.Update(ctx, func(tx ams.Tx) error {
		_, err := tx.DeleteConversation(ctx, other.ID, c.ID)
		wantKind(t, err, ams.ENOTFOUND)
		msgs, err = tx.DeleteConversation(ctx, u.ID, c.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, messageIDs(msgs), x1.Inbound.ID, x1.Reply.ID, x2.Inbound.ID, x2.Reply.ID)
	if msgs[0].Content != "one" || msgs[0].ConversationID != c.ID {
		t.Fatalf("deleted message as it was: %+v", msgs[0])
	}
	if _, err := s.FindConversation(ctx, u.ID, c.ID); !ams.IsNotFound(err) {
		t.Fatalf("deleted conversation found: %v", err)
	}
	if _, err := s.FindMessage(ctx, u.ID, x1.Inbound.ID); !ams.IsNotFound(err) {
		t.Fatalf("message of a deleted conversation found: %v", err)
	}
	if _, err := s.FindMessage(ctx, u.ID, keep.Inbound.ID); err != nil {
		t.Fatalf("message of another conversation: %v", err)
	}
	if got, err := s.FindAction(ctx, u.ID, act.ID); err != nil || got.ConversationID != c.ID {
		t.Fatalf("action of the deleted conversation: %+v %v", got, err)
	}
	_, err = s.DeleteConversation(ctx, u.ID, c.ID)
	wantKind(t, err, ams.ENOTFOUND)
	// A turn into the deleted conversation is refused.
	wantKind(t, s.SaveExchange(ctx, exchange(u, a, c.ID, false, "late", t0.Add(time.Hour))), ams.ENOTFOUND)
}

func messageIDs(ms []*ams.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}
