package http

import (
	"net/http"

	"github.com/amsdev/ams"
)

// Calendar events over HTTP (/v1/calendar/events), as tasks.go: the world
// service validates and writes them; a deleted event can be restored
// within its retention. The calendar feed is calendar_feed.go.

func (s *Server) createCalendarEvent(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r)
	if err != nil {
		return err
	}
	if err := checkAssistantField(body); err != nil {
		return err
	}
	e, err := s.World.CreateEvent(r.Context(), auth(r).User.ID, "", body, "")
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/calendar/events/"+e.ID)
	return writeJSON(w, http.StatusCreated, e)
}

func (s *Server) listCalendarEvents(w http.ResponseWriter, r *http.Request) error {
	var err error
	var f ams.CalendarFilter
	switch r.URL.Query().Get("deleted") {
	case "", "false":
	case "true":
		f.Deleted = true // the deleted events still restorable
	default:
		return ams.ParamError("parameter_invalid", "deleted", "'deleted' must be 'true' or 'false'.")
	}
	if f.AssistantID, err = queryAssistant(r); err != nil {
		return err
	}
	if f.StartsAfter, err = queryTime(r, "starts_after"); err != nil {
		return err
	}
	if f.StartsBefore, err = queryTime(r, "starts_before"); err != nil {
		return err
	}
	page, err := s.Store.ListCalendarEvents(r.Context(), auth(r).User.ID, f, listOf(r))
	if err != nil {
		return err
	}
	return writeList(w, page, func(e *ams.CalendarEvent) string { return e.ID })
}

func (s *Server) getCalendarEvent(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e, err := s.Store.FindCalendarEvent(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, e)
}

func (s *Server) updateCalendarEvent(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	body, err := readObject(r)
	if err != nil {
		return err
	}
	e, err := s.World.UpdateEvent(r.Context(), auth(r).User.ID, id, body, "")
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, e)
}

func (s *Server) deleteCalendarEvent(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.World.DeleteEvent(r.Context(), auth(r).User.ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// restoreCalendarEvent brings back a deleted event (through the API or by
// a calendar sync) still within its retention.
func (s *Server) restoreCalendarEvent(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := noBody(r); err != nil {
		return err
	}
	e, err := s.World.RestoreEvent(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, e)
}
