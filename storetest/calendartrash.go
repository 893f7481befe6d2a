package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// testCalendarDeletion: a deleted calendar event is hidden from every
// read but the list of deleted events, keeps who deleted it and when,
// frees its external UID for a new live event, does not remind, and can
// be restored (with its remote path and ETag cleared) until Purge removes
// it after the events' retention. (Issue 26, L9.)
func testCalendarDeletion(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u, other := mustUser(t, s, "trash@example.com"), mustUser(t, s, "trash2@example.com")
	a := mustAssistant(t, s, u, "t")
	in := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), UserID: u.ID, Provider: "caldav", Status: "connected",
		Config: map[string]any{}, ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0}
	plain := newCalendarEvent(u, a, "Dentist", t0.Add(48*time.Hour), time.Hour)
	plain.RemindAt = tp(t0.Add(2 * time.Hour))
	synced := newCalendarEvent(u, nil, "Standup", t0.Add(24*time.Hour), 15*time.Minute)
	synced.IntegrationID, synced.ExternalUID, synced.ExternalPath, synced.ExternalETag = in.ID, "uid-1@example.com", "/cal/uid-1.ics", "e1|h"
	kept := newCalendarEvent(u, a, "Kept", t0.Add(72*time.Hour), time.Hour)
	update(t, s, func(tx ams.Tx) error {
		if err := tx.CreateIntegration(ctx, in, nil); err != nil {
			return err
		}
		for _, e := range []*ams.CalendarEvent{plain, synced, kept} {
			if err := tx.CreateCalendarEvent(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	t1 := t0.Add(time.Hour)
	update(t, s, func(tx ams.Tx) error {
		if err := tx.DeleteCalendarEvent(ctx, u.ID, plain.ID, ams.DeletedByAPI, t1); err != nil {
			return err
		}
		if err := tx.DeleteCalendarEvent(ctx, u.ID, synced.ID, ams.DeletedBySync, t1); err != nil {
			return err
		}
		// Deleted once: a second deletion, an update and a lookup by UID
		// find nothing, and the transaction goes on.
		wantKind(t, tx.DeleteCalendarEvent(ctx, u.ID, plain.ID, ams.DeletedByAPI, t1), ams.ENOTFOUND)
		gone := *plain
		gone.Title = "changed"
		wantKind(t, tx.UpdateCalendarEvent(ctx, &gone), ams.ENOTFOUND)
		_, err := tx.FindCalendarEventByUID(ctx, u.ID, in.ID, "uid-1@example.com")
		wantKind(t, err, ams.ENOTFOUND)
		_, err = tx.FindCalendarEvent(ctx, u.ID, synced.ID)
		wantKind(t, err, ams.ENOTFOUND)
		return nil
	})
	for _, id := range []string{plain.ID, synced.ID} {
		if _, err := s.FindCalendarEvent(ctx, u.ID, id); !ams.IsNotFound(err) {
			t.Fatalf("a deleted event is found: %v", err)
		}
	}
	asc := ams.ListParams{Limit: 100, Order: ams.OrderAsc}
	pg, err := s.ListCalendarEvents(ctx, u.ID, ams.CalendarFilter{}, asc)
	wantIDs(t, ids(t, pg, err, eventID), kept.ID)
	pg, err = s.ListCalendarEvents(ctx, u.ID, ams.CalendarFilter{Deleted: true}, asc)
	wantIDs(t, ids(t, pg, err, eventID), plain.ID, synced.ID)
	if d := pg.Data[0]; d.DeletedAt == nil || !d.DeletedAt.Equal(t1) || d.DeletedBy != ams.DeletedByAPI || d.Title != "Dentist" {
		t.Fatalf("deleted event listed as %+v", d)
	}
	if d := pg.Data[1]; d.DeletedBy != ams.DeletedBySync || d.ExternalUID != "uid-1@example.com" {
		t.Fatalf("event deleted by a sync listed as %+v", d)
	}
	pg, err = s.ListCalendarEvents(ctx, u.ID, ams.CalendarFilter{Deleted: true, AssistantID: a.ID}, asc)
	wantIDs(t, ids(t, pg, err, eventID), plain.ID)
	pg, err = s.ListCalendarEvents(ctx, other.ID, ams.CalendarFilter{Deleted: true}, asc)
	wantIDs(t, ids(t, pg, err, eventID))

	// A sync's deletion is found by its UID (for the object listed
	// again); an API deletion is not.
	update(t, s, func(tx ams.Tx) error {
		got, err := tx.FindDeletedCalendarEventByUID(ctx, u.ID, in.ID, "uid-1@example.com")
		if err != nil || got.ID != synced.ID || got.DeletedBy != ams.DeletedBySync {
			t.Errorf("deleted by UID: %+v %v", got, err)
		}
		_, err = tx.FindDeletedCalendarEventByUID(ctx, other.ID, in.ID, "uid-1@example.com")
		wantKind(t, err, ams.ENOTFOUND)
		_, err = tx.FindDeletedCalendarEventByUID(ctx, u.ID, in.ID, "uid-2@example.com")
		wantKind(t, err, ams.ENOTFOUND)
		return nil
	})

	// A deleted event does not remind.
	if n, err := s.FireReminders(ctx, t0.Add(3*time.Hour), 10); err != nil || n != 0 {
		t.Fatalf("reminders of deleted events: %d %v", n, err)
	}
	if next, err := s.NextReminder(ctx); err != nil || !next.IsZero() {
		t.Fatalf("next reminder is a deleted event's: %v %v", next, err)
	}

	// The UID is free for a live event (the object came back on the
	// server); restoring the deleted one is then a conflict.
	back := newCalendarEvent(u, nil, "Standup again", t0.Add(24*time.Hour), 15*time.Minute)
	back.IntegrationID, back.ExternalUID, back.ExternalPath = in.ID, "uid-1@example.com", "/cal/uid-1.ics"
	update(t, s, func(tx ams.Tx) error { return tx.CreateCalendarEvent(ctx, back) })
	t2 := t0.Add(4 * time.Hour)
	_, err = s.RestoreCalendarEvent(ctx, u.ID, synced.ID, t2)
	wantKind(t, err, ams.ECONFLICT)
	wantCode(t, err, "calendar_event_uid_taken")

	// Restoring: the event is live again, as it was, updated at t2, with
	// its reminder (due meanwhile) taken as fired.
	got, err := s.RestoreCalendarEvent(ctx, u.ID, plain.ID, t2)
	if err != nil || got.DeletedAt != nil || got.DeletedBy != "" || got.Title != "Dentist" || !got.UpdatedAt.Equal(t2) ||
		!got.CreatedAt.Equal(t0) || got.RemindedAt == nil || !got.RemindedAt.Equal(t2) || got.AssistantID != a.ID {
		t.Fatalf("restored %+v, %v", got, err)
	}
	if found, err := s.FindCalendarEvent(ctx, u.ID, plain.ID); err != nil || found.DeletedAt != nil || !found.UpdatedAt.Equal(t2) {
		t.Fatalf("restored event found as %+v, %v", found, err)
	}
	if n, err := s.FireReminders(ctx, t2.Add(time.Minute), 10); err != nil || n != 0 {
		t.Fatalf("a restored event rang its past reminder: %d %v", n, err)
	}
	_, err = s.RestoreCalendarEvent(ctx, u.ID, plain.ID, t2)
	wantKind(t, err, ams.ECONFLICT)
	wantCode(t, err, "calendar_event_not_deleted")
	_, err = s.RestoreCalendarEvent(ctx, u.ID, ams.NewID(ams.PrefixCalendar), t2)
	wantKind(t, err, ams.ENOTFOUND)
	_, err = s.RestoreCalendarEvent(ctx, other.ID, synced.ID, t2)
	wantKind(t, err, ams.ENOTFOUND)

	// Once the twin is gone, the synced event comes back with its UID and
	// integration, without its object's path and ETag (the sync writes it
	// back).
	update(t, s, func(tx ams.Tx) error { return tx.DeleteCalendarEvent(ctx, u.ID, back.ID, ams.DeletedBySync, t2) })
	update(t, s, func(tx ams.Tx) error {
		_, err := tx.FindDeletedCalendarEventByUID(ctx, u.ID, in.ID, "uid-1@example.com")
		if err != nil {
			t.Errorf("deleted by UID, with a live twin: %v", err)
		}
		// An API deletion of the integration's event is not a sync's.
		api := newCalendarEvent(u, nil, "By hand", t0, time.Hour)
		api.IntegrationID, api.ExternalUID, api.ExternalPath = in.ID, "uid-3@example.com", "/cal/uid-3.ics"
		if err := tx.CreateCalendarEvent(ctx, api); err != nil {
			return err
		}
		if err := tx.DeleteCalendarEvent(ctx, u.ID, api.ID, ams.DeletedByAPI, t2); err != nil {
			return err
		}
		_, err = tx.FindDeletedCalendarEventByUID(ctx, u.ID, in.ID, "uid-3@example.com")
		wantKind(t, err, ams.ENOTFOUND)
		return nil
	})
	got, err = s.RestoreCalendarEvent(ctx, u.ID, synced.ID, t2)
	if err != nil || got.IntegrationID != in.ID || got.ExternalUID != "uid-1@example.com" || got.ExternalPath != "" || got.ExternalETag != "" {
		t.Fatalf("restored synced event %+v, %v", got, err)
	}
	if found, err := s.FindCalendarEventByUID(ctx, u.ID, in.ID, "uid-1@example.com"); err != nil || found.ID != synced.ID {
		t.Fatalf("restored synced event by UID: %+v, %v", found, err)
	}

	// Purge removes deleted events after the retention, not before, and
	// not live ones.
	update(t, s, func(tx ams.Tx) error {
		return tx.DeleteCalendarEvent(ctx, u.ID, kept.ID, ams.DeletedByAPI, t2.Add(time.Hour))
	})
	if _, err := s.Purge(ctx, t2.Add(ams.EventRetention+time.Minute)); err != nil {
		t.Fatal(err)
	}
	pg, err = s.ListCalendarEvents(ctx, u.ID, ams.CalendarFilter{Deleted: true}, asc)
	wantIDs(t, ids(t, pg, err, eventID), kept.ID) // back (deleted at t2) is purged
	if _, err := s.Purge(ctx, t2.Add(ams.EventRetention+2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	pg, err = s.ListCalendarEvents(ctx, u.ID, ams.CalendarFilter{Deleted: true}, asc)
	wantIDs(t, ids(t, pg, err, eventID))
	_, err = s.RestoreCalendarEvent(ctx, u.ID, kept.ID, t2.Add(ams.EventRetention+2*time.Hour))
	wantKind(t, err, ams.ENOTFOUND)
	pg, err = s.ListCalendarEvents(ctx, u.ID, ams.CalendarFilter{}, asc)
	wantIDs(t, ids(t, pg, err, eventID), plain.ID, synced.ID)
}

// testIntegrationSyncState: the sync state of an integration (failures,
// back-off, a pending mass deletion) is written by UpdateIntegration and
// read back by every read. (Issue 26, point 3.)
func testIntegrationSyncState(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "syncstate@example.com")
	in := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), UserID: u.ID, Provider: "caldav", Status: "connected",
		Config: map[string]any{}, ConnectedAt: t0, CreatedAt: t0, UpdatedAt: t0}
	update(t, s, func(tx ams.Tx) error { return tx.CreateIntegration(ctx, in, nil) })
	got, err := s.FindIntegration(ctx, u.ID, in.ID)
	if err != nil || got.SyncFailures != 0 || got.NextSyncAt != nil || got.PendingDeletion != "" {
		t.Fatalf("new integration's sync state: %+v %v", got, err)
	}
	next := t0.Add(10 * time.Minute)
	got.SyncFailures, got.NextSyncAt, got.PendingDeletion, got.Status = 3, &next, "123:5:abc", ams.IntegrationError
	update(t, s, func(tx ams.Tx) error { return tx.UpdateIntegration(ctx, got) })
	check := func(x *ams.Integration) {
		t.Helper()
		if x.SyncFailures != 3 || x.NextSyncAt == nil || !x.NextSyncAt.Equal(next) || x.PendingDeletion != "123:5:abc" || x.Status != ams.IntegrationError {
			t.Fatalf("sync state read back as %+v", x)
		}
	}
	found, err := s.FindIntegration(ctx, u.ID, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	check(found)
	active, err := s.ActiveIntegrations(ctx, "caldav")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range active {
		if x.ID == in.ID {
			check(x)
			n++
		}
	}
	if n != 1 {
		t.Fatalf("active integrations: %d of it", n)
	}
	found.SyncFailures, found.NextSyncAt, found.PendingDeletion = 0, nil, ""
	update(t, s, func(tx ams.Tx) error { return tx.UpdateIntegration(ctx, found) })
	if x, err := s.FindIntegration(ctx, u.ID, in.ID); err != nil || x.SyncFailures != 0 || x.NextSyncAt != nil || x.PendingDeletion != "" {
		t.Fatalf("reset sync state: %+v %v", x, err)
	}
}
