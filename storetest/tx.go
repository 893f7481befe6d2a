package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// drainJobsReady empties the store's job signal.
func drainJobsReady(s ams.Store) {
	// A store whose listener for other processes wakes the workers once
	// it listens (PostgreSQL): that wake-up comes first.
	if l, ok := s.(interface{ Listening() <-chan struct{} }); ok {
		select {
		case <-l.Listening():
		case <-time.After(time.Minute):
		}
	}
	select {
	case <-s.JobsReady():
	default:
	}
}

// jobsReady reports whether the store signalled queued jobs.
func jobsReady(s ams.Store) bool {
	select {
	case <-s.JobsReady():
		return true
	default:
		return false
	}
}

// testTxSameInterfaces checks that a transaction exposes the store's own
// per-entity interfaces, multi-statement writes included: a webhook
// created in it (with its subscriptions), read back and listed within
// it, a conversation turn saved in it with its events fanned out to that
// webhook; all of it gone when fn fails, all of it there (and the worker
// woken once) when it commits.
func testTxSameInterfaces(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "tx@example.com")
	a := mustAssistant(t, s, u, "tx")
	run := func(fail bool) (*ams.Webhook, *ams.Exchange, error) {
		w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: u.ID, URL: "https://example.com/tx",
			Events: []string{ams.EventMessageCreated, ams.EventMessageUpdated}, Active: true, Status: ams.WebhookActive, Secret: "s", CreatedAt: t0, UpdatedAt: t0}
		x := exchange(u, a, ams.NewID(ams.PrefixConversation), true, "in a tx", t0)
		err := s.Update(ctx, func(tx ams.Tx) error {
			if err := tx.CreateWebhook(ctx, w); err != nil {
				return err
			}
			got, err := tx.FindWebhook(ctx, u.ID, w.ID)
			if err != nil || got.URL != w.URL || len(got.Events) != 2 || got.Secret != "s" {
				return errors.Join(errors.New("the transaction does not read its own webhook"), err)
			}
			page, err := tx.ListWebhooks(ctx, u.ID, ams.ListParams{Limit: 10})
			if err != nil || len(page.Data) == 0 || page.Data[0].ID != w.ID {
				return errors.Join(errors.New("the transaction does not list its own webhook"), err)
			}
			if err := tx.SaveExchange(ctx, x); err != nil {
				return err
			}
			// An ECONFLICT answer leaves the transaction usable.
			off := false
			if _, err := tx.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Active: &off}, t0); err != nil {
				return err
			}
			if err := tx.EnqueueDelivery(ctx, u.ID, w.ID, x.Events[0].ID, t0); ams.ErrorKindOf(err) != ams.ECONFLICT {
				return errors.Join(errors.New("redelivery to an inactive webhook is not ECONFLICT"), err)
			}
			on := true
			if _, err := tx.UpdateWebhook(ctx, u.ID, w.ID, ams.WebhookUpdate{Active: &on}, t0); err != nil {
				return err
			}
			if err := tx.Emit(ctx, ams.MessageEvent(ams.EventMessageUpdated, x.Inbound, t0)); err != nil {
				return err
			}
			if fail {
				return errBoom
			}
			return nil
		})
		return w, x, err
	}

	drainJobsReady(s)
	w, x, err := run(true)
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	if jobsReady(s) {
		t.Error("a rolled-back transaction woke the delivery worker")
	}
	if _, err := s.FindWebhook(ctx, u.ID, w.ID); !ams.IsNotFound(err) {
		t.Errorf("webhook of a failed transaction: %v", err)
	}
	if _, err := s.FindConversation(ctx, u.ID, x.ConversationID); !ams.IsNotFound(err) {
		t.Errorf("conversation of a failed transaction: %v", err)
	}
	if _, err := s.FindEvent(ctx, u.ID, x.Events[0].ID); !ams.IsNotFound(err) {
		t.Errorf("event of a failed transaction: %v", err)
	}
	if jobs, err := s.ClaimJobs(ctx, t0.Add(time.Second), ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100}); err != nil || len(jobs) != 0 {
		t.Errorf("a failed transaction left %d jobs (%v)", len(jobs), err)
	}

	w, x, err = run(false)
	if err != nil {
		t.Fatal(err)
	}
	if !jobsReady(s) {
		t.Error("a committed transaction that queued jobs did not wake the delivery worker")
	}
	if got, err := s.FindWebhook(ctx, u.ID, w.ID); err != nil || !got.Active || got.Events[0] != ams.EventMessageCreated {
		t.Errorf("committed webhook: %+v, %v", got, err)
	}
	if c, err := s.FindConversation(ctx, u.ID, x.ConversationID); err != nil || c.MessageCount != 2 {
		t.Errorf("committed conversation: %+v, %v", c, err)
	}
	// Two message.created (fanned out before the webhook was turned off,
	// whose jobs the deactivation canceled) and one message.updated after
	// it was turned on again: one job is due.
	jobs, err := s.ClaimJobs(ctx, t0.Add(time.Second), ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Event.Type != ams.EventMessageUpdated || jobs[0].WebhookID != w.ID || jobs[0].Secret != "s" {
		t.Fatalf("jobs after the transaction: %d, want the message.updated one", len(jobs))
	}
}

// testEmitOutsideTx checks Store.Emit on its own: the events are stored,
// fanned out, and the worker is woken.
func testEmitOutsideTx(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "emit@example.com")
	a := mustAssistant(t, s, u, "emit")
	w := mustWebhook(t, s, u, ams.EventTaskCreated)
	tk := newTask(u, a, "emitted", nil)
	drainJobsReady(s)
	e := ams.TaskEvent(ams.EventTaskCreated, tk, t0)
	if err := s.Emit(ctx, e); err != nil {
		t.Fatal(err)
	}
	if !jobsReady(s) {
		t.Error("Emit queued a job but did not wake the worker")
	}
	if got, err := s.FindEvent(ctx, u.ID, e.ID); err != nil || got.Type != ams.EventTaskCreated {
		t.Fatalf("emitted event: %+v, %v", got, err)
	}
	jobs, err := s.ClaimJobs(ctx, t0.Add(time.Second), ams.Claim{Lease: time.Minute, Limit: 10, PerWebhook: 10})
	if err != nil || len(jobs) != 1 || jobs[0].WebhookID != w.ID || jobs[0].Event.ID != e.ID {
		t.Fatalf("jobs of the emitted event: %d, %v", len(jobs), err)
	}
}
