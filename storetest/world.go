package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// The assistant's world: tasks, calendar events, actions, integrations,
// soft-deleted assistants, message edits, reminders (ams.WorldStore).

func update(t *testing.T, s ams.Store, fn func(tx ams.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func tp(v time.Time) *time.Time { return &v }

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func newTask(u *ams.User, a *ams.Assistant, title string, due *time.Time) *ams.Task {
	return &ams.Task{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: u.ID, AssistantID: a.ID, Title: title, Status: ams.TaskOpen,
		DueAt: due, CreatedAt: t0, UpdatedAt: t0}
}

func newCalendarEvent(u *ams.User, a *ams.Assistant, title string, start time.Time, d time.Duration) *ams.CalendarEvent {
	e := &ams.CalendarEvent{ID: ams.NewID(ams.PrefixCalendar), Object: "calendar_event", UserID: u.ID, Title: title,
		StartsAt: start, EndsAt: start.Add(d), CreatedAt: t0, UpdatedAt: t0}
	if a != nil {
		e.AssistantID = a.ID
	}
	return e
}

// ids returns the ids of a page's records, in order.
func ids[T any](t *testing.T, pg *ams.Page[T], err error, id func(T) string) []string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, v := range pg.Data {
		out = append(out, id(v))
	}
	return out
}

func taskID(x *ams.Task) string           { return x.ID }
func eventID(x *ams.CalendarEvent) string { return x.ID }
func actionID(x *ams.Action) string       { return x.ID }
func assistantID(x *ams.Assistant) string { return x.ID }
func wantIDs(t *testing.T, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// testAssistantFoundInTx: an assistant found (and locked) in a
// transaction owns the records made after it in that transaction without
// being read again, and one deleted in it owns none; another account's
// assistant found in it lends nothing to this account.
func testAssistantFoundInTx(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "found@example.com"), mustUser(t, s, "found2@example.com")
	a, oa := mustAssistant(t, s, u, "f"), mustAssistant(t, s, other, "o")
	tk := newTask(u, a, "after the find", nil)
	update(t, s, func(tx ams.Tx) error {
		if _, err := tx.FindAssistant(ctx, u.ID, a.ID); err != nil {
			return err
		}
		if err := tx.CreateTask(ctx, tk); err != nil {
			return err
		}
		return tx.CreateAction(ctx, &ams.Action{ID: ams.NewID(ams.PrefixAction), UserID: u.ID, AssistantID: a.ID, Type: "create_task",
			Input: []byte(`{}`), Status: ams.ActionSucceeded, CreatedAt: t0})
	})
	if _, err := s.FindTask(ctx, u.ID, tk.ID); err != nil {
		t.Fatalf("the task made after the find: %v", err)
	}
	update(t, s, func(tx ams.Tx) error {
		if _, err := tx.FindAssistant(ctx, other.ID, oa.ID); err != nil {
			return err
		}
		// u's task under other's assistant: still refused.
		wantKind(t, tx.CreateTask(ctx, newTask(u, oa, "not mine", nil)), ams.ENOTFOUND)
		if _, err := tx.FindAssistant(ctx, u.ID, a.ID); err != nil {
			return err
		}
		if err := tx.DeleteAssistant(ctx, u.ID, a.ID, t0.Add(time.Hour)); err != nil {
			return err
		}
		wantKind(t, tx.CreateTask(ctx, newTask(u, a, "after the delete", nil)), ams.ENOTFOUND)
		return nil
	})
}

func testWorldTasks(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "tasks@example.com"), mustUser(t, s, "tasks2@example.com")
	a, oa := mustAssistant(t, s, u, "t"), mustAssistant(t, s, other, "o")
	tk := newTask(u, a, "Buy milk", tp(t0.Add(24*time.Hour)))
	tk.Notes, tk.RemindAt = "2 litres", tp(t0.Add(23*time.Hour))
	update(t, s, func(tx ams.Tx) error { return tx.CreateTask(ctx, tk) })
	got, err := s.FindTask(ctx, u.ID, tk.ID)
	if err != nil || got.Title != "Buy milk" || got.Notes != "2 litres" || got.Status != ams.TaskOpen || got.Object != "task" ||
		got.AssistantID != a.ID || !sameTime(got.DueAt, tk.DueAt) || !sameTime(got.RemindAt, tk.RemindAt) || got.CompletedAt != nil ||
		got.RemindedAt != nil || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) {
		t.Fatalf("find task: %+v %v", got, err)
	}
	// Another account sees nothing, on reads and in a transaction.
	if _, err := s.FindTask(ctx, other.ID, tk.ID); !ams.IsNotFound(err) {
		t.Fatalf("another account finds the task: %v", err)
	}
	if pg, err := s.ListTasks(ctx, other.ID, ams.TaskFilter{}, ams.ListParams{Limit: 10}); err != nil || len(pg.Data) != 0 {
		t.Fatalf("another account lists the task: %v %v", pg, err)
	}
	update(t, s, func(tx ams.Tx) error {
		_, err := tx.FindTask(ctx, other.ID, tk.ID)
		wantKind(t, err, ams.ENOTFOUND)
		stolen := *tk
		stolen.UserID, stolen.Title = other.ID, "stolen"
		wantKind(t, tx.UpdateTask(ctx, &stolen), ams.ENOTFOUND)
		wantKind(t, tx.DeleteTask(ctx, other.ID, tk.ID), ams.ENOTFOUND)
		// A task of u's under another account's assistant is refused.
		bad := newTask(u, oa, "x", nil)
		wantKind(t, tx.CreateTask(ctx, bad), ams.ENOTFOUND)
		// The transaction goes on after those answers.
		_, err = tx.FindTask(ctx, u.ID, tk.ID)
		return err
	})
	if got, _ := s.FindTask(ctx, u.ID, tk.ID); got.Title != "Buy milk" {
		t.Fatalf("another account changed the task: %+v", got)
	}

	// Read-modify-write in a transaction: complete it.
	update(t, s, func(tx ams.Tx) error {
		cur, err := tx.FindTask(ctx, u.ID, tk.ID)
		if err != nil {
			return err
		}
		cur.Status, cur.CompletedAt, cur.UpdatedAt, cur.DueAt = ams.TaskCompleted, tp(t0.Add(time.Hour)), t0.Add(time.Hour), nil
		return tx.UpdateTask(ctx, cur)
	})
	got, _ = s.FindTask(ctx, u.ID, tk.ID)
	if got.Status != ams.TaskCompleted || !sameTime(got.CompletedAt, tp(t0.Add(time.Hour))) || got.DueAt != nil ||
		!got.UpdatedAt.Equal(t0.Add(time.Hour)) || !got.CreatedAt.Equal(t0) || got.AssistantID != a.ID {
		t.Fatalf("task after update: %+v", got)
	}

	// Delete.
	update(t, s, func(tx ams.Tx) error { return tx.DeleteTask(ctx, u.ID, tk.ID) })
	if _, err := s.FindTask(ctx, u.ID, tk.ID); !ams.IsNotFound(err) {
		t.Fatalf("deleted task found: %v", err)
	}
	if err := s.Update(ctx, func(tx ams.Tx) error { return tx.DeleteTask(ctx, u.ID, tk.ID) }); !ams.IsNotFound(err) {
		t.Fatalf("deleting a deleted task: %v", err)
	}

	// Filters and pagination. Tasks due on days 1..6; the even ones done;
	// one without a due date; one of another assistant.
	b := mustAssistant(t, s, u, "b")
	var all []*ams.Task
	update(t, s, func(tx ams.Tx) error {
		for i := 1; i <= 6; i++ {
			x := newTask(u, a, fmt.Sprint("day ", i), tp(t0.Add(time.Duration(i)*24*time.Hour)))
			if i%2 == 0 {
				x.Status, x.CompletedAt = ams.TaskCompleted, tp(t0)
			}
			all = append(all, x)
		}
		all = append(all, newTask(u, a, "someday", nil), newTask(u, b, "b's", tp(t0.Add(36*time.Hour))))
		for _, x := range all {
			if err := tx.CreateTask(ctx, x); err != nil {
				return err
			}
		}
		return nil
	})
	list := func(f ams.TaskFilter, p ams.ListParams) []string {
		t.Helper()
		pg, err := s.ListTasks(ctx, u.ID, f, p)
		return ids(t, pg, err, taskID)
	}
	wantIDs(t, list(ams.TaskFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc}),
		all[0].ID, all[1].ID, all[2].ID, all[3].ID, all[4].ID, all[5].ID, all[6].ID, all[7].ID)
	wantIDs(t, list(ams.TaskFilter{Status: ams.TaskOpen}, ams.ListParams{Limit: 100}), all[7].ID, all[6].ID, all[4].ID, all[2].ID, all[0].ID)
	wantIDs(t, list(ams.TaskFilter{Status: ams.TaskCompleted}, ams.ListParams{Limit: 100, Order: ams.OrderAsc}), all[1].ID, all[3].ID, all[5].ID)
	wantIDs(t, list(ams.TaskFilter{AssistantID: b.ID}, ams.ListParams{Limit: 100}), all[7].ID)
	// Due in [day 2, day 5): days 2, 3, 4 and b's (day 1.5 is before).
	due := ams.TaskFilter{DueAfter: tp(t0.Add(48 * time.Hour)), DueBefore: tp(t0.Add(120 * time.Hour))}
	wantIDs(t, list(due, ams.ListParams{Limit: 100, Order: ams.OrderAsc}), all[1].ID, all[2].ID, all[3].ID)
	wantIDs(t, list(ams.TaskFilter{DueBefore: tp(t0.Add(48 * time.Hour))}, ams.ListParams{Limit: 100, Order: ams.OrderAsc}), all[0].ID, all[7].ID)
	open := ams.TaskFilter{Status: ams.TaskOpen, DueAfter: tp(t0.Add(24 * time.Hour))}
	wantIDs(t, list(open, ams.ListParams{Limit: 100, Order: ams.OrderAsc}), all[0].ID, all[2].ID, all[4].ID, all[7].ID)
	// Pages of a filtered list, walked both ways.
	pg, err := s.ListTasks(ctx, u.ID, open, ams.ListParams{Limit: 2, Order: ams.OrderAsc})
	wantIDs(t, ids(t, pg, err, taskID), all[0].ID, all[2].ID)
	if !pg.HasMore {
		t.Fatal("has_more false on a filtered first page")
	}
	pg, err = s.ListTasks(ctx, u.ID, open, ams.ListParams{Limit: 2, Order: ams.OrderAsc, After: all[2].ID})
	wantIDs(t, ids(t, pg, err, taskID), all[4].ID, all[7].ID)
	if pg.HasMore {
		t.Fatal("has_more true on a filtered last page")
	}
	pg, err = s.ListTasks(ctx, u.ID, open, ams.ListParams{Limit: 1, Order: ams.OrderAsc, Before: all[4].ID})
	wantIDs(t, ids(t, pg, err, taskID), all[2].ID)
	// A cursor outside the filtered list is refused.
	_, err = s.ListTasks(ctx, u.ID, open, ams.ListParams{Limit: 2, After: all[1].ID})
	wantKind(t, err, ams.EINVALID)
	_, err = s.ListTasks(ctx, other.ID, ams.TaskFilter{}, ams.ListParams{Limit: 2, After: all[0].ID})
	wantKind(t, err, ams.EINVALID)
}

func testWorldCalendar(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "cal@example.com"), mustUser(t, s, "cal2@example.com")
	a := mustAssistant(t, s, u, "c")
	day := func(d, h int) time.Time { return t0.Add(time.Duration(d)*24*time.Hour + time.Duration(h)*time.Hour) }
	e := newCalendarEvent(u, a, "Dentist", day(1, 2), time.Hour)
	e.Description, e.Location, e.RemindAt = "check-up", "Main St 1", tp(day(1, 1))
	update(t, s, func(tx ams.Tx) error { return tx.CreateCalendarEvent(ctx, e) })
	got, err := s.FindCalendarEvent(ctx, u.ID, e.ID)
	if err != nil || got.Title != "Dentist" || got.Description != "check-up" || got.Location != "Main St 1" || got.AssistantID != a.ID ||
		got.Object != "calendar_event" || !got.StartsAt.Equal(day(1, 2)) || !got.EndsAt.Equal(day(1, 3)) || !sameTime(got.RemindAt, e.RemindAt) ||
		got.RemindedAt != nil || got.IntegrationID != "" || got.ExternalUID != "" || !got.CreatedAt.Equal(t0) {
		t.Fatalf("find calendar event: %+v %v", got, err)
	}
	if _, err := s.FindCalendarEvent(ctx, other.ID, e.ID); !ams.IsNotFound(err) {
		t.Fatalf("another account finds the event: %v", err)
	}
	update(t, s, func(tx ams.Tx) error {
		_, err := tx.FindCalendarEvent(ctx, other.ID, e.ID)
		wantKind(t, err, ams.ENOTFOUND)
		stolen := *e
		stolen.UserID = other.ID
		wantKind(t, tx.UpdateCalendarEvent(ctx, &stolen), ams.ENOTFOUND)
		wantKind(t, tx.DeleteCalendarEvent(ctx, other.ID, e.ID, ams.DeletedByAPI, t0), ams.ENOTFOUND)
		cur, err := tx.FindCalendarEvent(ctx, u.ID, e.ID)
		if err != nil {
			return err
		}
		cur.Title, cur.EndsAt, cur.UpdatedAt = "Dentist (long)", day(1, 4), t0.Add(time.Minute)
		return tx.UpdateCalendarEvent(ctx, cur)
	})
	got, _ = s.FindCalendarEvent(ctx, u.ID, e.ID)
	if got.Title != "Dentist (long)" || !got.EndsAt.Equal(day(1, 4)) || !got.UpdatedAt.Equal(t0.Add(time.Minute)) || !got.CreatedAt.Equal(t0) {
		t.Fatalf("event after update: %+v", got)
	}

	// An integration's event: found by its UID, which is unique per
	// integration; another account's integration is refused.
	in := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), UserID: u.ID, Provider: "caldav", Status: "connected",
		Config: map[string]any{}, ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0}
	oin := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), UserID: other.ID, Provider: "caldav", Status: "connected",
		ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0}
	synced := newCalendarEvent(u, nil, "Standup", day(2, 0), 15*time.Minute)
	synced.IntegrationID, synced.ExternalUID, synced.ExternalPath, synced.ExternalETag = in.ID, "uid-1@example.com", "/cal/uid-1.ics", `"e1"`
	update(t, s, func(tx ams.Tx) error {
		if err := tx.CreateIntegration(ctx, in, nil); err != nil {
			return err
		}
		if err := tx.CreateIntegration(ctx, oin, nil); err != nil {
			return err
		}
		return tx.CreateCalendarEvent(ctx, synced)
	})
	update(t, s, func(tx ams.Tx) error {
		byUID, err := tx.FindCalendarEventByUID(ctx, u.ID, in.ID, "uid-1@example.com")
		if err != nil || byUID.ID != synced.ID || byUID.AssistantID != "" || byUID.IntegrationID != in.ID || byUID.ExternalPath != "/cal/uid-1.ics" ||
			byUID.ExternalETag != `"e1"` {
			t.Errorf("find by UID: %+v %v", byUID, err)
		}
		_, err = tx.FindCalendarEventByUID(ctx, other.ID, in.ID, "uid-1@example.com")
		wantKind(t, err, ams.ENOTFOUND)
		_, err = tx.FindCalendarEventByUID(ctx, u.ID, in.ID, "uid-2@example.com")
		wantKind(t, err, ams.ENOTFOUND)
		_, err = tx.FindCalendarEventByUID(ctx, u.ID, in.ID, "")
		wantKind(t, err, ams.ENOTFOUND)
		dup := newCalendarEvent(u, nil, "dup", day(3, 0), time.Hour)
		dup.IntegrationID, dup.ExternalUID = in.ID, "uid-1@example.com"
		wantKind(t, tx.CreateCalendarEvent(ctx, dup), ams.ECONFLICT)
		foreign := newCalendarEvent(u, nil, "foreign", day(3, 0), time.Hour)
		foreign.IntegrationID, foreign.ExternalUID = oin.ID, "uid-9"
		wantKind(t, tx.CreateCalendarEvent(ctx, foreign), ams.ENOTFOUND)
		// The transaction goes on after those answers: the sync moves the
		// ETag.
		byUID.ExternalETag, byUID.UpdatedAt = `"e2"`, t0.Add(time.Hour)
		return tx.UpdateCalendarEvent(ctx, byUID)
	})
	if got, _ := s.FindCalendarEvent(ctx, u.ID, synced.ID); got.ExternalETag != `"e2"` || got.ExternalUID != "uid-1@example.com" {
		t.Fatalf("synced event after update: %+v", got)
	}
	// The same UID in another integration is another event.
	in2 := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), UserID: u.ID, Provider: "caldav", Status: "connected", ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0}
	twin := newCalendarEvent(u, nil, "twin", day(2, 0), time.Hour)
	twin.IntegrationID, twin.ExternalUID = in2.ID, "uid-1@example.com"
	update(t, s, func(tx ams.Tx) error {
		if err := tx.CreateIntegration(ctx, in2, nil); err != nil {
			return err
		}
		return tx.CreateCalendarEvent(ctx, twin)
	})

	// Overlap filter: events on days 1..4 of 1 h (plus "Dentist", day 1
	// 02:00-04:00, the synced standup and its twin on day 2).
	var evs []*ams.CalendarEvent
	update(t, s, func(tx ams.Tx) error {
		for d := 3; d <= 5; d++ {
			x := newCalendarEvent(u, a, fmt.Sprint("day ", d), day(d, 10), time.Hour)
			evs = append(evs, x)
			if err := tx.CreateCalendarEvent(ctx, x); err != nil {
				return err
			}
		}
		return nil
	})
	list := func(f ams.CalendarFilter, p ams.ListParams) []string {
		t.Helper()
		pg, err := s.ListCalendarEvents(ctx, u.ID, f, p)
		return ids(t, pg, err, eventID)
	}
	asc := ams.ListParams{Limit: 100, Order: ams.OrderAsc}
	wantIDs(t, list(ams.CalendarFilter{}, asc), e.ID, synced.ID, twin.ID, evs[0].ID, evs[1].ID, evs[2].ID)
	// [day 1 03:00, day 3 10:00): the dentist (ends 04:00), day 2's two;
	// day 3 starts at the window's end, so it is out.
	wantIDs(t, list(ams.CalendarFilter{StartsAfter: tp(day(1, 3)), StartsBefore: tp(day(3, 10))}, asc), e.ID, synced.ID, twin.ID)
	// An event ending exactly at StartsAfter does not overlap.
	wantIDs(t, list(ams.CalendarFilter{StartsAfter: tp(day(1, 4)), StartsBefore: tp(day(3, 10).Add(time.Millisecond))}, asc), synced.ID, twin.ID, evs[0].ID)
	wantIDs(t, list(ams.CalendarFilter{StartsAfter: tp(day(4, 0))}, asc), evs[1].ID, evs[2].ID)
	wantIDs(t, list(ams.CalendarFilter{StartsBefore: tp(day(2, 0))}, asc), e.ID)
	wantIDs(t, list(ams.CalendarFilter{AssistantID: a.ID, StartsAfter: tp(day(2, 0))}, asc), evs[0].ID, evs[1].ID, evs[2].ID)
	f := ams.CalendarFilter{StartsAfter: tp(day(2, 0))}
	pg, err := s.ListCalendarEvents(ctx, u.ID, f, ams.ListParams{Limit: 2})
	wantIDs(t, ids(t, pg, err, eventID), evs[2].ID, evs[1].ID)
	if !pg.HasMore {
		t.Fatal("has_more false on a filtered first page")
	}
	pg, err = s.ListCalendarEvents(ctx, u.ID, f, ams.ListParams{Limit: 2, After: evs[1].ID})
	wantIDs(t, ids(t, pg, err, eventID), evs[0].ID, twin.ID)
	pg, err = s.ListCalendarEvents(ctx, u.ID, f, ams.ListParams{Limit: 2, After: twin.ID})
	wantIDs(t, ids(t, pg, err, eventID), synced.ID)
	if pg.HasMore {
		t.Fatal("has_more true on a filtered last page")
	}
	if pg, err := s.ListCalendarEvents(ctx, other.ID, ams.CalendarFilter{}, asc); err != nil || len(pg.Data) != 0 {
		t.Fatalf("another account lists %v %v", pg, err)
	}

	update(t, s, func(tx ams.Tx) error { return tx.DeleteCalendarEvent(ctx, u.ID, e.ID, ams.DeletedByAPI, t0) })
	if _, err := s.FindCalendarEvent(ctx, u.ID, e.ID); !ams.IsNotFound(err) {
		t.Fatalf("deleted event found: %v", err)
	}
}

// errBoom is the error of a transaction function that gives up.
var errBoom = errors.New("boom")

func testWorldRollback(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "rollback@example.com")
	a := mustAssistant(t, s, u, "r")
	mustWebhook(t, s, u, ams.EventTaskCreated, ams.EventEventCreated)
	tk := newTask(u, a, "never", nil)
	ev := newCalendarEvent(u, a, "never", t0, time.Hour)
	in := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), UserID: u.ID, Provider: "caldav", Status: "connected", ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0}
	act := &ams.Action{ID: ams.NewID(ams.PrefixAction), UserID: u.ID, AssistantID: a.ID, Type: "create_task", Input: []byte(`{}`),
		Status: ams.ActionSucceeded, Result: []byte(`{}`), CreatedAt: t0}
	err := s.Update(ctx, func(tx ams.Tx) error {
		for _, step := range []func() error{
			func() error { return tx.CreateTask(ctx, tk) },
			func() error { return tx.CreateCalendarEvent(ctx, ev) },
			func() error { return tx.CreateIntegration(ctx, in, map[string]string{"password": "p"}) },
			func() error { return tx.CreateAction(ctx, act) },
			func() error { return tx.DeleteAssistant(ctx, u.ID, a.ID, t0) },
			func() error {
				return tx.Emit(ctx, ams.TaskEvent(ams.EventTaskCreated, tk, t0), ams.CalendarEventEvent(ams.EventEventCreated, ev, t0))
			},
		} {
			if err := step(); err != nil {
				return err
			}
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	// fn's *ams.Error comes back as it was.
	err = s.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateTask(ctx, tk); err != nil {
			return err
		}
		_, err := tx.FindTask(ctx, u.ID, "task_nothere")
		return err
	})
	if e, ok := err.(*ams.Error); !ok || e.Kind != ams.ENOTFOUND || e.Code != "resource_missing" {
		t.Fatalf("Update returned %#v, want fn's *ams.Error", err)
	}
	if _, err := s.FindTask(ctx, u.ID, tk.ID); !ams.IsNotFound(err) {
		t.Fatalf("task of a failed transaction: %v", err)
	}
	if _, err := s.FindCalendarEvent(ctx, u.ID, ev.ID); !ams.IsNotFound(err) {
		t.Fatalf("event of a failed transaction: %v", err)
	}
	if _, err := s.FindIntegration(ctx, u.ID, in.ID); !ams.IsNotFound(err) {
		t.Fatalf("integration of a failed transaction: %v", err)
	}
	if _, err := s.FindAction(ctx, u.ID, act.ID); !ams.IsNotFound(err) {
		t.Fatalf("action of a failed transaction: %v", err)
	}
	if _, err := s.FindAssistant(ctx, u.ID, a.ID); err != nil {
		t.Fatalf("assistant deleted by a failed transaction: %v", err)
	}
	if pg, err := listEvents(t, s, ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10}); err != nil || len(pg.Data) != 0 {
		t.Fatalf("events of a failed transaction: %v %v", pg, err)
	}
	if jobs, err := s.ClaimJobs(ctx, t0.Add(time.Hour), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8}); err != nil || len(jobs) != 0 {
		t.Fatalf("delivery jobs of a failed transaction: %d %v", len(jobs), err)
	}
	// A panic in fn rolls back too, and the store stays usable.
	func() {
		defer func() { recover() }()
		s.Update(ctx, func(tx ams.Tx) error {
			if err := tx.CreateTask(ctx, tk); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if _, err := s.FindTask(ctx, u.ID, tk.ID); !ams.IsNotFound(err) {
		t.Fatalf("task of a panicking transaction: %v", err)
	}
	update(t, s, func(tx ams.Tx) error { return tx.CreateTask(ctx, tk) })
}

func testWorldEmit(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "emit@example.com"), mustUser(t, s, "emit2@example.com")
	a := mustAssistant(t, s, u, "e")
	w := mustWebhook(t, s, u, ams.EventTaskCreated, ams.EventTaskCompleted)
	mustWebhook(t, s, other, ams.EventTaskCreated) // another account's: gets nothing
	drainJobsReady(s)
	tk := newTask(u, a, "Call Bob", nil)
	created := ams.TaskEvent(ams.EventTaskCreated, tk, t0)
	updated := ams.TaskEvent(ams.EventTaskUpdated, tk, t0) // no webhook subscribes
	update(t, s, func(tx ams.Tx) error {
		if err := tx.CreateTask(ctx, tk); err != nil {
			return err
		}
		if err := tx.Emit(ctx, created); err != nil {
			return err
		}
		return tx.Emit(ctx, updated)
	})
	select {
	case <-s.JobsReady():
	default:
		t.Fatal("JobsReady not signalled after a transaction queued deliveries")
	}
	pg, err := listEvents(t, s, ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10, Order: ams.OrderAsc})
	if err != nil || len(pg.Data) != 2 || pg.Data[0].ID != created.ID || pg.Data[1].Type != ams.EventTaskUpdated {
		t.Fatalf("events: %v %v", pg, err)
	}
	ev := pg.Data[0]
	if ev.Type != ams.EventTaskCreated || !ev.CreatedAt.Equal(t0) || ev.Data["id"] != tk.ID || ev.Data["object"] != "task" ||
		ev.Data["title"] != "Call Bob" || ev.Data["status"] != "open" || ev.Data["due_at"] != nil {
		t.Fatalf("task.created read back: %+v", ev)
	}
	jobs, err := s.ClaimJobs(ctx, t0, ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 8})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claimed %d jobs (%v), want 1", len(jobs), err)
	}
	if j := jobs[0]; j.WebhookID != w.ID || j.Event.ID != created.ID || j.Event.Data["title"] != "Call Bob" || j.UserID != u.ID {
		t.Fatalf("job: %+v event %+v", j, j.Event)
	}
	// Emitting nothing is fine.
	update(t, s, func(tx ams.Tx) error { return tx.Emit(ctx) })
}

func testWorldAssistants(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "ast@example.com"), mustUser(t, s, "ast2@example.com")
	keep := mustAssistant(t, s, u, "keep")
	gone := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: u.ID, Name: "gone", Model: ams.ModelBuiltin, CreatedAt: t0, UpdatedAt: t0}
	update(t, s, func(tx ams.Tx) error { return tx.CreateAssistant(ctx, gone) })
	x := sendTurn(t, s, u, gone, t0)
	update(t, s, func(tx ams.Tx) error {
		cur, err := tx.FindAssistant(ctx, u.ID, gone.ID)
		if err != nil {
			return err
		}
		cur.Name, cur.Instructions, cur.UpdatedAt = "renamed", "be brief", t0.Add(time.Minute)
		if err := tx.UpdateAssistant(ctx, cur); err != nil {
			return err
		}
		_, err = tx.FindAssistant(ctx, other.ID, gone.ID)
		wantKind(t, err, ams.ENOTFOUND)
		wantKind(t, tx.DeleteAssistant(ctx, other.ID, gone.ID, t0), ams.ENOTFOUND)
		stolen := *cur
		stolen.UserID = other.ID
		wantKind(t, tx.UpdateAssistant(ctx, &stolen), ams.ENOTFOUND)
		return nil
	})
	if got, err := s.FindAssistant(ctx, u.ID, gone.ID); err != nil || got.Name != "renamed" || got.Instructions != "be brief" ||
		!got.UpdatedAt.Equal(t0.Add(time.Minute)) || !got.CreatedAt.Equal(t0) {
		t.Fatalf("assistant after update: %+v %v", got, err)
	}
	update(t, s, func(tx ams.Tx) error { return tx.DeleteAssistant(ctx, u.ID, gone.ID, t0.Add(time.Hour)) })
	if _, err := s.FindAssistant(ctx, u.ID, gone.ID); !ams.IsNotFound(err) {
		t.Fatalf("deleted assistant found: %v", err)
	}
	pg, err := s.ListAssistants(ctx, u.ID, ams.ListParams{Limit: 10})
	wantIDs(t, ids(t, pg, err, assistantID), keep.ID)
	_, err = s.ListAssistants(ctx, u.ID, ams.ListParams{Limit: 10, After: gone.ID})
	wantKind(t, err, ams.EINVALID)
	err = s.Update(ctx, func(tx ams.Tx) error {
		if _, err := tx.FindAssistant(ctx, u.ID, gone.ID); !ams.IsNotFound(err) {
			t.Errorf("deleted assistant found in a transaction: %v", err)
		}
		wantKind(t, tx.UpdateAssistant(ctx, gone), ams.ENOTFOUND)
		wantKind(t, tx.CreateTask(ctx, newTask(u, gone, "x", nil)), ams.ENOTFOUND)
		return tx.DeleteAssistant(ctx, u.ID, gone.ID, t0)
	})
	wantKind(t, err, ams.ENOTFOUND)
	// Its conversation and messages stay.
	if c, err := s.FindConversation(ctx, u.ID, x.ConversationID); err != nil || c.AssistantID != gone.ID || c.MessageCount != 2 {
		t.Fatalf("conversation of a deleted assistant: %+v %v", c, err)
	}
	if cs, err := s.ListConversations(ctx, u.ID, gone.ID, ams.ListParams{Limit: 10}); err != nil || len(cs.Data) != 1 {
		t.Fatalf("conversations of a deleted assistant: %v %v", cs, err)
	}
	if m, err := s.FindMessage(ctx, u.ID, x.Reply.ID); err != nil || m.AssistantID != gone.ID {
		t.Fatalf("message of a deleted assistant: %+v %v", m, err)
	}
}

func testWorldMessages(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "msg@example.com"), mustUser(t, s, "msg2@example.com")
	a := mustAssistant(t, s, u, "m")
	conv := ams.NewID(ams.PrefixConversation)
	x1 := exchange(u, a, conv, true, "first", t0)
	x2 := exchange(u, a, conv, false, "second", t0.Add(time.Minute))
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
		_, err = tx.FindMessage(ctx, other.ID, x1.Inbound.ID)
		wantKind(t, err, ams.ENOTFOUND)
		stolen := *m
		stolen.UserID, stolen.Content = other.ID, "stolen"
		wantKind(t, tx.UpdateMessage(ctx, &stolen), ams.ENOTFOUND)
		wantKind(t, tx.DeleteMessage(ctx, other.ID, m.ID, t0), ams.ENOTFOUND)
		m.Content, m.UpdatedAt = "first, edited", t0.Add(time.Hour)
		if err := tx.UpdateMessage(ctx, m); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.MessageEvent(ams.EventMessageUpdated, m, t0.Add(time.Hour)))
	})
	m, err := s.FindMessage(ctx, u.ID, x1.Inbound.ID)
	if err != nil || m.Content != "first, edited" || !m.UpdatedAt.Equal(t0.Add(time.Hour)) || !m.CreatedAt.Equal(t0) {
		t.Fatalf("message after update: %+v %v", m, err)
	}
	if pg, _ := listEvents(t, s, ctx, u.ID, ams.EventFilter{Type: ams.EventMessageUpdated}, ams.ListParams{Limit: 10}); len(pg.Data) != 1 || pg.Data[0].Data["content"] != "first, edited" {
		t.Fatalf("message.updated: %+v", pg.Data)
	}
	// Deleting the last message counts it out and moves last_message_at
	// back to the message before.
	update(t, s, func(tx ams.Tx) error { return tx.DeleteMessage(ctx, u.ID, x2.Reply.ID, t0.Add(2*time.Hour)) })
	if _, err := s.FindMessage(ctx, u.ID, x2.Reply.ID); !ams.IsNotFound(err) {
		t.Fatalf("deleted message found: %v", err)
	}
	c, err := s.FindConversation(ctx, u.ID, conv)
	if err != nil || c.MessageCount != 3 || !c.LastMessageAt.Equal(x2.Inbound.CreatedAt) || !c.UpdatedAt.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("conversation after delete: %+v %v", c, err)
	}
	if pg, err := s.ListMessages(ctx, u.ID, conv, ams.ListParams{Limit: 10}); err != nil || len(pg.Data) != 3 {
		t.Fatalf("messages after delete: %v %v", pg, err)
	}
	if err := s.Update(ctx, func(tx ams.Tx) error { return tx.DeleteMessage(ctx, u.ID, x2.Reply.ID, t0) }); !ams.IsNotFound(err) {
		t.Fatalf("deleting a deleted message: %v", err)
	}
}

func testWorldIntegrations(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "int@example.com"), mustUser(t, s, "int2@example.com")
	lastErr := "401 from server"
	mk := func(user *ams.User, provider, status string) *ams.Integration {
		return &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", UserID: user.ID, Provider: provider, Status: status,
			Config: map[string]any{"url": "https://dav.example/" + user.ID, "username": "ann"}, ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0}
	}
	in := mk(u, "caldav", "connected")
	secrets := map[string]string{"password": "hunter2", "token": "tok-123"}
	failing, off, oin, other2 := mk(u, "caldav", "error"), mk(u, "caldav", "disconnected"), mk(other, "caldav", "connected"), mk(u, "imap", "connected")
	failing.LastError = &lastErr
	update(t, s, func(tx ams.Tx) error {
		if err := tx.CreateIntegration(ctx, in, secrets); err != nil {
			return err
		}
		for _, x := range []*ams.Integration{failing, off, oin, other2} {
			if err := tx.CreateIntegration(ctx, x, nil); err != nil {
				return err
			}
		}
		return nil
	})
	got, err := s.FindIntegration(ctx, u.ID, in.ID)
	if err != nil || got.Provider != "caldav" || got.Status != "connected" || got.Config["url"] != "https://dav.example/"+u.ID ||
		len(got.Config) != 2 || got.LastError != nil || !got.ConnectedAt.Equal(t0) || got.Object != "integration" {
		t.Fatalf("find integration: %+v %v", got, err)
	}
	if _, err := s.FindIntegration(ctx, other.ID, in.ID); !ams.IsNotFound(err) {
		t.Fatalf("another account finds the integration: %v", err)
	}
	sec, err := s.IntegrationSecrets(ctx, u.ID, in.ID)
	if err != nil || len(sec) != 2 || sec["password"] != "hunter2" || sec["token"] != "tok-123" {
		t.Fatalf("secrets: %v %v", sec, err)
	}
	if _, err := s.IntegrationSecrets(ctx, other.ID, in.ID); !ams.IsNotFound(err) {
		t.Fatalf("another account reads the secrets: %v", err)
	}
	if sec, err := s.IntegrationSecrets(ctx, u.ID, failing.ID); err != nil || sec == nil || len(sec) != 0 {
		t.Fatalf("secrets of an integration without: %v %v", sec, err)
	}
	if pg, err := s.ListIntegrations(ctx, u.ID, ams.ListParams{Limit: 10}); err != nil || len(pg.Data) != 4 {
		t.Fatalf("list integrations: %v %v", pg, err)
	}

	// An update changes the record and keeps the secrets.
	update(t, s, func(tx ams.Tx) error {
		cur, err := tx.FindIntegration(ctx, u.ID, in.ID)
		if err != nil {
			return err
		}
		_, err = tx.FindIntegration(ctx, other.ID, in.ID)
		wantKind(t, err, ams.ENOTFOUND)
		stolen := *cur
		stolen.UserID = other.ID
		wantKind(t, tx.UpdateIntegration(ctx, &stolen), ams.ENOTFOUND)
		cur.Status, cur.LastError, cur.UpdatedAt = "error", &lastErr, t0.Add(time.Hour)
		cur.Config["ctag"] = "c-2"
		if err := tx.UpdateIntegration(ctx, cur); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.IntegrationEvent(ams.EventIntegrationError, cur, t0.Add(time.Hour)))
	})
	got, _ = s.FindIntegration(ctx, u.ID, in.ID)
	if got.Status != "error" || got.LastError == nil || *got.LastError != lastErr || got.Config["ctag"] != "c-2" || !got.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("integration after update: %+v", got)
	}
	if sec, _ := s.IntegrationSecrets(ctx, u.ID, in.ID); sec["password"] != "hunter2" {
		t.Fatalf("secrets after update: %v", sec)
	}
	if pg, _ := listEvents(t, s, ctx, u.ID, ams.EventFilter{Type: ams.EventIntegrationError}, ams.ListParams{Limit: 10}); len(pg.Data) != 1 ||
		pg.Data[0].Data["id"] != in.ID || pg.Data[0].Data["password"] != nil {
		t.Fatalf("integration.error: %+v", pg.Data)
	}

	// ActiveIntegrations: connected or error, of every account, one provider.
	act, err := s.ActiveIntegrations(ctx, "caldav")
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	for _, x := range act {
		gotIDs = append(gotIDs, x.ID)
	}
	wantIDs(t, gotIDs, in.ID, failing.ID, oin.ID)
	if act[2].UserID != other.ID {
		t.Fatalf("active integration's user: %+v", act[2])
	}
	if act, err := s.ActiveIntegrations(ctx, "nothing"); err != nil || len(act) != 0 {
		t.Fatalf("active integrations of an unknown provider: %v %v", act, err)
	}
}

func testWorldActions(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "act@example.com"), mustUser(t, s, "act2@example.com")
	a, b, oa := mustAssistant(t, s, u, "a"), mustAssistant(t, s, u, "b"), mustAssistant(t, s, other, "o")
	ok := &ams.Action{ID: ams.NewID(ams.PrefixAction), Object: "action", UserID: u.ID, AssistantID: a.ID, ConversationID: "conv_notyet",
		Type: "create_task", Input: []byte(`{"title": "Buy milk",  "due_at":null}`), Status: ams.ActionSucceeded,
		Result: []byte(`{"task_id":"task_1", "n": 1.50}`), CreatedAt: t0}
	bad := &ams.Action{ID: ams.NewID(ams.PrefixAction), UserID: u.ID, AssistantID: b.ID, Type: "complete_task", Input: []byte(`{"task_id":"task_x"}`),
		Status: ams.ActionFailed, Error: &ams.ActionError{Type: "invalid_request_error", Code: "resource_missing", Message: "No such task: 'task_x'", Param: "task_id"},
		CreatedAt: t0.Add(time.Second)}
	update(t, s, func(tx ams.Tx) error {
		if err := tx.CreateAction(ctx, ok); err != nil {
			return err
		}
		foreign := *bad
		foreign.ID, foreign.AssistantID = ams.NewID(ams.PrefixAction), oa.ID
		wantKind(t, tx.CreateAction(ctx, &foreign), ams.ENOTFOUND)
		broken := *bad
		broken.ID, broken.Input = ams.NewID(ams.PrefixAction), []byte(`{"task_id":`)
		wantKind(t, tx.CreateAction(ctx, &broken), ams.EINVALID)
		return tx.CreateAction(ctx, bad)
	})
	got, err := s.FindAction(ctx, u.ID, ok.ID)
	if err != nil || got.Object != "action" || got.Type != "create_task" || got.Status != ams.ActionSucceeded || got.ConversationID != "conv_notyet" ||
		string(got.Input) != string(ok.Input) || string(got.Result) != string(ok.Result) || got.Error != nil || !got.CreatedAt.Equal(t0) || got.AssistantID != a.ID {
		t.Fatalf("find action: %+v (input %s result %s) %v", got, got.Input, got.Result, err)
	}
	got, err = s.FindAction(ctx, u.ID, bad.ID)
	if err != nil || got.Status != ams.ActionFailed || got.Result != nil || got.Error == nil || *got.Error != *bad.Error || got.ConversationID != "" {
		t.Fatalf("find failed action: %+v %v", got, err)
	}
	if _, err := s.FindAction(ctx, other.ID, ok.ID); !ams.IsNotFound(err) {
		t.Fatalf("another account finds the action: %v", err)
	}
	pg, err := s.ListActions(ctx, u.ID, ams.ActionFilter{}, ams.ListParams{Limit: 10})
	wantIDs(t, ids(t, pg, err, actionID), bad.ID, ok.ID)
	pg, err = s.ListActions(ctx, u.ID, ams.ActionFilter{AssistantID: a.ID}, ams.ListParams{Limit: 10})
	wantIDs(t, ids(t, pg, err, actionID), ok.ID)
	pg, err = s.ListActions(ctx, u.ID, ams.ActionFilter{ConversationID: "conv_notyet"}, ams.ListParams{Limit: 10})
	wantIDs(t, ids(t, pg, err, actionID), ok.ID)
	pg, err = s.ListActions(ctx, u.ID, ams.ActionFilter{AssistantID: a.ID, ConversationID: "conv_other"}, ams.ListParams{Limit: 10})
	wantIDs(t, ids(t, pg, err, actionID))
	pg, err = s.ListActions(ctx, u.ID, ams.ActionFilter{}, ams.ListParams{Limit: 1, After: bad.ID})
	wantIDs(t, ids(t, pg, err, actionID), ok.ID)
	pg, err = s.ListActions(ctx, other.ID, ams.ActionFilter{}, ams.ListParams{Limit: 10})
	wantIDs(t, ids(t, pg, err, actionID))
}

func testWorldReminders(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "remind@example.com")
	a := mustAssistant(t, s, u, "r")
	w := mustWebhook(t, s, u, ams.EventTaskReminder, ams.EventEventReminder)
	if next, err := s.NextReminder(ctx); err != nil || !next.IsZero() {
		t.Fatalf("next reminder of an empty store: %v %v", next, err)
	}
	now := t0.Add(time.Hour)
	const dueTasks, dueEvents = 13, 5
	var due []*ams.Task
	var later, done *ams.Task
	update(t, s, func(tx ams.Tx) error {
		for i := range dueTasks {
			x := newTask(u, a, fmt.Sprint("due ", i), nil)
			x.RemindAt = tp(now.Add(-time.Duration(i) * time.Minute))
			due = append(due, x)
			if err := tx.CreateTask(ctx, x); err != nil {
				return err
			}
		}
		later = newTask(u, a, "later", nil)
		later.RemindAt = tp(now.Add(time.Minute))
		done = newTask(u, a, "done", nil)
		done.RemindAt, done.Status, done.CompletedAt = tp(now.Add(-time.Hour)), ams.TaskCompleted, tp(t0)
		for _, x := range []*ams.Task{later, done, newTask(u, a, "no reminder", nil)} {
			if err := tx.CreateTask(ctx, x); err != nil {
				return err
			}
		}
		for i := range dueEvents + 1 {
			x := newCalendarEvent(u, a, fmt.Sprint("event ", i), now.Add(time.Hour), time.Hour)
			x.RemindAt = tp(now.Add(time.Duration(i-dueEvents+1) * time.Second)) // the last is a second late
			if err := tx.CreateCalendarEvent(ctx, x); err != nil {
				return err
			}
		}
		return nil
	})
	if next, err := s.NextReminder(ctx); err != nil || !next.Equal(now.Add(-12*time.Minute)) {
		t.Fatalf("next reminder: %v %v", next, err)
	}
	// Four callers at once, three at a time: each due reminder fires once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Go(func() {
			for {
				n, err := s.FireReminders(ctx, now, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if n > 3 {
					t.Errorf("fired %d of a limit of 3", n)
				}
				mu.Lock()
				total += n
				mu.Unlock()
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if total != dueTasks+dueEvents {
		t.Fatalf("fired %d reminders, want %d", total, dueTasks+dueEvents)
	}
	// reminded counts the reminder events of typ by record id; all at at
	// unless at is zero.
	reminded := func(typ string, at time.Time) map[string]int {
		t.Helper()
		out := map[string]int{}
		p := ams.ListParams{Limit: 100}
		for {
			pg, err := listEvents(t, s, ctx, u.ID, ams.EventFilter{Type: typ}, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range pg.Data {
				if !at.IsZero() && !e.CreatedAt.Equal(at) {
					t.Fatalf("reminder event at %v, want %v", e.CreatedAt, at)
				}
				out[e.Data["id"].(string)]++
			}
			if !pg.HasMore {
				return out
			}
			p.After = pg.Data[len(pg.Data)-1].ID
		}
	}
	tasks := reminded(ams.EventTaskReminder, now)
	if len(tasks) != dueTasks {
		t.Fatalf("%d tasks reminded, want %d", len(tasks), dueTasks)
	}
	for _, x := range due {
		if tasks[x.ID] != 1 {
			t.Fatalf("task %s reminded %d times", x.Title, tasks[x.ID])
		}
	}
	if tasks[done.ID] != 0 || tasks[later.ID] != 0 {
		t.Fatal("a completed or not yet due task reminded")
	}
	if evs := reminded(ams.EventEventReminder, now); len(evs) != dueEvents {
		t.Fatalf("%d calendar events reminded, want %d", len(evs), dueEvents)
	}
	if got, _ := s.FindTask(ctx, u.ID, due[0].ID); got.RemindedAt == nil || !got.RemindedAt.Equal(now) {
		t.Fatalf("fired task's reminded_at: %v", got.RemindedAt)
	}
	jobs, err := s.ClaimJobs(ctx, now, ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
	if err != nil || len(jobs) != dueTasks+dueEvents || jobs[0].WebhookID != w.ID {
		t.Fatalf("reminder deliveries: %d %v", len(jobs), err)
	}
	if n, err := s.FireReminders(ctx, now, 100); err != nil || n != 0 {
		t.Fatalf("fired again: %d %v", n, err)
	}
	if next, err := s.NextReminder(ctx); err != nil || !next.Equal(now.Add(time.Second)) {
		t.Fatalf("next reminder after firing: %v %v", next, err)
	}

	// An update that keeps remind_at does not fire again; a changed one
	// does, once; completing a task cancels its reminder.
	update(t, s, func(tx ams.Tx) error {
		x, err := tx.FindTask(ctx, u.ID, due[0].ID)
		if err != nil {
			return err
		}
		x.Title = "renamed"
		if err := tx.UpdateTask(ctx, x); err != nil {
			return err
		}
		if x.RemindedAt == nil {
			t.Error("UpdateTask with the same remind_at cleared reminded_at")
		}
		y, err := tx.FindTask(ctx, u.ID, due[1].ID)
		if err != nil {
			return err
		}
		y.RemindAt = tp(now.Add(30 * time.Minute))
		if err := tx.UpdateTask(ctx, y); err != nil {
			return err
		}
		if y.RemindedAt != nil {
			t.Error("UpdateTask with a new remind_at kept reminded_at")
		}
		z := *later
		z.Status, z.CompletedAt = ams.TaskCompleted, tp(now)
		return tx.UpdateTask(ctx, &z)
	})
	if next, err := s.NextReminder(ctx); err != nil || !next.Equal(now.Add(time.Second)) {
		t.Fatalf("next reminder after updates: %v %v", next, err)
	}
	if n, err := s.FireReminders(ctx, now.Add(29*time.Minute), 100); err != nil || n != 1 { // the late calendar event
		t.Fatalf("fired %d at +29m (%v), want 1", n, err)
	}
	if next, err := s.NextReminder(ctx); err != nil || !next.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("next reminder: %v %v", next, err)
	}
	if n, err := s.FireReminders(ctx, now.Add(time.Hour), 100); err != nil || n != 1 {
		t.Fatalf("fired %d after moving a reminder (%v), want 1", n, err)
	}
	if tasks := reminded(ams.EventTaskReminder, time.Time{}); tasks[due[1].ID] != 2 || tasks[due[0].ID] != 1 || tasks[later.ID] != 0 {
		t.Fatalf("reminders after changes: moved %d, renamed %d, completed %d", tasks[due[1].ID], tasks[due[0].ID], tasks[later.ID])
	}
	// A calendar event's new remind_at fires again too.
	var ev *ams.CalendarEvent
	update(t, s, func(tx ams.Tx) error {
		pg, err := s.ListCalendarEvents(ctx, u.ID, ams.CalendarFilter{}, ams.ListParams{Limit: 1})
		if err != nil {
			return err
		}
		if ev, err = tx.FindCalendarEvent(ctx, u.ID, pg.Data[0].ID); err != nil {
			return err
		}
		ev.RemindAt = tp(now.Add(2 * time.Hour))
		return tx.UpdateCalendarEvent(ctx, ev)
	})
	if next, err := s.NextReminder(ctx); err != nil || !next.Equal(now.Add(2*time.Hour)) {
		t.Fatalf("next reminder after moving an event's: %v %v", next, err)
	}
	if n, err := s.FireReminders(ctx, now.Add(2*time.Hour), 100); err != nil || n != 1 {
		t.Fatalf("fired %d after moving an event's reminder (%v), want 1", n, err)
	}
	if evs := reminded(ams.EventEventReminder, time.Time{}); evs[ev.ID] != 2 {
		t.Fatalf("moved event reminded %d times", evs[ev.ID])
	}
	if next, err := s.NextReminder(ctx); err != nil || !next.IsZero() {
		t.Fatalf("next reminder when all fired: %v %v", next, err)
	}
}
