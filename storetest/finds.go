package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// testConcurrentFinds: reads of single records made at once (which a
// PostgreSQL store combines into one statement per kind, sqlstore's
// pointread.go) each answer what a read alone answers: the record asked
// for, or not found for another account's record, a deleted assistant
// and an id that does not exist.
func testConcurrentFinds(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "finds@example.com"), mustUser(t, s, "finds2@example.com")
	a, oa, gone := mustAssistant(t, s, u, "a"), mustAssistant(t, s, other, "o"), mustAssistant(t, s, u, "gone")
	if err := s.DeleteAssistant(ctx, u.ID, gone.ID, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	x, turn := startTurn(t, s, u, a, "", t0)
	tk := newTask(u, a, "find me", nil)
	act := &ams.Action{ID: ams.NewID(ams.PrefixAction), UserID: u.ID, AssistantID: a.ID, Type: "create_task",
		Input: []byte(`{}`), Status: ams.ActionSucceeded, CreatedAt: t0}
	update(t, s, func(tx ams.Tx) error {
		if err := tx.CreateTask(ctx, tk); err != nil {
			return err
		}
		return tx.CreateAction(ctx, act)
	})

	// Each read answers its record's id and a field that tells it from
	// another of its kind, or an error.
	type read struct {
		name string
		find func() (id, field string, err error)
		want string // the id, or "" for not found
	}
	var reads []read
	add := func(name, want string, find func() (string, string, error)) {
		reads = append(reads, read{name, find, want})
	}
	msg := func(user, id string) func() (string, string, error) {
		return reading(func() (*ams.Message, error) { return s.FindMessage(ctx, user, id) },
			func(m *ams.Message) (string, string) { return m.ID, m.Content })
	}
	ast := func(user, id string) func() (string, string, error) {
		return reading(func() (*ams.Assistant, error) { return s.FindAssistant(ctx, user, id) },
			func(a *ams.Assistant) (string, string) { return a.ID, a.Name })
	}
	conv := func(user string) func() (string, string, error) {
		return reading(func() (*ams.Conversation, error) { return s.FindConversation(ctx, user, x.ConversationID) },
			func(c *ams.Conversation) (string, string) { return c.ID, c.Title })
	}
	task := func(user string) func() (string, string, error) {
		return reading(func() (*ams.Task, error) { return s.FindTask(ctx, user, tk.ID) },
			func(t *ams.Task) (string, string) { return t.ID, t.Title })
	}
	event := func(user string) func() (string, string, error) {
		return reading(func() (*ams.Event, error) { return s.FindEvent(ctx, user, x.Events[0].ID) },
			func(e *ams.Event) (string, string) { return e.ID, e.Type })
	}
	add("own message", x.Inbound.ID, msg(u.ID, x.Inbound.ID))
	add("another's message", "", msg(other.ID, x.Inbound.ID))
	add("no message", "", msg(u.ID, "msg_missing"))
	add("own assistant", a.ID, ast(u.ID, a.ID))
	add("other's own assistant", oa.ID, ast(other.ID, oa.ID))
	add("another's assistant", "", ast(other.ID, a.ID))
	add("deleted assistant", "", ast(u.ID, gone.ID))
	add("conversation", x.ConversationID, conv(u.ID))
	add("another's conversation", "", conv(other.ID))
	add("task", tk.ID, task(u.ID))
	add("another's task", "", task(other.ID))
	add("event", x.Events[0].ID, event(u.ID))
	add("another's event", "", event(other.ID))
	add("turn", turn.ID, reading(func() (*ams.Turn, error) { return s.FindTurn(ctx, u.ID, turn.ID) },
		func(t *ams.Turn) (string, string) { return t.ID, t.InboundMessageID }))
	add("action", act.ID, reading(func() (*ams.Action, error) { return s.FindAction(ctx, u.ID, act.ID) },
		func(a *ams.Action) (string, string) { return a.ID, a.Type }))

	// What each read answers alone, one after the other.
	alone := make([]string, len(reads))
	for i, r := range reads {
		id, field, err := r.find()
		switch {
		case r.want == "":
			wantKind(t, err, ams.ENOTFOUND)
		case err != nil || id != r.want:
			t.Fatalf("%s alone: %q %v, want %q", r.name, id, err, r.want)
		}
		alone[i] = field
	}
	// The same reads, 8 of each at once, interleaved.
	const each = 8
	var wg sync.WaitGroup
	errs := make(chan error, each*len(reads))
	for range each {
		for i, r := range reads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, field, err := r.find()
				switch {
				case r.want == "" && ams.ErrorKindOf(err) != ams.ENOTFOUND:
					errs <- fmt.Errorf("%s: %q %v, want not found", r.name, id, err)
				case r.want != "" && (err != nil || id != r.want || field != alone[i]):
					errs <- fmt.Errorf("%s: %q %q %v, want %q %q", r.name, id, field, err, r.want, alone[i])
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// reading makes a read of testConcurrentFinds: find's record's id and
// the field that tells it from another (key), or find's error.
func reading[T any](find func() (T, error), key func(T) (string, string)) func() (string, string, error) {
	return func() (string, string, error) {
		v, err := find()
		if err != nil {
			return "", "", err
		}
		id, field := key(v)
		return id, field, nil
	}
}
