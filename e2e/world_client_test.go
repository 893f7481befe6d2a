package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/internal/testing/amstest"
)

// TestClientWorldEndpoints drives every endpoint of the assistant's world
// through the Go client against a live server.
func TestClientWorldEndpoints(t *testing.T) {
	f := amstest.New(t)
	c := newClient(f, f.Key, nil)
	ctx := context.Background()
	var apiErr *client.Error

	// Assistants.
	a, err := c.CreateAssistant(ctx, client.CreateAssistantParams{Name: "Planner", Instructions: "Keep it short."})
	if err != nil || a.Model != "builtin" || a.Name != "Planner" || a.Instructions != "Keep it short." {
		t.Fatalf("CreateAssistant: %+v %v", a, err)
	}
	model := "some-model"
	a, err = c.UpdateAssistant(ctx, a.ID, client.UpdateAssistantParams{Model: &model})
	if err != nil || a.Model != "some-model" || a.Name != "Planner" {
		t.Fatalf("UpdateAssistant: %+v %v", a, err)
	}
	builtin := "builtin"
	if a, err = c.UpdateAssistant(ctx, a.ID, client.UpdateAssistantParams{Model: &builtin}); err != nil {
		t.Fatal(err)
	}

	// Tasks.
	due := amstest.Start.Add(23 * time.Hour)
	task, err := c.CreateTask(ctx, client.CreateTaskParams{AssistantID: a.ID, Title: "Call Bob", DueAt: &due, RemindAt: &due})
	if err != nil || task.Status != client.TaskOpen || task.DueAt == nil || !task.DueAt.Equal(due) {
		t.Fatalf("CreateTask: %+v %v", task, err)
	}
	notes := "about the offer"
	task, err = c.UpdateTask(ctx, task.ID, client.UpdateTaskParams{Notes: &notes, ClearDueAt: true})
	if err != nil || task.Notes != notes || task.DueAt != nil || task.RemindAt == nil {
		t.Fatalf("UpdateTask: %+v %v", task, err)
	}
	if got, err := c.GetTask(ctx, task.ID); err != nil || got.Notes != notes {
		t.Fatalf("GetTask: %+v %v", got, err)
	}
	done, err := c.CompleteTask(ctx, task.ID)
	if err != nil || done.Status != client.TaskCompleted || done.CompletedAt == nil {
		t.Fatalf("CompleteTask: %+v %v", done, err)
	}
	if again, err := c.CompleteTask(ctx, task.ID); err != nil || !again.CompletedAt.Equal(*done.CompletedAt) {
		t.Fatalf("CompleteTask again: %+v %v", again, err)
	}
	if l, err := c.ListTasks(ctx, &client.ListTasksParams{AssistantID: a.ID, Status: client.TaskCompleted}); err != nil || len(l.Data) != 1 || l.Data[0].ID != task.ID {
		t.Fatalf("ListTasks: %+v %v", l, err)
	}
	if l, err := c.ListTasks(ctx, &client.ListTasksParams{Status: client.TaskOpen}); err != nil || len(l.Data) != 0 {
		t.Fatalf("ListTasks open: %+v %v", l, err)
	}

	// Calendar events.
	starts := amstest.Start.Add(48 * time.Hour)
	ev, err := c.CreateCalendarEvent(ctx, client.CreateCalendarEventParams{AssistantID: a.ID, Title: "Dentist", StartsAt: starts, Location: "Main St 1"})
	if err != nil || !ev.EndsAt.Equal(starts.Add(time.Hour)) || ev.AssistantID != a.ID {
		t.Fatalf("CreateCalendarEvent: %+v %v", ev, err)
	}
	later := starts.Add(2 * time.Hour)
	ev, err = c.UpdateCalendarEvent(ctx, ev.ID, client.UpdateCalendarEventParams{StartsAt: &later})
	if err != nil || !ev.StartsAt.Equal(later) || !ev.EndsAt.Equal(later.Add(time.Hour)) {
		t.Fatalf("UpdateCalendarEvent: %+v %v", ev, err)
	}
	before := later.Add(-time.Minute)
	_, err = c.UpdateCalendarEvent(ctx, ev.ID, client.UpdateCalendarEventParams{EndsAt: &before})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "ends_at" {
		t.Fatalf("event ending before it starts: %v", err)
	}
	if got, err := c.GetCalendarEvent(ctx, ev.ID); err != nil || got.Location != "Main St 1" {
		t.Fatalf("GetCalendarEvent: %+v %v", got, err)
	}
	from, to := starts, starts.Add(24*time.Hour)
	if l, err := c.ListCalendarEvents(ctx, &client.ListCalendarEventsParams{StartsAfter: &from, StartsBefore: &to}); err != nil || len(l.Data) != 1 {
		t.Fatalf("ListCalendarEvents: %+v %v", l, err)
	}

	// Actions.
	act, err := c.RunAction(ctx, a.ID, client.RunActionParams{Type: client.ToolCreateTask, Input: map[string]any{"title": "Buy milk"}})
	if err != nil || act.Status != client.ActionSucceeded || act.ConversationID != "" {
		t.Fatalf("RunAction: %+v %v", act, err)
	}
	var milk client.Task
	if err := act.DecodeResult(&milk); err != nil || milk.Title != "Buy milk" {
		t.Fatalf("action result: %+v %v", milk, err)
	}
	var open client.List[client.Task]
	listAct, err := c.RunAction(ctx, a.ID, client.RunActionParams{Type: client.ToolListTasks, Input: map[string]any{"status": "open"}})
	if err != nil || listAct.DecodeResult(&open) != nil || len(open.Data) != 1 || open.Data[0].ID != milk.ID {
		t.Fatalf("list_tasks action: %+v %v", listAct, err)
	}
	_, err = c.RunAction(ctx, a.ID, client.RunActionParams{Type: "fly"})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "type" {
		t.Fatalf("unknown tool: %v", err)
	}
	if got, err := c.GetAction(ctx, a.ID, act.ID); err != nil || got.Type != client.ToolCreateTask {
		t.Fatalf("GetAction: %+v %v", got, err)
	}
	var acts []string
	for x, err := range c.AllActions(ctx, a.ID, &client.ListParams{Limit: 1, Order: client.OrderAsc}) {
		if err != nil {
			t.Fatal(err)
		}
		acts = append(acts, x.ID)
	}
	if len(acts) != 2 || acts[0] != act.ID || acts[1] != listAct.ID {
		t.Fatalf("AllActions: %v", acts)
	}
	n := 0
	for _, err := range c.AllTasks(ctx, &client.ListTasksParams{ListParams: client.ListParams{Limit: 1}}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, err := range c.AllCalendarEvents(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("AllTasks and AllCalendarEvents: %d records, want 3", n)
	}

	// Messages: edit the inbound one, delete the reply.
	reply, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: a.ID, Message: "Hello"})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := c.ListConversationMessages(ctx, reply.ConversationID, &client.ListParams{Order: client.OrderAsc})
	if err != nil || len(msgs.Data) != 2 {
		t.Fatalf("messages: %+v %v", msgs, err)
	}
	edited, err := c.UpdateMessage(ctx, msgs.Data[0].ID, "Hello there")
	if err != nil || edited.Content != "Hello there" {
		t.Fatalf("UpdateMessage: %+v %v", edited, err)
	}
	_, err = c.UpdateMessage(ctx, reply.ID, "rewritten")
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "message_not_editable" {
		t.Fatalf("editing a reply: %v", err)
	}
	if err := c.DeleteMessage(ctx, reply.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetMessage(ctx, reply.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("deleted message: %v", err)
	}

	// The events of all this.
	for typ, want := range map[string]int{"task.created": 2, "task.updated": 1, "task.completed": 1, "event.created": 1, "event.updated": 1,
		"message.updated": 1, "message.deleted": 1} {
		l, err := c.ListEvents(ctx, &client.ListEventsParams{Type: typ})
		if err != nil || len(l.Data) != want {
			t.Errorf("%s events: %d, want %d (%v)", typ, len(l.Data), want, err)
		}
	}

	// Deletes.
	for _, del := range []func() error{
		func() error { return c.DeleteTask(ctx, task.ID) },
		func() error { return c.DeleteCalendarEvent(ctx, ev.ID) },
		func() error { return c.DeleteAssistant(ctx, a.ID) },
	} {
		if err := del(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.GetAssistant(ctx, a.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("deleted assistant: %v", err)
	}
	_, err = c.SendMessage(ctx, client.SendMessageParams{AssistantID: a.ID, Message: "still there?"})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Param != "assistant_id" {
		t.Fatalf("message to a deleted assistant: %v", err)
	}
	if got, err := c.GetTask(ctx, milk.ID); err != nil || got.AssistantID != a.ID {
		t.Fatalf("task of a deleted assistant: %+v %v", got, err)
	}
}

// TestServeWorldWiring checks the world as `ams serve` wires it: the
// built-in assistant acts through the toolbox (the action is stored with
// its conversation), an assistant created with a model the server does
// not run is refused at message time, and tasks are served.
func TestServeWorldWiring(t *testing.T) {
	s := startServe(t, t.TempDir())
	key := s.field(t, `API key\s+(ams_sk_\w+)`)
	asst := s.field(t, `assistant\s+(ast_\w+)`)
	c := client.New(s.base, key)
	ctx := context.Background()

	reply, err := c.SendMessage(ctx, client.SendMessageParams{AssistantID: asst, Message: "Remind me to call Bob tomorrow at 9"})
	if err != nil {
		t.Fatal(err)
	}
	acts, err := c.ListActions(ctx, asst, nil)
	if err != nil || len(acts.Data) != 1 || acts.Data[0].ConversationID != reply.ConversationID || acts.Data[0].Type != client.ToolCreateTask ||
		acts.Data[0].Status != client.ActionSucceeded {
		t.Fatalf("actions after the message: %+v %v", acts, err)
	}
	var task client.Task
	if err := acts.Data[0].DecodeResult(&task); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetTask(ctx, task.ID); err != nil || got.Title != task.Title || got.DueAt == nil {
		t.Fatalf("task of the action: %+v %v", got, err)
	}

	other, err := c.CreateAssistant(ctx, client.CreateAssistantParams{Name: "Elsewhere", Model: "not-a-model-this-server-runs"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SendMessage(ctx, client.SendMessageParams{AssistantID: other.ID, Message: "hello"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "model_not_supported" {
		t.Fatalf("message to an assistant of an unknown model: %v", err)
	}
}
