// Package caldav keeps an account's calendar events in step with a
// calendar collection on a CalDAV server (RFC 4791), both ways, and writes
// the iCalendar feed of an account's calendar.
//
// A sync run of one integration:
//
//  1. deletes on the server the objects of events deleted here since the
//     last run (told by world.Watch in this process);
//  2. lists the collection's objects with their ETags (PROPFIND, Depth 1)
//     and the account's events;
//  3. fetches (calendar-multiget) the objects that are new or whose ETag
//     changed, and creates or updates the events they hold, emitting
//     event.created and event.updated; an object whose event a sync
//     deleted is listed again: the event is restored (event.restored); an
//     object whose UID is the cev_ id of an event deleted here otherwise
//     is deleted on the server;
//  4. deletes here the events whose object is gone from the server
//     (restorable for the events' retention), unless that is a mass
//     deletion not yet confirmed by a later listing (see MassDeletion);
//  5. writes to the server the events that changed here (GET, change only
//     the properties ams holds, PUT with If-Match) and the events that
//     live only here (PUT with If-None-Match: *, UID = the cev_ id), or
//     that were restored here (PUT with If-None-Match: *, their UID).
//
// Each event of an integration keeps, in ExternalETag, the object's ETag
// and a hash of its fields as of the last run: a new ETag is a change on
// the server, a new hash a change here. When both changed, the server's
// version wins. Conditional requests (If-Match, If-None-Match) and the
// store's unique (integration, UID) index make two runs of one
// integration at once (two processes) harmless: the loser of each race
// skips the object, and the next run settles it.
package caldav

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams"
)

// Provider is the provider name of CalDAV integrations.
const Provider = "caldav"

// Config and secret keys of a CalDAV integration.
const (
	ConfigURL      = "url"      // the calendar collection's URL
	ConfigUsername = "username" // HTTP Basic user name; "" for none
	SecretPassword = "password"
)

// Syncer runs sync runs.
type Syncer struct {
	Store  ams.WorldStore
	Client *http.Client
	Clock  ams.Clock
	Logger *slog.Logger
	// ConfirmDelay is the least time between a listing that would delete
	// a mass of events and the later listing that confirms it
	// (DefaultConfirmDelay).
	ConfirmDelay time.Duration
}

// Result counts what a run did.
type Result struct {
	Created, Updated, DeletedHere int // events written here
	Pushed, DeletedThere          int // objects written on the server
	Refused                       int // events the server refused (see refusal)
	Held                          int // events gone from the server, kept until a later listing confirms it
	Restored                      int // events a sync deleted, restored because the server lists their objects again
}

// refusal is an event whose write the server refused: its PUT (or the GET
// before an update) was answered with an HTTP error that concerns that
// event only (see refused). The run skips it and goes on with the others;
// it is not marked in step, so each run tries it again until the server
// takes it or it is changed or deleted here.
type refusal struct {
	EventID string
	Code    int
}

// refused reports whether err, the answer to a request about one event,
// refuses that event only: any HTTP error but 401 and 407 (the
// credentials), 429 and 503 (the server asks to slow down) and 412 (a
// race, handled where it happens). Those, and failures to reach the
// server, fail the whole run as before. An object that cannot be encoded
// at all (errUnwritable, code 0) is that event's problem too.
func refused(err error) (int, bool) {
	if errors.Is(err, errUnwritable) {
		return 0, true // the object itself cannot be written: that event only
	}
	switch code := statusOf(err); code {
	case 0, http.StatusUnauthorized, http.StatusProxyAuthRequired, http.StatusTooManyRequests,
		http.StatusServiceUnavailable, http.StatusPreconditionFailed:
		return 0, false
	default:
		return code, code >= 400
	}
}

// deletion is an object to delete on the server: its event (EventID)
// was deleted here.
type deletion struct{ Path, ETag, EventID string }

// remoteError is a failure of the CalDAV server (or of reaching it): it
// sets the integration's status to error. Other errors (the store's) do
// not.
type remoteError struct{ err error }

func (e *remoteError) Error() string { return e.err.Error() }
func (e *remoteError) Unwrap() error { return e.err }

func remoteErr(err error) error {
	if err == nil {
		return nil
	}
	var re *remoteError
	if errors.As(err, &re) {
		return err
	}
	return &remoteError{err}
}

func (s *Syncer) now() time.Time { return s.Clock.Now() }

func (s *Syncer) connect(ctx context.Context, in *ams.Integration) (*remote, error) {
	secrets, err := s.Store.IntegrationSecrets(ctx, in.UserID, in.ID)
	if err != nil {
		return nil, err
	}
	u, _ := in.Config[ConfigURL].(string)
	user, _ := in.Config[ConfigUsername].(string)
	rc, err := newRemote(s.Client, u, user, secrets[SecretPassword])
	if err != nil {
		return nil, remoteErr(err)
	}
	return rc, nil
}

func (s *Syncer) confirmDelay() time.Duration {
	if s.ConfirmDelay > 0 {
		return s.ConfirmDelay
	}
	return DefaultConfirmDelay
}

// events returns all of the account's calendar events.
func (s *Syncer) events(ctx context.Context, userID string) ([]*ams.CalendarEvent, error) {
	var out []*ams.CalendarEvent
	p := ams.ListParams{Limit: 100, Order: ams.OrderAsc}
	for {
		page, err := s.Store.ListCalendarEvents(ctx, userID, ams.CalendarFilter{}, p)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Data...)
		if !page.HasMore || len(page.Data) == 0 {
			return out, nil
		}
		p.After = page.Data[len(page.Data)-1].ID
	}
}

// inactiveIntegrations returns which other integrations named by events
// are disconnected.
func (s *Syncer) inactiveIntegrations(ctx context.Context, in *ams.Integration, events []*ams.CalendarEvent) (map[string]bool, error) {
	out := map[string]bool{}
	seen := map[string]bool{in.ID: true}
	for _, e := range events {
		if e.IntegrationID == "" || seen[e.IntegrationID] {
			continue
		}
		seen[e.IntegrationID] = true
		other, err := s.Store.FindIntegration(ctx, in.UserID, e.IntegrationID)
		if err != nil {
			if ams.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		out[other.ID] = other.Status == ams.IntegrationDisconnected
	}
	return out, nil
}

// restoreListed restores the event of the integration that a sync
// deleted last under uid (its object was not listed, and now is), and
// emits event.restored; nil if there is none, or if a live event took
// the UID meanwhile. Events deleted through the API stay deleted (and
// their objects are deleted on the server, see deletedHere).
func (s *Syncer) restoreListed(ctx context.Context, in *ams.Integration, uid string) (*ams.CalendarEvent, error) {
	var out *ams.CalendarEvent
	err := s.Store.Update(ctx, func(tx ams.Tx) error {
		out = nil
		gone, err := tx.FindDeletedCalendarEventByUID(ctx, in.UserID, in.ID, uid)
		if ams.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		now := s.now()
		e, err := tx.RestoreCalendarEvent(ctx, in.UserID, gone.ID, now)
		if ams.ErrorKindOf(err) == ams.ECONFLICT {
			return nil
		} else if err != nil {
			return err
		}
		out = e
		return tx.Emit(ctx, ams.CalendarEventEvent(ams.EventEventRestored, e, now))
	})
	return out, err
}

// deletedHere reports whether uid is the id of an event of this account
// that no longer exists (gone: an object ams wrote, whose event was
// deleted), or of one that exists (ours: written by ams for another
// integration, or created since the listing).
func (s *Syncer) deletedHere(ctx context.Context, userID, uid string) (gone, ours bool, err error) {
	if !ams.HasPrefixID(uid, ams.PrefixCalendar) {
		return false, false, nil
	}
	_, err = s.Store.FindCalendarEvent(ctx, userID, uid)
	if ams.IsNotFound(err) {
		return true, false, nil
	}
	return false, err == nil, err
}

// create stores the event of a new object and emits event.created. A
// reminder already past is taken as fired: importing a calendar does not
// ring the alarms of its past.
func (s *Syncer) create(ctx context.Context, in *ams.Integration, uid string, o object, f fields) (bool, error) {
	created := false
	err := s.Store.Update(ctx, func(tx ams.Tx) error {
		created = false
		if _, err := tx.FindCalendarEventByUID(ctx, in.UserID, in.ID, uid); err == nil {
			return nil // created by a run in another process meanwhile
		} else if !ams.IsNotFound(err) {
			return err
		}
		now := s.now()
		e := &ams.CalendarEvent{ID: ams.NewID(ams.PrefixCalendar), Object: "calendar_event", UserID: in.UserID,
			IntegrationID: in.ID, ExternalUID: uid, ExternalPath: o.Path, ExternalETag: syncState{o.ETag, f.hash()}.String(),
			CreatedAt: now, UpdatedAt: now}
		f.apply(e)
		if e.RemindAt != nil && !e.RemindAt.After(now) {
			e.RemindedAt = &now
		}
		if err := tx.CreateCalendarEvent(ctx, e); err != nil {
			return err
		}
		created = true
		return tx.Emit(ctx, ams.CalendarEventEvent(ams.EventEventCreated, e, now))
	})
	if ams.ErrorKindOf(err) == ams.ECONFLICT {
		return false, nil // the UID was taken meanwhile
	}
	return created, err
}

// pull brings event e in step with object o (UID uid, fields f): the
// server's version wins. It emits event.updated when a field changed.
func (s *Syncer) pull(ctx context.Context, in *ams.Integration, e *ams.CalendarEvent, uid string, o object, f fields) (bool, error) {
	updated := false
	err := s.Store.Update(ctx, func(tx ams.Tx) error {
		updated = false
		cur, err := tx.FindCalendarEvent(ctx, e.UserID, e.ID)
		if ams.IsNotFound(err) {
			return nil // deleted here meanwhile; the next run deletes the object
		} else if err != nil {
			return err
		}
		if cur.IntegrationID != e.IntegrationID {
			return nil // taken by another integration meanwhile
		}
		if cur.IntegrationID == in.ID && fieldsOf(cur).hash() != parseState(cur.ExternalETag).Hash && !fieldsOf(cur).equal(f) {
			s.Logger.Info("caldav: event changed both here and on the server; the server's version wins",
				"integration_id", in.ID, "event_id", cur.ID)
		}
		now := s.now()
		changed := !fieldsOf(cur).equal(f)
		was := ams.CalendarEventEvent(ams.EventEventUpdated, cur, cur.UpdatedAt)
		if changed {
			f.apply(cur)
			cur.UpdatedAt = now
		}
		cur.IntegrationID, cur.ExternalUID, cur.ExternalPath = in.ID, uid, o.Path
		cur.ExternalETag = syncState{o.ETag, f.hash()}.String()
		if err := tx.UpdateCalendarEvent(ctx, cur); err != nil {
			return err
		}
		if !changed {
			return nil
		}
		updated = true
		return tx.Emit(ctx, ams.CalendarEventEvent(ams.EventEventUpdated, cur, now).Since(was))
	})
	if ams.ErrorKindOf(err) == ams.ECONFLICT {
		return false, nil
	}
	return updated, err
}

// deleteHere deletes event e, whose object is gone from the server,
// unless it changed hands meanwhile, and emits event.deleted (an
// addition to the interface's types) with the event as it was, in the
// same transaction. The event stays restorable (DeletedBySync) for the
// events' retention.
func (s *Syncer) deleteHere(ctx context.Context, in *ams.Integration, e *ams.CalendarEvent) (bool, error) {
	deleted := false
	err := s.Store.Update(ctx, func(tx ams.Tx) error {
		deleted = false
		cur, err := tx.FindCalendarEvent(ctx, e.UserID, e.ID)
		if ams.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		if cur.IntegrationID != in.ID || cur.ExternalPath != e.ExternalPath {
			return nil
		}
		now := s.now()
		if err := tx.DeleteCalendarEvent(ctx, cur.UserID, cur.ID, ams.DeletedBySync, now); err != nil {
			return err
		}
		deleted = true
		cur.DeletedAt, cur.DeletedBy = &now, ams.DeletedBySync
		return tx.Emit(ctx, ams.CalendarEventEvent(ams.EventEventDeleted, cur, now))
	})
	return deleted, err
}

// pushUpdate writes the fields of e, changed here, into its object, if
// the object did not change meanwhile.
func (s *Syncer) pushUpdate(ctx context.Context, rc *remote, e *ams.CalendarEvent) (bool, error) {
	st := parseState(e.ExternalETag)
	o, err := rc.get(ctx, e.ExternalPath)
	if err != nil {
		if isStatus(err, http.StatusNotFound) {
			return false, nil // deleted there meanwhile: the next run deletes it here
		}
		if unreadable(err) {
			return false, nil // no longer iCalendar ams can read: left alone
		}
		return false, remoteErr(err)
	}
	if o.ETag != "" && o.ETag != st.ETag {
		return false, nil // changed there meanwhile: the next run pulls it
	}
	if err := updateCalendar(o.Data, e, s.now()); err != nil {
		return false, nil // the object no longer holds an event ams can hold
	}
	etag, err := rc.put(ctx, e.ExternalPath, o.ETag, o.Data)
	if isStatus(err, http.StatusPreconditionFailed) {
		return false, nil
	} else if err != nil {
		return false, remoteErr(err)
	}
	return true, s.saveState(ctx, e, e.IntegrationID, e.ExternalUID, e.ExternalPath, syncState{etag, fieldsOf(e).hash()})
}

// pushNew writes event e, which lives only here, as a new object whose
// UID is its id, and makes it the integration's; an event of the
// integration restored here keeps its UID.
func (s *Syncer) pushNew(ctx context.Context, rc *remote, in *ams.Integration, e *ams.CalendarEvent) (bool, error) {
	uid := e.ID
	if e.IntegrationID == in.ID && e.ExternalUID != "" {
		uid = e.ExternalUID
	}
	path := rc.objectPath(uid)
	etag, err := rc.put(ctx, path, "", newCalendar(e, uid, s.now()))
	if isStatus(err, http.StatusPreconditionFailed) {
		return false, nil // written by a run in another process; the next run matches it
	} else if err != nil {
		return false, remoteErr(err)
	}
	return true, s.saveState(ctx, e, in.ID, uid, path, syncState{etag, fieldsOf(e).hash()})
}

// saveState records that event e (as it was read for the push) is in
// step with the object at path. If e changed meanwhile its hash differs,
// so the next run pushes it again; if it was deleted, the next run
// deletes the object.
func (s *Syncer) saveState(ctx context.Context, e *ams.CalendarEvent, integrationID, uid, path string, st syncState) error {
	return s.Store.Update(ctx, func(tx ams.Tx) error {
		cur, err := tx.FindCalendarEvent(ctx, e.UserID, e.ID)
		if ams.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		if cur.IntegrationID != e.IntegrationID {
			return nil // taken by another integration meanwhile
		}
		cur.IntegrationID, cur.ExternalUID, cur.ExternalPath, cur.ExternalETag = integrationID, uid, path, st.String()
		return tx.UpdateCalendarEvent(ctx, cur)
	})
}

// finish records the outcome of a run: a failure of the server sets the
// status error with a safe last_error and emits integration.error when
// the status changes to it (the back-off the claim set stays); a success
// after failures sets it connected again and emits integration.connected,
// and a success resets the back-off. A run that went through but whose
// server refused some events (refusals) is a success: the status is
// connected, and last_error names the events refused (no event is
// emitted for that); so does a run that held back a mass deletion
// (held, until when pending says); a run with neither clears last_error.
// A disconnected integration is left alone.
func (s *Syncer) finish(ctx context.Context, in *ams.Integration, runErr error, refusals []refusal, res Result, pending string) (*ams.Integration, error) {
	var re *remoteError
	if runErr != nil && !errors.As(runErr, &re) {
		return nil, runErr // the store's failure says nothing of the server
	}
	var out *ams.Integration
	err := s.Store.Update(ctx, func(tx ams.Tx) error {
		cur, err := tx.FindIntegration(ctx, in.UserID, in.ID)
		if err != nil {
			return err
		}
		out = cur
		if cur.Status == ams.IntegrationDisconnected {
			return nil
		}
		now := s.now()
		if runErr == nil {
			var notes []string
			if res.Held > 0 {
				if p, ok := parsePendingDeletion(pending); ok {
					notes = append(notes, describeHeld(res.Held, p.Since.Add(s.confirmDelay())))
				}
			}
			if len(refusals) > 0 {
				notes = append(notes, describeRefusals(refusals))
			}
			var msg *string
			if len(notes) > 0 {
				m := strings.Join(notes, " ")
				msg = &m
			}
			wasError := cur.Status == ams.IntegrationError
			if !wasError && equalPtr(cur.LastError, msg) && cur.SyncFailures == 0 && cur.NextSyncAt == nil && cur.PendingDeletion == pending {
				return nil
			}
			if wasError || !equalPtr(cur.LastError, msg) {
				cur.UpdatedAt = now
			}
			cur.Status, cur.LastError = ams.IntegrationConnected, msg
			cur.SyncFailures, cur.NextSyncAt, cur.PendingDeletion = 0, nil, pending
			if err := tx.UpdateIntegration(ctx, cur); err != nil {
				return err
			}
			if !wasError {
				return nil
			}
			return tx.Emit(ctx, ams.IntegrationEvent(ams.EventIntegrationConnected, cur, now))
		}
		return s.failed(ctx, tx, cur, describe(runErr), now)
	})
	return out, err
}

// failed sets integration cur's status error with last_error msg, and
// emits integration.error when the status changes to it (once per change,
// not per failed run).
func (s *Syncer) failed(ctx context.Context, tx ams.Tx, cur *ams.Integration, msg string, now time.Time) error {
	if cur.Status == ams.IntegrationError {
		if cur.LastError != nil && *cur.LastError == msg {
			return nil
		}
		cur.LastError, cur.UpdatedAt = &msg, now // another failure: no new event
		return tx.UpdateIntegration(ctx, cur)
	}
	cur.Status, cur.LastError, cur.UpdatedAt = ams.IntegrationError, &msg, now
	if err := tx.UpdateIntegration(ctx, cur); err != nil {
		return err
	}
	return tx.Emit(ctx, ams.IntegrationEvent(ams.EventIntegrationError, cur, now))
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// describeRefusals is the last_error of a run whose server refused some
// events: how many, the HTTP statuses, and the first five events' ids
// (the account's own; nothing of the server's answer).
func describeRefusals(rs []refusal) string {
	var codes []string
	seen := map[int]bool{}
	ids := make([]string, 0, min(len(rs), 5))
	for i, r := range rs {
		if !seen[r.Code] {
			seen[r.Code] = true
			if r.Code == 0 {
				codes = append(codes, "not writable as iCalendar")
			} else {
				codes = append(codes, "HTTP "+strconv.Itoa(r.Code))
			}
		}
		if i < 5 {
			ids = append(ids, r.EventID)
		}
	}
	list := strings.Join(ids, ", ")
	if len(rs) > len(ids) {
		list += fmt.Sprintf(" and %d more", len(rs)-len(ids))
	}
	what := "1 event"
	if len(rs) > 1 {
		what = fmt.Sprintf("%d events", len(rs))
	}
	return fmt.Sprintf("The CalDAV server refused %s (%s): %s. The other events are synchronized; these are tried again at each sync until the server accepts them or they are changed.",
		what, strings.Join(codes, ", "), list)
}

// errDied is the last_error of an integration whose last run started
// and never recorded its outcome: the process running it stopped.
const errDied = "The last sync did not finish (the service stopped during it). It is retried with a growing delay."

// claim takes integration in for a run: it records the run's start in
// updated_at and counts the run failed until it finishes (SyncFailures,
// and NextSyncAt after the back-off; see Backoff), unless the integration
// is disconnected, or (minAge > 0) a run started less than minAge ago,
// or (background) its back-off is not over (see backingOff below), in
// which case it returns false. When the last run started at least runTimeout ago and never
// recorded its outcome, the claim first sets the status error (and emits
// integration.error). The row lock of FindIntegration makes the check and
// the write one step, so that of several processes looking at once only
// one takes the run. prev is the sync state before the claim, for
// release.
func (s *Syncer) claim(ctx context.Context, in *ams.Integration, minAge time.Duration, background bool, b backoff) (cur *ams.Integration, prev *ams.Integration, ok bool, err error) {
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		ok = false
		c, err := tx.FindIntegration(ctx, in.UserID, in.ID)
		if err != nil {
			return err
		}
		cur = c
		now := s.now()
		if c.Status == ams.IntegrationDisconnected || c.Provider != Provider {
			return nil
		}
		if minAge > 0 && now.Sub(c.UpdatedAt) < minAge {
			return nil
		}
		// The back-off holds periodic runs; a run after a local change
		// (minAge 0) only once a failure is recorded or two runs in a row
		// did not finish, so that a change made while another process's
		// run is in flight is still pushed at once.
		backingOff := minAge > 0 || c.Status == ams.IntegrationError || c.SyncFailures >= 2
		if background && backingOff && c.NextSyncAt != nil && now.Before(*c.NextSyncAt) {
			return nil
		}
		p := *c
		prev = &p
		if c.SyncFailures > 0 && c.Status == ams.IntegrationConnected && now.Sub(c.UpdatedAt) >= b.runTimeout {
			if err := s.failed(ctx, tx, c, errDied, now); err != nil {
				return err
			}
		}
		c.UpdatedAt = now
		c.SyncFailures++
		next := now.Add(Backoff(c.SyncFailures, b.base, b.max))
		c.NextSyncAt = &next
		ok = true
		return tx.UpdateIntegration(ctx, c)
	})
	return cur, prev, ok, err
}

// backoff is the worker's back-off settings.
type backoff struct{ base, max, runTimeout time.Duration }

// release gives back the claim of a run stopped by a graceful shutdown:
// the failure it counted and its back-off, unless another run claimed the
// integration since.
func (s *Syncer) release(ctx context.Context, claimed, prev *ams.Integration) error {
	return s.Store.Update(ctx, func(tx ams.Tx) error {
		cur, err := tx.FindIntegration(ctx, claimed.UserID, claimed.ID)
		if err != nil {
			return err
		}
		if cur.SyncFailures != claimed.SyncFailures || cur.UpdatedAt.UnixMilli() != claimed.UpdatedAt.UnixMilli() {
			return nil // claimed again since
		}
		cur.SyncFailures, cur.NextSyncAt = prev.SyncFailures, prev.NextSyncAt
		return tx.UpdateIntegration(ctx, cur)
	})
}

// String describes a result for logs and tests.
func (r Result) String() string {
	return fmt.Sprintf("created %d, updated %d, deleted here %d, pushed %d, deleted there %d, refused %d, held %d, restored %d",
		r.Created, r.Updated, r.DeletedHere, r.Pushed, r.DeletedThere, r.Refused, r.Held, r.Restored)
}
