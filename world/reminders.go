package world

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/testsignal"
)

// Reminders: a due remind_at of a task or calendar event emits
// task.reminder or event.reminder once. The store does the once:
// FireReminders marks each reminder fired in the transaction that emits
// its event, so however many schedulers (in however many processes) call
// it, each reminder fires once, and one that was due while no process ran
// fires when the next one starts. The Scheduler only decides when to ask.

// ReminderStore is what the Scheduler needs of the store.
type ReminderStore interface {
	FireReminders(ctx context.Context, now time.Time, limit int) (int, error)
	NextReminder(ctx context.Context) (time.Time, error)
}

// DefaultReminderPoll is how often a Scheduler looks for reminders when it
// knows of none due sooner: other processes (and the CLI) may add
// reminders it was not told about, so it never sleeps longer than this.
const DefaultReminderPoll = time.Second

// ReminderBatch is how many reminders one FireReminders call fires at most.
const ReminderBatch = 100

// Scheduler fires reminders when they come due.
type Scheduler struct {
	Store  ReminderStore
	Clock  ams.Clock
	Logger *slog.Logger
	// Poll bounds how long Run sleeps (default DefaultReminderPoll).
	Poll time.Duration
	// OnFire, when set, is called with the number of reminders each batch
	// fired (for metrics).
	OnFire func(n int)
	// Signals fire for tests (package testsignal); off unless a test
	// turns them on.
	Signals SchedulerSignals

	once sync.Once
	wake chan struct{}
}

func (s *Scheduler) init() {
	s.once.Do(func() {
		s.wake = make(chan struct{}, 1)
		if s.Poll <= 0 {
			s.Poll = DefaultReminderPoll
		}
		if s.Logger == nil {
			s.Logger = slog.Default()
		}
	})
}

// SchedulerSignals are the moments of a running Scheduler that tests wait
// for.
type SchedulerSignals struct {
	// Pass fires after each look for due reminders of Run, with how many
	// fired.
	Pass testsignal.Signal[int]
}

// Wake makes a running Run look at once, rather than at its next poll, for
// due reminders and for the next one: call it after setting a remind_at
// sooner than the poll interval. It never blocks.
func (s *Scheduler) Wake() {
	s.init()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// RunOnce fires every reminder due at the clock's now, in batches, and
// returns how many fired. Tests drive the scheduler with it.
func (s *Scheduler) RunOnce(ctx context.Context) (int, error) {
	s.init()
	total := 0
	for {
		n, err := s.Store.FireReminders(ctx, s.Clock.Now(), ReminderBatch)
		total += n
		if n > 0 && s.OnFire != nil {
			s.OnFire(n)
		}
		if err != nil || n < ReminderBatch {
			return total, err
		}
	}
}

// Run fires reminders until ctx is done: every due one, then sleeps until
// the next one is due, the poll interval passes, or Wake is called,
// whichever comes first.
func (s *Scheduler) Run(ctx context.Context) error {
	s.init()
	again := false // the last wait was skipped for a reminder already due
	for {
		wait := min(s.Poll, errorRetry) // after a failure
		n, err := s.RunOnce(ctx)
		s.Signals.Pass.Signal(n)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.Logger.Error("fire reminders", "err", err)
		} else {
			if n > 0 {
				s.Logger.Info("reminders fired", "count", n)
			}
			var due bool
			wait, due = s.untilNext(ctx, s.Poll)
			// A reminder that came due between the two queries fires at
			// once; one still due right after (which the store will not
			// fire) waits a poll rather than make the loop spin.
			if due && !again {
				wait = 0
			}
			again = due && !again
		}
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-s.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// errorRetry bounds the wait after a failed query.
const errorRetry = time.Second

// untilNext returns how long to sleep: until the next reminder, at most
// max (at most errorRetry after a failed query), and whether the next
// reminder is already due.
func (s *Scheduler) untilNext(ctx context.Context, max time.Duration) (time.Duration, bool) {
	next, err := s.Store.NextReminder(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.Logger.Error("next reminder", "err", err)
		}
		return min(max, errorRetry), false
	}
	if next.IsZero() {
		return max, false
	}
	d := next.Sub(s.Clock.Now())
	s.Logger.Debug("reminders: next", "next", next, "in", d)
	if d <= 0 {
		return max, true
	}
	return min(d, max), false
}

// Changes reports committed changes of the world to whoever must react in
// this process: the reminder scheduler (a remind_at was set) and the
// calendar sync (a calendar event was created, changed or deleted).
type Changes struct {
	// Reminder is called after a transaction that wrote a task or
	// calendar event with a remind_at.
	Reminder func()
	// Calendar is called after a transaction that created, updated or
	// deleted calendar events of the account userID; deleted holds the
	// deleted events as they were.
	Calendar func(userID string, deleted []*ams.CalendarEvent)
}

// Watch returns a store that is s in every way but that, after each
// committed transaction (Update) and each direct write of a task or a
// calendar event, tells c what changed. ams serve (package app) hands
// this one store to every service (the world's, messaging, webhooks, the
// API and the pages), so that a change wakes the reminder and calendar
// workers whichever handler made it; the sync and the scheduler use the
// plain store, so that their own writes do not call them back.
func Watch(s ams.Store, c Changes) ams.Store { return &watched{Store: s, c: c} }

type watched struct {
	ams.Store
	c Changes
}

func (w *watched) Update(ctx context.Context, fn func(tx ams.Tx) error) error {
	var wt *watchTx
	err := w.Store.Update(ctx, func(tx ams.Tx) error {
		wt = &watchTx{Tx: tx} // a retried transaction starts afresh
		return fn(wt)
	})
	if err != nil || wt == nil {
		return err
	}
	if wt.reminder && w.c.Reminder != nil {
		w.c.Reminder()
	}
	if wt.calendarUser != "" && w.c.Calendar != nil {
		w.c.Calendar(wt.calendarUser, wt.deleted)
	}
	return nil
}

// Unwrap returns the plain store that is watched.
func (w *watched) Unwrap() ams.Store { return w.Store }

// The writes the workers react to, made on the store itself rather than
// in a transaction, run in one of their own so that they are seen.

func (w *watched) CreateTask(ctx context.Context, t *ams.Task) error {
	return w.Update(ctx, func(tx ams.Tx) error { return tx.CreateTask(ctx, t) })
}

func (w *watched) UpdateTask(ctx context.Context, t *ams.Task) error {
	return w.Update(ctx, func(tx ams.Tx) error { return tx.UpdateTask(ctx, t) })
}

func (w *watched) CreateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	return w.Update(ctx, func(tx ams.Tx) error { return tx.CreateCalendarEvent(ctx, e) })
}

func (w *watched) UpdateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	return w.Update(ctx, func(tx ams.Tx) error { return tx.UpdateCalendarEvent(ctx, e) })
}

func (w *watched) DeleteCalendarEvent(ctx context.Context, userID, id, by string, at time.Time) error {
	return w.Update(ctx, func(tx ams.Tx) error { return tx.DeleteCalendarEvent(ctx, userID, id, by, at) })
}

func (w *watched) RestoreCalendarEvent(ctx context.Context, userID, id string, at time.Time) (*ams.CalendarEvent, error) {
	var out *ams.CalendarEvent
	err := w.Update(ctx, func(tx ams.Tx) error {
		var err error
		out, err = tx.RestoreCalendarEvent(ctx, userID, id, at)
		return err
	})
	return out, err
}

// watchTx notes what a transaction writes.
type watchTx struct {
	ams.Tx
	reminder     bool
	calendarUser string
	deleted      []*ams.CalendarEvent
}

func (t *watchTx) CreateTask(ctx context.Context, task *ams.Task) error {
	t.reminder = t.reminder || task.RemindAt != nil
	return t.Tx.CreateTask(ctx, task)
}

func (t *watchTx) UpdateTask(ctx context.Context, task *ams.Task) error {
	t.reminder = t.reminder || task.RemindAt != nil
	return t.Tx.UpdateTask(ctx, task)
}

func (t *watchTx) CreateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	t.reminder = t.reminder || e.RemindAt != nil
	t.calendarUser = e.UserID
	return t.Tx.CreateCalendarEvent(ctx, e)
}

func (t *watchTx) UpdateCalendarEvent(ctx context.Context, e *ams.CalendarEvent) error {
	t.reminder = t.reminder || e.RemindAt != nil
	t.calendarUser = e.UserID
	return t.Tx.UpdateCalendarEvent(ctx, e)
}

func (t *watchTx) DeleteCalendarEvent(ctx context.Context, userID, id, by string, at time.Time) error {
	e, err := t.Tx.FindCalendarEvent(ctx, userID, id)
	if err != nil {
		return err
	}
	if err := t.Tx.DeleteCalendarEvent(ctx, userID, id, by, at); err != nil {
		return err
	}
	t.calendarUser = userID
	t.deleted = append(t.deleted, e)
	return nil
}

// RestoreCalendarEvent tells the calendar worker, whose sync writes the
// event back to its calendar, and the reminder worker.
func (t *watchTx) RestoreCalendarEvent(ctx context.Context, userID, id string, at time.Time) (*ams.CalendarEvent, error) {
	e, err := t.Tx.RestoreCalendarEvent(ctx, userID, id, at)
	if err != nil {
		return nil, err
	}
	t.reminder = t.reminder || e.RemindAt != nil
	t.calendarUser = userID
	return e, nil
}
