package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
)

const conversationJSON = `{"id":"conv_1","object":"conversation","assistant_id":"ast_1","title":"Trip","message_count":0,` +
	`"last_message_at":"2026-11-21T10:00:00Z","metadata":{"crm":"T-1"},"created_at":"2026-11-21T10:00:00Z","updated_at":"2026-11-21T10:00:00Z"}`

// TestResourceRequests checks the requests of the conversation and
// metadata methods.
func TestResourceRequests(t *testing.T) {
	rc := &recorder{}
	c, _ := newTestClient(t, rc.ServeHTTP)
	ctx := context.Background()
	check := func(method, uri, body string) {
		t.Helper()
		r := rc.last(t)
		if r.method != method || r.uri != uri {
			t.Errorf("request %s %s, want %s %s", r.method, r.uri, method, uri)
		}
		if body == "" && r.body != "" {
			t.Errorf("%s %s: body %q, want none", method, uri, r.body)
		} else if body != "" {
			sameJSON(t, r.body, body)
		}
	}
	rc.answer(201, conversationJSON)
	conv, err := c.CreateConversation(ctx, client.CreateConversationParams{AssistantID: "ast_1", Title: "Trip", Metadata: client.Metadata{"crm": "T-1"}, IdempotencyKey: "k1"})
	if err != nil || conv.ID != "conv_1" || conv.Metadata["crm"] != "T-1" {
		t.Fatalf("CreateConversation: %+v %v", conv, err)
	}
	check("POST", "/v1/conversations", `{"assistant_id":"ast_1","title":"Trip","metadata":{"crm":"T-1"}}`)
	if rc.last(t).idempotencyKey != "k1" {
		t.Errorf("Idempotency-Key %q", rc.last(t).idempotencyKey)
	}
	rc.answer(200, conversationJSON)
	title, stage := "Lisbon", "2"
	if _, err := c.UpdateConversation(ctx, "conv_1", client.UpdateConversationParams{Title: &title, Metadata: client.MetadataUpdate{"crm": nil, "stage": &stage}}); err != nil {
		t.Fatal(err)
	}
	check("PATCH", "/v1/conversations/conv_1", `{"title":"Lisbon","metadata":{"crm":null,"stage":"2"}}`)
	rc.answer(204, "")
	if err := c.DeleteConversation(ctx, "conv_1"); err != nil {
		t.Fatal(err)
	}
	check("DELETE", "/v1/conversations/conv_1", "")
	if err := c.DeleteConversation(ctx, ""); err == nil {
		t.Error("DeleteConversation with no id sent a request")
	}

	rc.answer(200, `{"object":"list","data":[],"first_id":null,"last_id":null,"has_more":false}`)
	if _, err := c.ListConversationActions(ctx, "ast_1", "conv_1", &client.ListParams{Limit: 5}); err != nil {
		t.Fatal(err)
	}
	check("GET", "/v1/assistants/ast_1/actions?conversation_id=conv_1&limit=5", "")

	rc.answer(201, `{"id":"msg_1","object":"message","metadata":{}}`)
	if _, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: "ast_1", Message: "hi", Metadata: client.Metadata{"source": "sms"}}); err != nil {
		t.Fatal(err)
	}
	check("POST", "/v1/messages", `{"assistant_id":"ast_1","message":"hi","metadata":{"source":"sms"}}`)
	if _, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: "ast_1", Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	check("POST", "/v1/messages", `{"assistant_id":"ast_1","message":"hi"}`)
	rc.answer(200, `{"id":"msg_1","object":"message","metadata":{"rating":"good"}}`)
	good := "good"
	if _, err := c.UpdateMessageFields(ctx, "msg_1", client.UpdateMessageParams{Metadata: client.MetadataUpdate{"rating": &good}}); err != nil {
		t.Fatal(err)
	}
	check("PATCH", "/v1/messages/msg_1", `{"metadata":{"rating":"good"}}`)
	rc.answer(200, taskJSON)
	if _, err := c.UpdateTask(ctx, "task_1", client.UpdateTaskParams{Metadata: client.MetadataUpdate{"k": nil}}); err != nil {
		t.Fatal(err)
	}
	check("PATCH", "/v1/tasks/task_1", `{"metadata":{"k":null}}`)
	rc.answer(201, eventJSON)
	if _, err := c.CreateCalendarEvent(ctx, client.CreateCalendarEventParams{AssistantID: "ast_1", Title: "Dentist",
		StartsAt: time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC), Metadata: client.Metadata{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	check("POST", "/v1/calendar/events", `{"assistant_id":"ast_1","title":"Dentist","starts_at":"2026-11-23T14:00:00Z","metadata":{"k":"v"}}`)
}

// TestResourcesLive drives conversations, metadata and the deletion
// events through the client against the server, on both engines.
func TestResourcesLive(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			var f *amstest.Fixture
			if engine == "sqlite" {
				f = amstest.New(t)
			} else {
				f = amstest.New(t, amstest.OnStore(pgtest.Open(t)))
			}
			c := client.New(f.Server.URL, f.Key)
			ctx := context.Background()
			conv, err := c.CreateConversation(ctx, client.CreateConversationParams{AssistantID: f.Assistant.ID, Title: "Trip", Metadata: client.Metadata{"crm": "T-1"}})
			if err != nil || conv.Title != "Trip" || conv.Metadata["crm"] != "T-1" || conv.MessageCount != 0 {
				t.Fatalf("CreateConversation: %+v %v", conv, err)
			}
			reply, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: f.Assistant.ID, ConversationID: conv.ID, Message: "Remind me to call Bob tomorrow at 9",
				Metadata: client.Metadata{"source": "sms"}})
			if err != nil || reply.ConversationID != conv.ID || reply.Metadata == nil || len(reply.Metadata) != 0 {
				t.Fatalf("SendMessage: %+v %v", reply, err)
			}
			msgs, err := c.ListConversationMessages(ctx, conv.ID, &client.ListParams{Order: client.OrderAsc})
			if err != nil || len(msgs.Data) != 2 || msgs.Data[0].Metadata["source"] != "sms" {
				t.Fatalf("messages: %+v %v", msgs, err)
			}
			stage, title := "2", "Lisbon"
			conv, err = c.UpdateConversation(ctx, conv.ID, client.UpdateConversationParams{Title: &title, Metadata: client.MetadataUpdate{"crm": nil, "stage": &stage}})
			if err != nil || conv.Title != "Lisbon" || len(conv.Metadata) != 1 || conv.Metadata["stage"] != "2" {
				t.Fatalf("UpdateConversation: %+v %v", conv, err)
			}
			acts, err := c.ListConversationActions(ctx, f.Assistant.ID, conv.ID, nil)
			if err != nil || len(acts.Data) != 1 || acts.Data[0].ConversationID != conv.ID {
				t.Fatalf("ListConversationActions: %+v %v", acts, err)
			}
			var task client.Task
			if err := acts.Data[0].DecodeResult(&task); err != nil {
				t.Fatal(err)
			}
			// Metadata on a task; deleting it emits task.deleted with it.
			tk, err := c.UpdateTask(ctx, task.ID, client.UpdateTaskParams{Metadata: client.MetadataUpdate{"k": &stage}})
			if err != nil || tk.Metadata["k"] != "2" {
				t.Fatalf("UpdateTask metadata: %+v %v", tk, err)
			}
			if err := c.DeleteTask(ctx, task.ID); err != nil {
				t.Fatal(err)
			}
			if err := c.DeleteConversation(ctx, conv.ID); err != nil {
				t.Fatal(err)
			}
			var apiErr *client.Error
			if _, err := c.GetConversation(ctx, conv.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
				t.Fatalf("GetConversation after delete: %v", err)
			}
			want := map[string]int{"task.deleted": 1, "message.deleted": 2}
			for typ, n := range want {
				// Wait on the store (on PostgreSQL an event is listed a moment
				// after its commit), then read the API once: polling it
				// would spend the account's 60 requests a minute.
				wait.Until(func() bool {
					pg, err := f.Data.ListEvents(ctx, f.User.ID, ams.EventFilter{Type: typ}, ams.ListParams{Limit: 100})
					return err == nil && len(pg.Data) >= n
				})
				evs, err := c.ListEvents(ctx, &client.ListEventsParams{Type: typ})
				if err != nil || len(evs.Data) != n {
					t.Fatalf("%s events: %+v %v", typ, evs, err)
				}
				if typ == "task.deleted" {
					if md, _ := evs.Data[0].Data["metadata"].(map[string]any); evs.Data[0].Data["id"] != task.ID || md["k"] != "2" {
						t.Fatalf("task.deleted data: %v", evs.Data[0].Data)
					}
				}
			}
		})
	}
}
