package caldav_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/caldav"
)

// Issue 26, L9: a CalDAV server that took the PUTs and then lists
// nothing made the next sync delete every event of the account. A sync
// holds such a mass deletion until a later listing confirms it, and what
// it deletes stays restorable.
func TestEmptyListingDeletesNothing(t *testing.T) {
	onEngines(t, func(t *testing.T, f *fixture) {
		srv := newMemServer(t)
		in := f.connect(srv.url(), "", "")
		for i := range 5 {
			f.createEvent(fmt.Sprintf(`{"title":"E%d","starts_at":"2026-11-2%dT09:00:00Z"}`, i, i+2))
		}
		if got := f.sync(in); got.Status != ams.IntegrationConnected || len(srv.paths()) != 5 {
			t.Fatalf("first sync: %+v, %d objects on the server", got, len(srv.paths()))
		}

		// The server lists nothing (its objects are still there).
		srv.listNothing.Store(true)
		got := f.sync(in)
		if n := len(f.events()); n != 5 {
			t.Fatalf("one empty listing left %d of 5 events", n)
		}
		if ev := f.emitted(ams.EventEventDeleted); len(ev) != 0 {
			t.Fatalf("one empty listing emitted %v", ev)
		}
		if got.Status != ams.IntegrationConnected || got.LastError == nil || !strings.Contains(*got.LastError, "no longer lists 5") {
			t.Fatalf("after the empty listing: %+v", got)
		}
		// At once again: not a confirmation (the same instant).
		f.sync(in)
		if n := len(f.events()); n != 5 {
			t.Fatalf("a second listing at once left %d of 5 events", n)
		}

		// The listing comes back: nothing is deleted, the note goes.
		f.clock.Add(2 * time.Minute)
		srv.listNothing.Store(false)
		if got := f.sync(in); got.LastError != nil || got.Status != ams.IntegrationConnected {
			t.Fatalf("after the listing came back: %+v", got)
		}
		if n := len(f.events()); n != 5 || len(f.emitted(ams.EventEventDeleted)) != 0 {
			t.Fatalf("after the listing came back: %d events, %v", n, f.emitted(ams.EventEventDeleted))
		}
		if f.integration(in.ID).PendingDeletion != "" {
			t.Fatal("a mass deletion still pending after a full listing")
		}
	})
}

// A mass deletion that a later listing (another process, a minute on)
// confirms is carried out, and every event it deleted can be restored:
// the next sync writes it back to the server.
func TestConfirmedMassDeletionIsRestorable(t *testing.T) {
	onEngines(t, func(t *testing.T, f *fixture) {
		srv := newMemServer(t)
		in := f.connect(srv.url(), "", "")
		for i := range 5 {
			f.createEvent(fmt.Sprintf(`{"title":"E%d","starts_at":"2026-11-2%dT09:00:00Z"}`, i, i+2))
		}
		f.sync(in)
		srv.wipe() // the calendar is lost for good
		f.sync(in)
		if n := len(f.events()); n != 5 {
			t.Fatalf("first listing of the lost calendar left %d of 5 events", n)
		}
		// A minute later, another process: the same events are gone.
		f.clock.Add(caldav.DefaultConfirmDelay)
		f.worker = f.newWorker()
		got := f.sync(in)
		if n := len(f.events()); n != 0 {
			t.Fatalf("a confirmed deletion left %d events", n)
		}
		if ev := f.emittedN(5, ams.EventEventDeleted); len(ev) != 5 {
			t.Fatalf("event.deleted: %v", ev)
		}
		if got.LastError != nil || got.Status != ams.IntegrationConnected {
			t.Fatalf("after the confirmed deletion: %+v", got)
		}
		del := f.lastEvent(ams.EventEventDeleted)
		if del["deleted_by"] != ams.DeletedBySync || del["deleted_at"] == nil {
			t.Fatalf("event.deleted data: %v", del)
		}
		gone := f.deleted()
		if len(gone) != 5 || gone["E2"] == nil || gone["E2"].DeletedBy != ams.DeletedBySync {
			t.Fatalf("deleted events: %v", gone)
		}

		// Restored: live again, with event.restored, and back on the
		// server after the next sync, under its UID.
		e2, err := f.service.RestoreEvent(context.Background(), f.user.ID, gone["E2"].ID)
		if err != nil || e2.DeletedAt != nil || e2.Title != "E2" {
			t.Fatalf("restore: %+v, %v", e2, err)
		}
		if ev := f.emittedN(1, ams.EventEventRestored); strings.Join(ev, "|") != "event.restored E2" {
			t.Fatalf("event.restored: %v", ev)
		}
		f.sync(in)
		if p := srv.paths(); len(p) != 1 || p[0] != calendarPath+e2.ID+".ics" {
			t.Fatalf("objects on the server after the restore: %v", p)
		}
		if e := f.events()["E2"]; e == nil || len(f.events()) != 1 {
			t.Fatalf("events after the restore's sync: %v", f.events())
		}
		// And in step: the next sync changes nothing.
		before := len(f.emittedN(10, ams.EventEventCreated, ams.EventEventUpdated, ams.EventEventDeleted))
		f.sync(in)
		if n := len(f.emitted(ams.EventEventCreated, ams.EventEventUpdated, ams.EventEventDeleted)); n != before {
			t.Fatalf("the restored event moved again: %v", f.emitted(ams.EventEventCreated, ams.EventEventUpdated, ams.EventEventDeleted))
		}
	})
}

// A small deletion on the server (one of five events) is not held: it is
// deleted here at the next sync, restorable.
func TestSmallDeletionIsImmediate(t *testing.T) {
	srv := newMemServer(t)
	f := newFixture(t)
	in := f.connect(srv.url(), "", "")
	var first *ams.CalendarEvent
	for i := range 5 {
		e := f.createEvent(fmt.Sprintf(`{"title":"E%d","starts_at":"2026-11-2%dT09:00:00Z"}`, i, i+2))
		if first == nil {
			first = e
		}
	}
	f.sync(in)
	srv.mu.Lock()
	delete(srv.objs, calendarPath+first.ID+".ics")
	srv.mu.Unlock()
	if got := f.sync(in); got.LastError != nil {
		t.Fatalf("after a small deletion: %s", *got.LastError)
	}
	if n := len(f.events()); n != 4 || f.deleted()["E0"] == nil {
		t.Fatalf("%d events left, deleted %v", n, f.deleted())
	}
}

func TestMassDeletion(t *testing.T) {
	for _, c := range []struct {
		gone, synced int
		want         bool
	}{
		{0, 0, false}, {1, 1, false}, {2, 2, true}, {5, 5, true},
		{3, 5, false}, {4, 5, true}, {3, 100, false}, {10, 100, false}, {11, 100, true},
		{4, 30, true}, {3, 30, false}, {100, 1000, false}, {101, 1000, true},
	} {
		if got := caldav.MassDeletion(c.gone, c.synced); got != c.want {
			t.Errorf("MassDeletion(%d, %d) = %v, want %v", c.gone, c.synced, got, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	const base, max = 5 * time.Minute, time.Hour
	for _, c := range []struct {
		failures int
		want     time.Duration
	}{
		{-1, 0}, {0, 0}, {1, 5 * time.Minute}, {2, 10 * time.Minute}, {3, 20 * time.Minute},
		{4, 40 * time.Minute}, {5, time.Hour}, {6, time.Hour}, {1000, time.Hour},
	} {
		if got := caldav.Backoff(c.failures, base, max); got != c.want {
			t.Errorf("Backoff(%d) = %v, want %v", c.failures, got, c.want)
		}
	}
	if got := caldav.Backoff(3, 0, max); got != 0 {
		t.Errorf("Backoff with no base = %v", got)
	}
}

// Issue 26, point 3: an integration whose server keeps failing is synced
// less and less often (the back-off, kept in the store, so that a new
// process honours it), shows status error with one integration.error,
// and comes back to connected, with integration.connected, at its next
// success.
func TestFailingIntegrationBacksOff(t *testing.T) {
	onEngines(t, func(t *testing.T, f *fixture) {
		srv := newMemServer(t)
		in := f.connect(srv.url(), "", "")
		f.worker.Interval, f.worker.RetryMax = 5*time.Minute, 20*time.Minute
		f.sync(in)
		srv.fail.Store(http.StatusServiceUnavailable)
		// runAt moves the clock by d and runs what is due; it returns how
		// many listings the server got.
		runAt := func(w *caldav.Worker, d time.Duration) int32 {
			t.Helper()
			f.clock.Add(d)
			before := srv.listings.Load()
			w.SyncDue(context.Background())
			return srv.listings.Load() - before
		}
		if n := runAt(f.worker, 5*time.Minute); n != 1 {
			t.Fatalf("the due run made %d listings", n)
		}
		got := f.integration(in.ID)
		if got.Status != ams.IntegrationError || got.LastError == nil || *got.LastError != "The CalDAV server answered HTTP 503." || got.SyncFailures != 1 {
			t.Fatalf("after a failed run: %+v", got)
		}
		// Back-off: 5 min after the first failure, then 10, then 20, and
		// 20 at most; nothing runs before.
		for i, wait := range []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 20 * time.Minute} {
			if n := runAt(f.worker, wait-time.Second); n != 0 {
				t.Fatalf("failure %d: a run %v early", i+1, time.Second)
			}
			// A new process honours the back-off too.
			f.worker = f.newWorker()
			f.worker.Interval, f.worker.RetryMax = 5*time.Minute, 20*time.Minute
			if n := runAt(f.worker, 0); n != 0 {
				t.Fatalf("failure %d: a new process ran at once", i+1)
			}
			if n := runAt(f.worker, time.Second); n != 1 {
				t.Fatalf("failure %d: %d runs when due", i+1, n)
			}
		}
		if got := f.integration(in.ID); got.SyncFailures != 5 || got.Status != ams.IntegrationError {
			t.Fatalf("after 5 failures: %+v", got)
		}
		if ev := f.emittedN(2, ams.EventIntegrationError, ams.EventIntegrationConnected); strings.Join(ev, "|") != "integration.connected connected|integration.error error" {
			t.Fatalf("5 failures emitted %v, want one integration.error", ev)
		}

		// The server is back: the next due run succeeds.
		srv.fail.Store(0)
		if n := runAt(f.worker, 20*time.Minute); n != 1 {
			t.Fatalf("%d runs after recovery", n)
		}
		got = f.integration(in.ID)
		if got.Status != ams.IntegrationConnected || got.LastError != nil || got.SyncFailures != 0 || got.NextSyncAt != nil {
			t.Fatalf("after recovery: %+v", got)
		}
		if ev := f.emittedN(3, ams.EventIntegrationError, ams.EventIntegrationConnected); len(ev) != 3 || ev[2] != "integration.connected connected" {
			t.Fatalf("recovery emitted %v", ev)
		}
		// Healthy again: synced every Interval.
		if n := runAt(f.worker, 5*time.Minute); n != 1 {
			t.Fatalf("%d runs an interval after recovery", n)
		}
	})
}

// diedStore is the store of a process that dies once it has claimed a
// run: every transaction after the first fails, so nothing of the run is
// recorded.
type diedStore struct {
	ams.Store
	updates int
}

var errProcessDied = errors.New("the process died")

func (d *diedStore) Update(ctx context.Context, fn func(tx ams.Tx) error) error {
	d.updates++
	if d.updates > 1 {
		return errProcessDied
	}
	return d.Store.Update(ctx, fn)
}

// A process that dies during a sync (an OOM kill on a hostile server's
// answer) and restarts does not run that sync again at once: the claim
// counted the run failed. The next claim, after the back-off, finds the
// run never finished: status error, one integration.error.
func TestDiedSyncIsNotRerunAtOnce(t *testing.T) {
	onEngines(t, func(t *testing.T, f *fixture) {
		srv := newMemServer(t)
		in := f.connect(srv.url(), "", "")
		f.sync(in)
		srv.fail.Store(http.StatusInternalServerError)

		f.clock.Add(5 * time.Minute)
		dying := f.newWorker()
		dying.Store = &diedStore{Store: f.db}
		dying.SyncDue(context.Background())
		if srv.listings.Load() != 2 {
			t.Fatalf("%d listings, want the first sync's and the dying run's", srv.listings.Load())
		}
		if got := f.integration(in.ID); got.Status != ams.IntegrationConnected || got.SyncFailures != 1 {
			t.Fatalf("after the run that died: %+v", got)
		}

		// Restarted at once: nothing runs.
		restarted := f.newWorker()
		restarted.RunTimeout = time.Minute
		restarted.SyncDue(context.Background())
		f.clock.Add(4 * time.Minute)
		restarted.SyncDue(context.Background())
		if n := srv.listings.Load(); n != 2 {
			t.Fatalf("the restarted process ran the sync that died (%d listings)", n)
		}
		// After the back-off it runs, first recording the run that died.
		f.clock.Add(time.Minute)
		restarted.SyncDue(context.Background())
		if n := srv.listings.Load(); n != 3 {
			t.Fatalf("%d listings after the back-off", n)
		}
		got := f.integration(in.ID)
		if got.Status != ams.IntegrationError || got.SyncFailures != 2 || got.NextSyncAt == nil || !got.NextSyncAt.Equal(f.clock.Now().Add(10*time.Minute)) {
			t.Fatalf("after the run that followed: %+v", got)
		}
		if ev := f.emittedN(1, ams.EventIntegrationError); len(ev) != 1 {
			t.Fatalf("integration.error: %v", ev)
		}
		if d := f.lastEvent(ams.EventIntegrationError); !strings.Contains(fmt.Sprint(d["last_error"]), "did not finish") {
			t.Fatalf("integration.error data: %v", d)
		}
	})
}

// A panic in one integration's sync is that sync's failure (status
// error, integration.error), not the end of the process; the other
// integrations are synced.
func TestSyncPanicIsAFailure(t *testing.T) {
	srv, other := newMemServer(t), newMemServer(t)
	f := newFixture(t)
	bad := f.connect(srv.url(), "", "")
	good := f.connect(other.url(), "", "")
	f.createEvent(`{"title":"Standup","starts_at":"2026-11-22T09:00:00Z"}`)
	w := f.newWorker()
	w.Client = &http.Client{Transport: panicTransport{}}
	got, err := w.SyncNow(context.Background(), bad)
	if err != nil || got.Status != ams.IntegrationError || got.LastError == nil {
		t.Fatalf("SyncNow of a panicking sync: %+v, %v", got, err)
	}
	// In the background too, beside a healthy integration.
	f.clock.Add(time.Hour)
	mixed := f.newWorker()
	mixed.Client = &http.Client{Transport: hostPanics{host: strings.TrimPrefix(srv.URL, "http://"), next: f.worker.Client.Transport}}
	mixed.SyncDue(context.Background())
	if got := f.integration(good.ID); got.Status != ams.IntegrationConnected || len(other.paths()) != 1 {
		t.Fatalf("the healthy integration beside a panicking one: %+v, %d objects", got, len(other.paths()))
	}
	if got := f.integration(bad.ID); got.Status != ams.IntegrationError || got.SyncFailures != 2 {
		t.Fatalf("the panicking integration: %+v", got)
	}
	if ev := f.emitted(ams.EventIntegrationError); len(ev) != 1 {
		t.Fatalf("integration.error: %v", ev)
	}
}

// panicTransport panics on every request, as a bug in the sync would.
type panicTransport struct{}

func (panicTransport) RoundTrip(*http.Request) (*http.Response, error) { panic("boom") }

// hostPanics panics for the requests to host and passes the others on.
type hostPanics struct {
	host string
	next http.RoundTripper
}

func (h hostPanics) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == h.host {
		panic("boom")
	}
	return h.next.RoundTrip(req)
}

// The objects of a confirmed mass deletion are listed again (the server
// came back from its move): the events come back, restored, with
// event.restored, and nothing is deleted on the server or imported twice.
func TestListedAgainIsRestored(t *testing.T) {
	onEngines(t, func(t *testing.T, f *fixture) {
		srv := newMemServer(t)
		in := f.connect(srv.url(), "", "")
		for i := range 4 {
			f.createEvent(fmt.Sprintf(`{"title":"E%d","starts_at":"2026-11-2%dT09:00:00Z"}`, i, i+2))
		}
		srv.put(t, "remote.ics", strings.NewReplacer("UID:lunch-1@example.com", "UID:remote-1", "SUMMARY:Lunch with Bob", "SUMMARY:Remote").Replace(remoteEvent))
		f.sync(in)
		if n := len(f.events()); n != 5 || len(srv.paths()) != 5 {
			t.Fatalf("%d events, %d objects", n, len(srv.paths()))
		}
		srv.listNothing.Store(true)
		f.sync(in)
		f.clock.Add(caldav.DefaultConfirmDelay)
		f.sync(in)
		if n := len(f.events()); n != 0 || len(f.emittedN(5, ams.EventEventDeleted)) != 5 {
			t.Fatalf("after the confirmed deletion: %d events", n)
		}

		srv.listNothing.Store(false)
		f.clock.Add(time.Hour)
		if got := f.sync(in); got.Status != ams.IntegrationConnected || got.LastError != nil {
			t.Fatalf("after the listing came back: %+v", got)
		}
		if ev := f.events(); len(ev) != 5 || ev["Remote"] == nil || ev["E3"] == nil {
			t.Fatalf("events after the listing came back: %v", ev)
		}
		if len(f.deleted()) != 0 {
			t.Fatalf("still deleted: %v", f.deleted())
		}
		if p := srv.paths(); len(p) != 5 {
			t.Fatalf("objects on the server: %v", p)
		}
		if n := len(f.emittedN(5, ams.EventEventRestored)); n != 5 {
			t.Fatalf("%d event.restored", n)
		}
		if n := len(f.emitted(ams.EventEventCreated)); n != 5 {
			t.Fatalf("%d event.created: imported twice", n)
		}
		// In step: the next sync changes nothing.
		before := len(f.emitted(ams.EventEventCreated, ams.EventEventUpdated, ams.EventEventDeleted, ams.EventEventRestored))
		f.sync(in)
		if n := len(f.emitted(ams.EventEventCreated, ams.EventEventUpdated, ams.EventEventDeleted, ams.EventEventRestored)); n != before {
			t.Fatal("the restored events moved again")
		}
	})
}

// A run stopped by a graceful shutdown is not a failure: its claim's
// count and back-off are given back, and the next process syncs at once.
func TestStoppedRunIsNotAFailure(t *testing.T) {
	srv := newMemServer(t)
	f := newFixture(t)
	in := f.connect(srv.url(), "", "")
	f.sync(in)
	srv.hang.Store(true)
	f.clock.Add(5 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.worker.SyncDue(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done }) // before the server's Close
	<-srv.hung                             // the run is listing
	if got := f.integration(in.ID); got.SyncFailures != 1 {
		t.Fatalf("claimed run: %+v", got)
	}
	cancel()
	<-done
	got := f.integration(in.ID)
	if got.SyncFailures != 0 || got.NextSyncAt != nil || got.Status != ams.IntegrationConnected {
		t.Fatalf("after a stopped run: %+v", got)
	}
	if ev := f.emitted(ams.EventIntegrationError); len(ev) != 0 {
		t.Fatalf("a stopped run emitted %v", ev)
	}
}

// A change made here while a run is in flight (in another process) is
// still synced at once; once failures are recorded, changes wait for the
// back-off too.
func TestNotifiedRunAndBackoff(t *testing.T) {
	srv := newMemServer(t)
	f := newFixture(t)
	in := f.connect(srv.url(), "", "")
	f.sync(in)
	// Another process claimed a run, in flight.
	other := f.newWorker()
	srv.hang.Store(true)
	f.clock.Add(5 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { other.SyncDue(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done }) // before the server's Close
	<-srv.hung
	srv.hang.Store(false)
	e := f.createEvent(`{"title":"Now","starts_at":"2026-11-22T09:00:00Z"}`)
	if _, err := f.worker.SyncNotified(context.Background(), f.user.ID); err != nil {
		t.Fatal(err)
	}
	if p := srv.paths(); len(p) != 1 || p[0] != calendarPath+e.ID+".ics" {
		t.Fatalf("objects after the change: %v", p)
	}
	cancel()
	<-done

	// Failing: a change waits for the back-off.
	srv.fail.Store(http.StatusServiceUnavailable)
	f.clock.Add(5 * time.Minute)
	f.worker.SyncDue(context.Background())
	if got := f.integration(in.ID); got.Status != ams.IntegrationError {
		t.Fatalf("after a failure: %+v", got)
	}
	before := srv.listings.Load()
	f.createEvent(`{"title":"Later","starts_at":"2026-11-22T10:00:00Z"}`)
	if _, err := f.worker.SyncNotified(context.Background(), f.user.ID); err != nil {
		t.Fatal(err)
	}
	if n := srv.listings.Load() - before; n != 0 {
		t.Fatalf("a change ran %d syncs during the back-off", n)
	}
}
