package caldav

import (
	"context"
	"net/http"

	"github.com/amsdev/ams"
)

// syncRun is one sync run of an integration, in the steps the package
// comment numbers: deleteThere (1), list and compare (2), pullChanged
// (3), deleteGone (4) and pushChanges (5). The steps share the
// connection, what the listing found and what the run counted.
type syncRun struct {
	s  *Syncer
	in *ams.Integration
	rc *remote

	res      Result
	refusals []refusal
	// refusedPaths are the objects whose deletion the server refused in
	// this run.
	refusedPaths map[string]bool
	// pending is the integration's new PendingDeletion ("" for none).
	pending string

	// The account's events, by what they are to the integration.
	mine      map[string]*ams.CalendarEvent // by path: the integration's events
	byUID     map[string]*ams.CalendarEvent // by UID: the integration's and adoptable events
	localOnly []*ams.CalendarEvent          // no integration's
	restored  []*ams.CalendarEvent          // the integration's, restored here: no object known

	matched     map[string]bool      // event ids in step with an object
	changedHere []*ams.CalendarEvent // events in step with their object, changed here since
}

// run syncs integration in once (see the package comment). It returns
// the events the server refused too: skipped, the run went on without
// them. The pending mass deletion it returns is the integration's new
// PendingDeletion ("" for none). A run that fails before its pushes
// reports no refusals.
func (s *Syncer) run(ctx context.Context, in *ams.Integration, deletions []deletion) (Result, []refusal, string, error) {
	rc, err := s.connect(ctx, in)
	if err != nil {
		return Result{}, nil, "", err
	}
	r := &syncRun{s: s, in: in, rc: rc, refusedPaths: map[string]bool{}, matched: map[string]bool{}}
	if err := r.pull(ctx, deletions); err != nil {
		return r.res, nil, r.pending, err
	}
	err = r.pushChanges(ctx)
	r.res.Refused = len(r.refusals)
	return r.res, r.refusals, r.pending, err
}

// pull runs the steps that read the server: the deletions there, the
// listing, the objects changed there and those gone.
func (r *syncRun) pull(ctx context.Context, deletions []deletion) error {
	if err := r.deleteThere(ctx, deletions); err != nil {
		return err
	}
	etags, err := r.list(ctx)
	if err != nil {
		return err
	}
	if err := r.pullChanged(ctx, r.compare(etags)); err != nil {
		return err
	}
	return r.deleteGone(ctx, r.hold(r.gone(etags)))
}

// deleteThere deletes on the server the objects of events deleted here
// since the last run.
func (r *syncRun) deleteThere(ctx context.Context, deletions []deletion) error {
	for _, d := range deletions {
		if err := r.remove(ctx, d.EventID, d.Path, d.ETag); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes the object at path of event id (deleted here): a
// refusal of it is noted and skipped, as push does. The object stays on
// the server; when its UID is the event's id, each later run finds it
// there and tries again (an object of another UID is the server's event,
// read back as such).
func (r *syncRun) remove(ctx context.Context, id, path, etag string) error {
	err := r.rc.remove(ctx, path, etag)
	if code, isRefusal := refused(err); isRefusal {
		r.refusedPaths[path] = true
		r.refusals = append(r.refusals, refusal{id, code})
		r.s.Logger.Warn("caldav: the server refused to delete an event; the others are synchronized",
			"integration_id", r.in.ID, "event_id", id, "status", code)
		return nil
	} else if err != nil && !isStatus(err, http.StatusPreconditionFailed) {
		return remoteErr(err)
	}
	r.res.DeletedThere++
	return nil
}

// list returns the collection's objects (path → ETag) and sorts the
// account's events.
func (r *syncRun) list(ctx context.Context) (map[string]string, error) {
	etags, err := r.rc.list(ctx)
	if err != nil {
		return nil, remoteErr(err)
	}
	events, err := r.s.events(ctx, r.in.UserID)
	if err != nil {
		return nil, err
	}
	inactive, err := r.s.inactiveIntegrations(ctx, r.in, events)
	if err != nil {
		return nil, err
	}
	r.sort(events, inactive)
	return etags, nil
}

// sort files the account's events by what they are to the integration:
// its own (by path, or restored here), local only, or kept from a
// disconnected integration (inactive) and adoptable by UID.
func (r *syncRun) sort(events []*ams.CalendarEvent, inactive map[string]bool) {
	r.mine, r.byUID = map[string]*ams.CalendarEvent{}, map[string]*ams.CalendarEvent{}
	for _, e := range events {
		switch {
		case e.IntegrationID == r.in.ID:
			if e.ExternalPath != "" {
				r.mine[e.ExternalPath] = e
			} else {
				r.restored = append(r.restored, e)
			}
			r.byUID[e.ExternalUID] = e
		case e.IntegrationID == "":
			r.localOnly = append(r.localOnly, e)
			if _, taken := r.byUID[e.ID]; !taken {
				r.byUID[e.ID] = e
			}
		case inactive[e.IntegrationID] && e.ExternalUID != "":
			// Kept from a disconnected integration: a new connection to
			// the same calendar takes it over rather than duplicating it.
			if _, taken := r.byUID[e.ExternalUID]; !taken {
				r.byUID[e.ExternalUID] = e
			}
		}
	}
}

// compare returns the paths of the objects changed on the server (or new
// there), and notes the events in step with their object and those of
// them changed only here.
func (r *syncRun) compare(etags map[string]string) []string {
	var fetch []string
	for path, etag := range etags {
		e := r.mine[path]
		if e == nil || etag == "" || parseState(e.ExternalETag).ETag != etag {
			fetch = append(fetch, path)
			continue
		}
		r.matched[e.ID] = true
		if fieldsOf(e).hash() != parseState(e.ExternalETag).Hash {
			r.changedHere = append(r.changedHere, e)
		}
	}
	return fetch
}

// pullChanged fetches the objects at paths and takes each in.
func (r *syncRun) pullChanged(ctx context.Context, paths []string) error {
	objs, err := r.rc.fetch(ctx, paths)
	if err != nil {
		return remoteErr(err)
	}
	for _, o := range objs {
		if err := r.pullObject(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// pullObject takes in an object changed on the server: it updates its
// event, or restores or creates one, or deletes the object when its
// event was deleted here.
func (r *syncRun) pullObject(ctx context.Context, o object) error {
	uid, f, err := readEvent(o.Data)
	if err != nil {
		return nil // not an event ams can hold: left alone, both ways
	}
	e := r.mine[o.Path]
	if e == nil || e.ExternalUID != uid {
		e = r.byUID[uid]
	}
	if e != nil && r.matched[e.ID] {
		return nil // a second object with the UID: the first one wins
	}
	if e == nil {
		// An object whose event a sync deleted (it was not listed) is
		// listed again: the event comes back.
		back, err := r.s.restoreListed(ctx, r.in, uid)
		if err != nil {
			return err
		}
		if back == nil {
			return r.pullUnknown(ctx, uid, o, f)
		}
		r.res.Restored++
		e = back
	}
	r.matched[e.ID] = true
	updated, err := r.s.pull(ctx, r.in, e, uid, o, f)
	if err != nil {
		return err
	}
	if updated {
		r.res.Updated++
	}
	return nil
}

// pullUnknown takes in an object of no event here: a copy of an event
// another integration keeps is left alone, the object of an event
// deleted here is deleted, and any other becomes a new event.
func (r *syncRun) pullUnknown(ctx context.Context, uid string, o object, f fields) error {
	gone, ours, err := r.s.deletedHere(ctx, r.in.UserID, uid)
	switch {
	case err != nil:
		return err
	case ours:
		return nil // a copy of an event another integration keeps: not imported twice
	case gone && r.refusedPaths[o.Path]:
		return nil // refused in this run already
	case gone:
		return r.remove(ctx, uid, o.Path, o.ETag)
	}
	created, err := r.s.create(ctx, r.in, uid, o, f)
	if err != nil {
		return err
	}
	if created {
		r.res.Created++
	}
	return nil
}

// gone returns the integration's events whose object the server no
// longer lists.
func (r *syncRun) gone(etags map[string]string) []*ams.CalendarEvent {
	var gone []*ams.CalendarEvent
	for path, e := range r.mine {
		if _, ok := etags[path]; ok || r.matched[e.ID] {
			continue
		}
		gone = append(gone, e)
	}
	return gone
}

// hold returns the events to delete here of those gone from the server:
// none while a mass deletion waits for a later listing to confirm it
// (noted in pending), all of them otherwise.
func (r *syncRun) hold(gone []*ams.CalendarEvent) []*ams.CalendarEvent {
	if !MassDeletion(len(gone), len(r.mine)) {
		return gone
	}
	now := r.s.now()
	seen := newPendingDeletion(gone, now)
	prev, ok := parsePendingDeletion(r.in.PendingDeletion)
	if ok && prev.Hash == seen.Hash && now.Sub(prev.Since) >= r.s.confirmDelay() {
		r.s.Logger.Warn("caldav: a second listing confirms that the server no longer lists the events; they are deleted here (restorable)",
			"integration_id", r.in.ID, "gone", len(gone), "synced", len(r.mine))
		return gone
	}
	if ok && prev.Hash == seen.Hash {
		seen.Since = prev.Since
	}
	r.pending = seen.String()
	r.res.Held = len(gone)
	r.s.Logger.Warn("caldav: the server no longer lists many of the calendar's events; they are kept until a later listing confirms it",
		"integration_id", r.in.ID, "gone", len(gone), "synced", len(r.mine))
	return nil
}

// deleteGone deletes here the events whose object is gone (restorable).
func (r *syncRun) deleteGone(ctx context.Context, gone []*ams.CalendarEvent) error {
	for _, e := range gone {
		deleted, err := r.s.deleteHere(ctx, r.in, e)
		if err != nil {
			return err
		}
		if deleted {
			r.res.DeletedHere++
		}
	}
	return nil
}

// pushChanges writes to the server the events changed here, then those
// that live only here or were restored here.
func (r *syncRun) pushChanges(ctx context.Context) error {
	for _, e := range r.changedHere {
		if err := r.push(e, func() (bool, error) { return r.s.pushUpdate(ctx, r.rc, e) }); err != nil {
			return err
		}
	}
	for _, e := range append(r.localOnly, r.restored...) {
		if r.matched[e.ID] {
			continue
		}
		if err := r.push(e, func() (bool, error) { return r.s.pushNew(ctx, r.rc, r.in, e) }); err != nil {
			return err
		}
	}
	return nil
}

// push runs one push of event e: a refusal of e is noted and skipped.
func (r *syncRun) push(e *ams.CalendarEvent, do func() (bool, error)) error {
	ok, err := do()
	if code, isRefusal := refused(err); isRefusal {
		r.refusals = append(r.refusals, refusal{e.ID, code})
		r.s.Logger.Warn("caldav: the server refused an event; the others are synchronized",
			"integration_id", r.in.ID, "event_id", e.ID, "status", code)
		return nil
	} else if err != nil {
		return err
	}
	if ok {
		r.res.Pushed++
	}
	return nil
}
