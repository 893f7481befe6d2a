package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// TextHolder is implemented by the stores of the engines' tests that can
// search their own files or tables for a text (an engine's test wraps
// its store to offer it): HoldsText reports whether any byte of the
// store still holds text, after what the engine does to let go of
// deleted data (a checkpoint).
type TextHolder interface {
	HoldsText(t *testing.T, text string) bool
}

// testErasure (issue 31, point 4): deleting a message, or a conversation
// with its messages, erases their text from every retained event that
// carried it (message.created, message.updated: content null, ids kept)
// and from the deliveries not made yet, in the delete's transaction; no
// event lists it afterwards, no claimed job carries it and, where the
// engine's test can look, no byte of the store holds it.
func testErasure(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "erase@example.com")
	a := mustAssistant(t, s, u, "e")
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: "https://example.com/erase",
		Events: []string{ams.EventMessageCreated, ams.EventMessageUpdated}, Active: true, Status: ams.WebhookActive, Secret: "s", CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateWebhook(ctx, w); err != nil {
		t.Fatal(err)
	}
	secret, edited, gone, kept := "zq-erased-inbound-7f3a", "zq-erased-edit-91bc", "zq-erased-conversation-5d2e", "zq-kept-4c1b"
	conv, conv2 := ams.NewID(ams.PrefixConversation), ams.NewID(ams.PrefixConversation)
	x1 := exchange(u, a, conv, true, secret, t0)
	x1.NewConversation.Title = "a title"
	x1.Reply.Content = kept
	x1.Events = []*ams.Event{ams.MessageCreatedEvent(x1.Inbound), ams.MessageCreatedEvent(x1.Reply)}
	x2 := exchange(u, a, conv2, true, gone, t0.Add(time.Minute))
	x2.NewConversation.Title = "another title"
	for _, x := range []*ams.Exchange{x1, x2} {
		if err := s.SaveExchange(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	update(t, s, func(tx ams.Tx) error {
		m, err := tx.FindMessage(ctx, u.ID, x1.Inbound.ID)
		if err != nil {
			return err
		}
		m.Content, m.UpdatedAt = edited, t0.Add(2*time.Minute)
		if err := tx.UpdateMessage(ctx, m); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.MessageEvent(ams.EventMessageUpdated, m, m.UpdatedAt))
	})

	// The deletes, each with its message.deleted in its transaction.
	update(t, s, func(tx ams.Tx) error {
		m, err := tx.FindMessage(ctx, u.ID, x1.Inbound.ID)
		if err != nil {
			return err
		}
		if err := tx.DeleteMessage(ctx, u.ID, m.ID, t0.Add(3*time.Minute)); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.MessageDeletedEvent(m, t0.Add(3*time.Minute)))
	})
	update(t, s, func(tx ams.Tx) error {
		msgs, err := tx.DeleteConversation(ctx, u.ID, conv2)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if err := tx.Emit(ctx, ams.MessageDeletedEvent(m, t0.Add(4*time.Minute))); err != nil {
				return err
			}
		}
		return nil
	})

	erased := []string{secret, edited, gone, "re: " + gone}
	pg, err := listEvents(t, s, ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(pg.Data)
	for _, text := range erased {
		if strings.Contains(string(all), text) {
			t.Errorf("the events still hold %q: %s", text, all)
		}
	}
	if !strings.Contains(string(all), kept) {
		t.Errorf("the reply that was not deleted lost its text: %s", all)
	}
	nulled := 0
	for _, e := range pg.Data {
		id, _ := e.Data["message_id"].(string)
		if (id == x1.Inbound.ID || id == x2.Inbound.ID || id == x2.Reply.ID) && e.Type != ams.EventMessageDeleted {
			nulled++
			if v, has := e.Data["content"]; !has || v != nil {
				t.Errorf("%s %s: content %v, want null", e.Type, id, v)
			}
		}
	}
	if nulled != 4 { // x1's created and updated, x2's two created
		t.Errorf("%d events of deleted messages listed, want 4 (their ids stay)", nulled)
	}
	// The deliveries not made yet carry no erased text.
	jobs, err := s.ClaimJobs(ctx, t0.Add(time.Hour), ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 5 { // four message.created and one message.updated
		t.Errorf("%d jobs claimed, want 5", len(jobs))
	}
	for _, j := range jobs {
		b, _ := json.Marshal(j.Event)
		for _, text := range erased {
			if strings.Contains(string(b), text) {
				t.Errorf("a pending delivery still holds %q: %s", text, b)
			}
		}
	}
	if h, ok := s.(TextHolder); ok {
		for _, text := range erased {
			if h.HoldsText(t, text) {
				t.Errorf("the store's files or tables still hold %q", text)
			}
		}
		if !h.HoldsText(t, kept) {
			t.Errorf("the text search does not find the text that was kept: it cannot be trusted")
		}
	}
}
