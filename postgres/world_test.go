package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/postgres"
)

// Integration secrets are sealed at rest: the row holds neither the
// secret nor its JSON, and a sealed value moved to another integration
// does not open.
func TestIntegrationSecretsSealed(t *testing.T) {
	t.Parallel()
	s := open(t)
	f := setup(t, s)
	ctx := context.Background()
	in := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), UserID: f.user.ID, Provider: "caldav", Status: "connected", ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0}
	in2 := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), UserID: f.user.ID, Provider: "caldav", Status: "connected", ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0}
	if err := s.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateIntegration(ctx, in, map[string]string{"password": "correct-horse-battery"}); err != nil {
			return err
		}
		return tx.CreateIntegration(ctx, in2, nil)
	}); err != nil {
		t.Fatal(err)
	}
	var sealed, config string
	if err := s.Pool().QueryRow(ctx, `SELECT secrets, config::text FROM integrations WHERE id = $1`, in.ID).Scan(&sealed, &config); err != nil {
		t.Fatal(err)
	}
	if sealed == "" || strings.Contains(sealed, "correct-horse") || strings.Contains(sealed, "password") || strings.Contains(config, "correct-horse") {
		t.Fatalf("secrets stored readable: %q (config %q)", sealed, config)
	}
	var none *string
	if err := s.Pool().QueryRow(ctx, `SELECT secrets FROM integrations WHERE id = $1`, in2.ID).Scan(&none); err != nil || none != nil {
		t.Fatalf("secrets of an integration without: %v %v", none, err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE integrations SET secrets = $1 WHERE id = $2`, sealed, in2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IntegrationSecrets(ctx, f.user.ID, in2.ID); err == nil {
		t.Fatal("secrets sealed for another integration opened")
	}
	if sec, err := s.IntegrationSecrets(ctx, f.user.ID, in.ID); err != nil || sec["password"] != "correct-horse-battery" {
		t.Fatalf("secrets: %v %v", sec, err)
	}
}

// An action's JSON is kept as written (JSON, not JSONB): spacing, key
// order, duplicate keys and an escaped NUL all read back unchanged.
func TestActionJSONKeptAsWritten(t *testing.T) {
	t.Parallel()
	s := open(t)
	f := setup(t, s)
	ctx := context.Background()
	a := &ams.Action{ID: ams.NewID(ams.PrefixAction), UserID: f.user.ID, AssistantID: f.assistant.ID, Type: "note",
		Input: []byte(`{"z": 1,  "a":"x\u0000y", "a": 2}`), Status: ams.ActionSucceeded, Result: []byte(`[1.50, {"b":true}]`), CreatedAt: t0}
	if err := s.Update(ctx, func(tx ams.Tx) error { return tx.CreateAction(ctx, a) }); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindAction(ctx, f.user.ID, a.ID)
	if err != nil || string(got.Input) != string(a.Input) || string(got.Result) != string(a.Result) {
		t.Fatalf("action read back: %s %s %v", got.Input, got.Result, err)
	}
}

// Read-modify-write transactions on one task from two processes at once:
// FindTask locks the row, so no update is lost.
func TestTxFindLocksRow(t *testing.T) {
	t.Parallel()
	url := databaseURL(t)
	schema := createSchema(t, url)
	a, b := openSchema(t, url, schema), openSchema(t, url, schema)
	f := setup(t, a)
	ctx := context.Background()
	tk := &ams.Task{ID: ams.NewID(ams.PrefixTask), UserID: f.user.ID, AssistantID: f.assistant.ID, Title: "count", Status: ams.TaskOpen, CreatedAt: t0, UpdatedAt: t0}
	if err := a.Update(ctx, func(tx ams.Tx) error { return tx.CreateTask(ctx, tk) }); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		s := []*postgres.DB{a, b}[i%2]
		wg.Go(func() {
			err := s.Update(ctx, func(tx ams.Tx) error {
				cur, err := tx.FindTask(ctx, f.user.ID, tk.ID)
				if err != nil {
					return err
				}
				time.Sleep(time.Millisecond) // widen the window a lost update needs
				cur.Notes += "x"
				return tx.UpdateTask(ctx, cur)
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := b.FindTask(ctx, f.user.ID, tk.ID)
	if err != nil || len(got.Notes) != n {
		t.Fatalf("notes %q after %d increments (%v)", got.Notes, n, err)
	}
}

// Two processes, several callers each, fire reminders at once: FOR UPDATE
// SKIP LOCKED gives each due reminder to one of them, once.
func TestFireRemindersTwoProcesses(t *testing.T) {
	t.Parallel()
	url := databaseURL(t)
	schema := createSchema(t, url)
	a, b := openSchema(t, url, schema), openSchema(t, url, schema)
	f := setup(t, a)
	f.webhook(t, a)
	ctx := context.Background()
	const tasks, events = 60, 30
	if err := a.Update(ctx, func(tx ams.Tx) error {
		for i := range tasks {
			remind := t0.Add(-time.Duration(i) * time.Second)
			tk := &ams.Task{ID: ams.NewID(ams.PrefixTask), UserID: f.user.ID, AssistantID: f.assistant.ID, Title: fmt.Sprint(i), Status: ams.TaskOpen,
				RemindAt: &remind, CreatedAt: t0, UpdatedAt: t0}
			if err := tx.CreateTask(ctx, tk); err != nil {
				return err
			}
		}
		for i := range events {
			remind := t0.Add(-time.Duration(i) * time.Second)
			e := &ams.CalendarEvent{ID: ams.NewID(ams.PrefixCalendar), UserID: f.user.ID, Title: fmt.Sprint(i), StartsAt: t0, EndsAt: t0.Add(time.Hour),
				RemindAt: &remind, CreatedAt: t0, UpdatedAt: t0}
			if err := tx.CreateCalendarEvent(ctx, e); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for i := range 8 {
		s := []*postgres.DB{a, b}[i%2]
		wg.Go(func() {
			for {
				k, err := s.FireReminders(ctx, t0, 5)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += k
				mu.Unlock()
				if k == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if total != tasks+events {
		t.Fatalf("fired %d, want %d", total, tasks+events)
	}
	var evs, distinct int
	if err := a.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT data->>'id') FROM events WHERE type IN ('task.reminder', 'event.reminder')`).
		Scan(&evs, &distinct); err != nil {
		t.Fatal(err)
	}
	if evs != tasks+events || distinct != tasks+events {
		t.Fatalf("%d reminder events for %d records, want %d", evs, distinct, tasks+events)
	}
}
