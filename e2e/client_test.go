package e2e

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/sqlite"
)

// newClient returns a client of the fixture's server whose retry waits
// move the server's clock instead of sleeping; waits records them.
func newClient(f *amstest.Fixture, key string, waits *[]time.Duration) *client.Client {
	return client.New(f.Server.URL, key,
		client.WithClock(f.Clock.Now),
		client.WithSleep(func(ctx context.Context, d time.Duration) error {
			if waits != nil {
				*waits = append(*waits, d)
			}
			f.Clock.Add(d)
			return nil
		}))
}

func TestClientEveryEndpoint(t *testing.T) {
	f := amstest.New(t)
	c := newClient(f, f.Key, nil)
	ctx := context.Background()

	as, err := c.ListAssistants(ctx, nil)
	if err != nil || len(as.Data) != 1 || as.Data[0].ID != f.Assistant.ID || as.Object != "list" {
		t.Fatalf("ListAssistants: %+v %v", as, err)
	}
	a, err := c.GetAssistant(ctx, f.Assistant.ID)
	if err != nil || a.Name != "Ann's assistant" || a.Model != "builtin" || a.Object != "assistant" {
		t.Fatalf("GetAssistant: %+v %v", a, err)
	}
	reply, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: a.ID, Message: "Hi, I'm Grace"})
	if err != nil || reply.Direction != client.DirectionOutbound || !strings.HasPrefix(reply.ConversationID, "conv_") || reply.Content == "" {
		t.Fatalf("SendMessage: %+v %v", reply, err)
	}
	reply2, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: a.ID, Message: "what is my name?", ConversationID: reply.ConversationID})
	if err != nil || !strings.Contains(reply2.Content, "Grace") {
		t.Fatalf("second turn: %+v %v", reply2, err)
	}
	m, err := c.GetMessage(ctx, reply.ID)
	if err != nil || m.Content != reply.Content || !m.CreatedAt.Equal(reply.CreatedAt) {
		t.Fatalf("GetMessage: %+v %v", m, err)
	}
	conv, err := c.GetConversation(ctx, reply.ConversationID)
	if err != nil || conv.MessageCount != 4 || conv.AssistantID != a.ID || conv.Title != "Hi, I'm Grace" {
		t.Fatalf("GetConversation: %+v %v", conv, err)
	}
	cl, err := c.ListConversations(ctx, &client.ListConversationsParams{AssistantID: a.ID})
	if err != nil || len(cl.Data) != 1 {
		t.Fatalf("ListConversations: %+v %v", cl, err)
	}
	ml, err := c.ListConversationMessages(ctx, conv.ID, &client.ListParams{Order: client.OrderAsc})
	if err != nil || len(ml.Data) != 4 || ml.Data[0].Direction != client.DirectionInbound || ml.Data[3].ID != reply2.ID {
		t.Fatalf("ListConversationMessages: %+v %v", ml, err)
	}
	il, err := c.ListIntegrations(ctx, nil)
	if err != nil || len(il.Data) != 0 || il.HasMore {
		t.Fatalf("ListIntegrations: %+v %v", il, err)
	}
	el, err := c.ListEvents(ctx, &client.ListEventsParams{Type: "message.created"})
	if err != nil || len(el.Data) != 4 || el.Data[0].Data["message_id"] != reply2.ID {
		t.Fatalf("ListEvents: %+v %v", el, err)
	}
	ev, err := c.GetEvent(ctx, el.Data[0].ID)
	if err != nil || ev.ID != el.Data[0].ID || ev.Data["message_id"] != reply2.ID {
		t.Fatalf("GetEvent: %+v %v", ev, err)
	}
	var notFound *client.Error
	if _, err := c.GetEvent(ctx, "evt_nothere"); !errors.As(err, &notFound) || notFound.StatusCode != 404 || notFound.Code != "resource_missing" {
		t.Fatalf("GetEvent of an unknown id: %v", err)
	}
	// created_after is strict: the events after the second newest's time.
	since := el.Data[1].CreatedAt
	fl, err := c.ListEvents(ctx, &client.ListEventsParams{Type: "message.created", CreatedAfter: &since})
	if err != nil || len(fl.Data) > 1 {
		t.Fatalf("ListEvents created_after: %+v %v", fl, err)
	}
	for _, e := range fl.Data {
		if !e.CreatedAt.After(since) {
			t.Fatalf("ListEvents created_after %v listed %+v", since, e)
		}
	}
	var doc map[string]any
	if err := c.Request(ctx, "GET", "/openapi.json", nil, &doc); err != nil || doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi.json: %v", err)
	}
}

func TestClientIteratesAllPages(t *testing.T) {
	f := amstest.New(t)
	u := f.NewUser("many@example.com", ams.PlanEnterprise)
	c := newClient(f, f.NewKey(u, "read,messages"), nil)
	ctx := context.Background()
	a := f.NewAssistant(u, "Pager")
	var sent []string
	for i := 0; i < 23; i++ {
		r, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: a.ID, Message: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, r.ConversationID)
	}
	var got []string
	for conv, err := range c.AllConversations(ctx, &client.ListConversationsParams{ListParams: client.ListParams{Limit: 5}}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, conv.ID)
	}
	if len(got) != 23 {
		t.Fatalf("iterated %d conversations, want 23", len(got))
	}
	for i := range got { // newest first
		if got[i] != sent[len(sent)-1-i] {
			t.Fatalf("conversation %d is %s, want %s", i, got[i], sent[len(sent)-1-i])
		}
	}
	n := 0
	for _, err := range c.AllEvents(ctx, &client.ListEventsParams{ListParams: client.ListParams{Limit: 7, Order: client.OrderAsc}}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 92 { // each send: conversation.created, two message.created and turn.completed
		t.Fatalf("iterated %d events, want 92", n)
	}
}

func TestClientTypedErrors(t *testing.T) {
	f := amstest.New(t)
	ctx := context.Background()
	c := newClient(f, f.Key, nil)
	_, err := c.GetMessage(ctx, "msg_doesnotexist")
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 404 || e.Type != client.ErrorTypeInvalidRequest || e.Code != "resource_missing" || !strings.HasPrefix(e.RequestID, "req_") {
		t.Fatalf("404: %#v", err)
	}
	_, err = c.SendMessage(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: ""})
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Param != "message" || e.Code != "parameter_invalid" {
		t.Fatalf("400: %#v", err)
	}
	_, err = newClient(f, "ams_sk_wrong", nil).ListAssistants(ctx, nil)
	if !errors.As(err, &e) || e.StatusCode != 401 || e.Type != client.ErrorTypeAuthentication || e.Code != "invalid_api_key" {
		t.Fatalf("401: %#v", err)
	}
	_, err = newClient(f, f.NewKey(f.User, "read"), nil).SendMessage(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: "hi"})
	if !errors.As(err, &e) || e.StatusCode != 403 || e.Type != client.ErrorTypePermission || e.Code != "insufficient_scope" {
		t.Fatalf("403: %#v", err)
	}
}

func TestClientRetries429HonouringRetryAfter(t *testing.T) {
	f := amstest.New(t)
	// The clock stands still: the 60 requests of 10:00:00 leave the
	// sliding minute window 61 s later.
	var waits []time.Duration
	c := newClient(f, f.Key, &waits)
	ctx := context.Background()
	for i := 0; i < 60; i++ {
		if _, err := c.ListAssistants(ctx, nil); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if len(waits) != 0 {
		t.Fatalf("waited before the limit: %v", waits)
	}
	// The 61st is refused with Retry-After: 61; the client waits that long
	// (on the server's clock) and the retry succeeds.
	reply, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: "hello"})
	if err != nil {
		t.Fatalf("61st request: %v", err)
	}
	if len(waits) != 1 || waits[0] != 61*time.Second {
		t.Fatalf("waits %v, want [1m1s]", waits)
	}
	// Sent once, although attempted twice.
	page, _ := f.Store.ListConversations(ctx, f.User.ID, "", ams.ListParams{Limit: 10})
	if len(page.Data) != 1 || page.Data[0].ID != reply.ConversationID {
		t.Fatalf("conversations after retried POST: %d", len(page.Data))
	}
}

// flakyStore fails the first reads of messages with an internal error.
type flakyStore struct {
	*sqlite.DB
	failures atomic.Int32
}

func (s *flakyStore) FindMessage(ctx context.Context, userID, id string) (*ams.Message, error) {
	if s.failures.Add(-1) >= 0 {
		return nil, errors.New("database is locked")
	}
	return s.DB.FindMessage(ctx, userID, id)
}

func TestClientRetries5xx(t *testing.T) {
	var fs *flakyStore
	f := amstest.New(t, amstest.WithStore(func(db *sqlite.DB) ams.Store {
		fs = &flakyStore{DB: db}
		return fs
	}))
	var waits []time.Duration
	c := newClient(f, f.Key, &waits)
	ctx := context.Background()
	reply, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, Message: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	fs.failures.Store(2)
	m, err := c.GetMessage(ctx, reply.ID)
	if err != nil || m.ID != reply.ID || len(waits) != 2 {
		t.Fatalf("after two 500s: %v %v, waits %v", m, err, waits)
	}
	fs.failures.Store(10)
	_, err = c.GetMessage(ctx, reply.ID)
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 500 || e.Type != client.ErrorTypeAPI || strings.Contains(e.Message, "locked") {
		t.Fatalf("retries exhausted: %#v", err)
	}
}
