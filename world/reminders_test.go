package world_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/internal/testing/testclock"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/amsdev/ams/postgres"
	"github.com/amsdev/ams/storetest"
	"github.com/amsdev/ams/world"
)

var start = testclock.Start

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// account creates a user with an assistant.
func account(t *testing.T, s ams.Store) (*ams.User, *ams.Assistant) {
	t.Helper()
	ctx := context.Background()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: strings.ToLower(ams.NewID("u")) + "@example.com", Plan: ams.PlanStandard,
		Timezone: "UTC", CreatedAt: start, UpdatedAt: start}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: u.ID, Name: "A", Model: ams.ModelBuiltin,
		CreatedAt: start, UpdatedAt: start}
	if err := s.CreateAssistant(ctx, a); err != nil {
		t.Fatal(err)
	}
	return u, a
}

// reminders returns the ids of the records of the account's events of
// type typ, in the order listed.
func reminders(t *testing.T, s ams.Store, userID, typ string) []string {
	t.Helper()
	var ids []string
	p := ams.ListParams{Limit: 100, Order: ams.OrderAsc}
	for {
		page, err := s.ListEvents(context.Background(), userID, ams.EventFilter{Type: typ}, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Data {
			ids = append(ids, e.Data["id"].(string))
		}
		if !page.HasMore {
			return ids
		}
		p.After = page.Data[len(page.Data)-1].ID
	}
}

// run starts s.Run until the test ends, with its signals on.
func run(t *testing.T, s *world.Scheduler) {
	s.Signals.Pass.Init()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestTaskReminderFiresOnceWhenDue(t *testing.T) {
	t.Parallel()
	db := sqlitetest.Open(t)
	c := testclock.New(start)
	u, a := account(t, db)
	sched := &world.Scheduler{Store: db, Clock: c.Now, Logger: quiet, Poll: 5 * time.Millisecond}
	svc := &world.Service{Store: world.Watch(db, world.Changes{Reminder: sched.Wake}), Clock: c.Now}
	task, err := svc.CreateTask(context.Background(), u.ID, a.ID, json.RawMessage(`{"title":"Call Bob","remind_at":"2026-11-21T10:30:00Z"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	run(t, sched)

	// Not before remind_at: a pass at 10:29:59.999 fires nothing.
	c.Set(start.Add(30*time.Minute - time.Millisecond))
	sched.Signals.Pass.WaitPass(t)
	if got := reminders(t, db, u.ID, ams.EventTaskReminder); len(got) != 0 {
		t.Fatalf("fired before remind_at: %v", got)
	}
	c.Set(start.Add(30 * time.Minute))
	wait.Eventually(t, "task.reminder", func() bool { return len(reminders(t, db, u.ID, ams.EventTaskReminder)) > 0 })
	// More polls, later: still one.
	c.Set(start.Add(3 * time.Hour))
	sched.Signals.Pass.WaitPass(t)
	if got := reminders(t, db, u.ID, ams.EventTaskReminder); len(got) != 1 || got[0] != task.ID {
		t.Fatalf("task.reminder events for %v, want one for %s", got, task.ID)
	}
	// The event carries the task as the API shows it.
	page, err := db.ListEvents(context.Background(), u.ID, ams.EventFilter{Type: ams.EventTaskReminder}, ams.ListParams{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if d := page.Data[0].Data; d["object"] != "task" || d["title"] != "Call Bob" || d["remind_at"] != "2026-11-21T10:30:00.000Z" {
		t.Fatalf("event data %v", d)
	}

	// A new remind_at reminds again, once.
	if _, err := svc.UpdateTask(context.Background(), u.ID, task.ID, json.RawMessage(`{"remind_at":"2026-11-21T14:00:00Z"}`), ""); err != nil {
		t.Fatal(err)
	}
	c.Set(start.Add(4 * time.Hour))
	wait.Eventually(t, "second task.reminder", func() bool { return len(reminders(t, db, u.ID, ams.EventTaskReminder)) == 2 })
	sched.Signals.Pass.WaitPass(t)
	if got := reminders(t, db, u.ID, ams.EventTaskReminder); len(got) != 2 {
		t.Fatalf("%d reminders, want 2", len(got))
	}
}

func TestCompletedTaskDoesNotRemind(t *testing.T) {
	t.Parallel()
	db := sqlitetest.Open(t)
	c := testclock.New(start)
	u, a := account(t, db)
	svc := &world.Service{Store: db, Clock: c.Now}
	task, err := svc.CreateTask(context.Background(), u.ID, a.ID, json.RawMessage(`{"title":"Done early","remind_at":"2026-11-21T10:05:00Z"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CompleteTask(context.Background(), u.ID, task.ID); err != nil {
		t.Fatal(err)
	}
	c.Set(start.Add(time.Hour))
	sched := &world.Scheduler{Store: db, Clock: c.Now, Logger: quiet}
	if n, err := sched.RunOnce(context.Background()); err != nil || n != 0 {
		t.Fatalf("RunOnce = %d, %v; want 0", n, err)
	}
}

func TestCalendarEventReminder(t *testing.T) {
	t.Parallel()
	db := sqlitetest.Open(t)
	c := testclock.New(start)
	u, a := account(t, db)
	sched := &world.Scheduler{Store: db, Clock: c.Now, Logger: quiet, Poll: 5 * time.Millisecond}
	svc := &world.Service{Store: world.Watch(db, world.Changes{Reminder: sched.Wake}), Clock: c.Now}
	ev, err := svc.CreateEvent(context.Background(), u.ID, a.ID, json.RawMessage(
		`{"title":"Dentist","starts_at":"2026-11-21T15:00:00Z","remind_at":"2026-11-21T14:45:00Z"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	run(t, sched)
	c.Set(start.Add(4*time.Hour + 44*time.Minute))
	sched.Signals.Pass.WaitPass(t)
	if got := reminders(t, db, u.ID, ams.EventEventReminder); len(got) != 0 {
		t.Fatalf("fired early: %v", got)
	}
	c.Set(start.Add(4*time.Hour + 45*time.Minute))
	wait.Eventually(t, "event.reminder", func() bool { return len(reminders(t, db, u.ID, ams.EventEventReminder)) == 1 })
	c.Set(start.Add(6 * time.Hour))
	sched.Signals.Pass.WaitPass(t)
	if got := reminders(t, db, u.ID, ams.EventEventReminder); len(got) != 1 || got[0] != ev.ID {
		t.Fatalf("event.reminder for %v, want one for %s", got, ev.ID)
	}
}

// The scheduler sleeps until the next reminder when that is sooner than
// its poll: a reminder due in 20 ms (on a clock that runs) fires long
// before the hour-long poll.
func TestSchedulerSleepsUntilNextReminder(t *testing.T) {
	t.Parallel()
	db := sqlitetest.Open(t)
	u, a := account(t, db)
	now := func() time.Time { return time.Now() }
	svc := &world.Service{Store: db, Clock: now}
	at := time.Now().Add(200 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	if _, err := svc.CreateTask(context.Background(), u.ID, a.ID, json.RawMessage(`{"title":"Soon","remind_at":"`+at+`"}`), ""); err != nil {
		t.Fatal(err)
	}
	run(t, &world.Scheduler{Store: db, Clock: now, Logger: quiet, Poll: time.Hour})
	wait.Eventually(t, "task.reminder", func() bool { return len(reminders(t, db, u.ID, ams.EventTaskReminder)) == 1 })
}

// A reminder that came due while no process ran fires when the next one
// starts, and a restart never fires a reminder again.
func TestRemindersSurviveRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ams.db")
	ctx := context.Background()
	c := testclock.New(start)

	db := sqlitetest.OpenFile(t, path)
	u, a := account(t, db)
	svc := &world.Service{Store: db, Clock: c.Now}
	early, err := svc.CreateTask(ctx, u.ID, a.ID, json.RawMessage(`{"title":"Early","remind_at":"2026-11-21T10:10:00Z"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	late, err := svc.CreateTask(ctx, u.ID, a.ID, json.RawMessage(`{"title":"Late","remind_at":"2026-11-21T12:00:00Z"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	c.Set(start.Add(15 * time.Minute))
	if n, err := (&world.Scheduler{Store: db, Clock: c.Now, Logger: quiet}).RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("first process fired %d, %v; want 1", n, err)
	}
	db.Close() // the process stops; "late" comes due while none runs

	c.Set(start.Add(5 * time.Hour))
	db = sqlitetest.OpenFile(t, path)
	sched := &world.Scheduler{Store: db, Clock: c.Now, Logger: quiet}
	if n, err := sched.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("after restart fired %d, %v; want 1 (the one due while down)", n, err)
	}
	for range 3 {
		if n, err := sched.RunOnce(ctx); err != nil || n != 0 {
			t.Fatalf("fired again: %d, %v", n, err)
		}
	}
	db.Close()
	db = sqlitetest.OpenFile(t, path) // another restart
	if n, err := (&world.Scheduler{Store: db, Clock: c.Now, Logger: quiet}).RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second restart fired %d, %v; want 0", n, err)
	}
	if got := reminders(t, db, u.ID, ams.EventTaskReminder); len(got) != 2 || got[0] != early.ID || got[1] != late.ID {
		t.Fatalf("reminders %v, want %s then %s, once each", got, early.ID, late.ID)
	}
}

// A webhook subscribed to task.reminder gets the reminder queued for
// delivery, in the reminder's transaction.
func TestReminderQueuedForWebhook(t *testing.T) {
	t.Parallel()
	db := sqlitetest.Open(t)
	ctx := context.Background()
	c := testclock.New(start)
	u, a := account(t, db)
	for _, events := range [][]string{{ams.EventTaskReminder}, {ams.EventMessageCreated}} {
		wh := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: u.ID, URL: "https://example.com/" + events[0],
			Events: events, Active: true, Status: ams.WebhookActive, Secret: "0123456789abcdef", CreatedAt: start, UpdatedAt: start}
		if err := db.CreateWebhook(ctx, wh); err != nil {
			t.Fatal(err)
		}
	}
	svc := &world.Service{Store: db, Clock: c.Now}
	task, err := svc.CreateTask(ctx, u.ID, a.ID, json.RawMessage(`{"title":"Pay rent","remind_at":"2026-11-21T11:00:00Z"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	c.Set(start.Add(time.Hour))
	if n, err := (&world.Scheduler{Store: db, Clock: c.Now, Logger: quiet}).RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("RunOnce = %d, %v", n, err)
	}
	jobs, err := db.ClaimJobs(ctx, c.Now(), ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jobs {
		got = append(got, j.Event.Type+" "+j.Event.Data["id"].(string)+" "+j.URL)
	}
	want := ams.EventTaskReminder + " " + task.ID + " https://example.com/" + ams.EventTaskReminder
	if len(got) != 1 || got[0] != want {
		t.Fatalf("queued %v, want [%s]", got, want)
	}
}

// Two schedulers (two processes) on one PostgreSQL database racing over
// 200 due reminders fire each exactly once.
func TestRemindersOncePerReminderAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	schema := pgtest.FreshSchema(t, url)
	dbs := [2]*postgres.DB{pgtest.OpenSchema(t, url, schema), pgtest.OpenSchema(t, url, schema)}
	c := testclock.New(start)
	u, a := account(t, dbs[0])
	svc := &world.Service{Store: dbs[0], Clock: c.Now}
	want := map[string]bool{}
	for i := range 200 {
		at := start.Add(time.Duration(i+1) * time.Second).Format(time.RFC3339)
		var id string
		if i%2 == 0 {
			task, err := svc.CreateTask(ctx, u.ID, a.ID, json.RawMessage(fmt.Sprintf(`{"title":"T%d","remind_at":%q}`, i, at)), "")
			if err != nil {
				t.Fatal(err)
			}
			id = task.ID
		} else {
			ev, err := svc.CreateEvent(ctx, u.ID, a.ID, json.RawMessage(fmt.Sprintf(`{"title":"E%d","starts_at":"2026-11-22T10:00:00Z","remind_at":%q}`, i, at)), "")
			if err != nil {
				t.Fatal(err)
			}
			id = ev.ID
		}
		want[id] = true
	}
	c.Set(start.Add(time.Hour))

	// Each "process" runs four schedulers' worth of concurrent calls.
	var wg sync.WaitGroup
	var mu sync.Mutex
	fired := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &world.Scheduler{Store: dbs[i%2], Clock: c.Now, Logger: quiet}
			for range 3 {
				n, err := s.RunOnce(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				fired += n
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if fired != 200 {
		t.Errorf("schedulers report %d fired, want 200", fired)
	}
	seen := map[string]int{}
	storetest.SettleEvents(t, dbs[1]) // the last reminders may still be held back
	for _, typ := range []string{ams.EventTaskReminder, ams.EventEventReminder} {
		for _, id := range reminders(t, dbs[1], u.ID, typ) {
			seen[id]++
		}
	}
	if len(seen) != 200 {
		t.Errorf("%d records reminded, want 200", len(seen))
	}
	for id, n := range seen {
		if n != 1 || !want[id] {
			t.Errorf("%s reminded %d times (known: %v)", id, n, want[id])
		}
	}
	if next, err := dbs[0].NextReminder(ctx); err != nil || !next.IsZero() {
		t.Errorf("NextReminder = %v, %v; want none left", next, err)
	}
}
