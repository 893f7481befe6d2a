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
		return func() (string, string, error) {
			m, err := s.FindMessage(ctx, user, id)
			if err != nil {
				return "", "", err
			}
			return m.ID, m.Content, nil
		}
	}
	ast := func(user, id string) func() (string, string, error) {
		return func() (string, string, error) {
			v, err := s.FindAssistant(ctx, user, id)
			if err != nil {
				return "", "", err
			}
			return v.ID, v.Name, nil
		}
	}
	add("own message", x.Inbound.ID, msg(u.ID, x.Inbound.ID))
	add("another's message", "", msg(other.ID, x.Inbound.ID))
	add("no message", "", msg(u.ID, "msg_missing"))
	add("own assistant", a.ID, ast(u.ID, a.ID))
	add("other's own assistant", oa.ID, ast(other.ID, oa.ID))
	add("another's assistant", "", ast(other.ID, a.ID))
	add("deleted assistant", "", ast(u.ID, gone.ID))
	add("conversation", x.ConversationID, func() (string, string, error) {
		c, err := s.FindConversation(ctx, u.ID, x.ConversationID)
		if err != nil {
			return "", "", err
		}
		return c.ID, c.Title, nil
	})
	add("another's conversation", "", func() (string, string, error) {
		_, err := s.FindConversation(ctx, other.ID, x.ConversationID)
		return "", "", err
	})
	add("turn", turn.ID, func() (string, string, error) {
		v, err := s.FindTurn(ctx, u.ID, turn.ID)
		if err != nil {
			return "", "", err
		}
		return v.ID, v.InboundMessageID, nil
	})
	add("task", tk.ID, func() (string, string, error) {
		v, err := s.FindTask(ctx, u.ID, tk.ID)
		if err != nil {
			return "", "", err
		}
		return v.ID, v.Title, nil
	})
	add("another's task", "", func() (string, string, error) {
		_, err := s.FindTask(ctx, other.ID, tk.ID)
		return "", "", err
	})
	add("action", act.ID, func() (string, string, error) {
		v, err := s.FindAction(ctx, u.ID, act.ID)
		if err != nil {
			return "", "", err
		}
		return v.ID, v.Type, nil
	})
	add("event", x.Events[0].ID, func() (string, string, error) {
		v, err := s.FindEvent(ctx, u.ID, x.Events[0].ID)
		if err != nil {
			return "", "", err
		}
		return v.ID, v.Type, nil
	})
	add("another's event", "", func() (string, string, error) {
		_, err := s.FindEvent(ctx, other.ID, x.Events[0].ID)
		return "", "", err
	})

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
