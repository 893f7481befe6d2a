package http

import (
	"net/http"

	"github.com/amsdev/ams"
)

// Events over HTTP (/v1/events): read from the store; the management
// events (ams.ManagementEventTypes) are admin's.

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) error {
	var err error
	f := ams.EventFilter{Type: r.URL.Query().Get("type")}
	if f.Type != "" && !ams.IsEventType(f.Type) && f.Type != ams.EventWebhookPing {
		return ams.ParamError("parameter_invalid", "type", "Unknown event type '%s'.", ams.Clip(f.Type))
	}
	if !auth(r).Permissions.Allows(ams.PermAdmin) { // management events are admin's (ams.ManagementEventTypes)
		if ams.IsManagementEvent(f.Type) {
			return needAdmin(w, ams.ErrManagementEventsNeedAdmin("type", f.Type))
		}
		f.NoManagement = true
	}
	if f.CreatedAfter, err = queryTime(r, "created_after"); err != nil {
		return err
	}
	if f.CreatedBefore, err = queryTime(r, "created_before"); err != nil {
		return err
	}
	page, err := s.Store.ListEvents(r.Context(), auth(r).User.ID, f, listOf(r))
	if err != nil {
		return err
	}
	return writeList(w, page, func(e *ams.Event) string { return e.ID })
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e, err := s.Store.FindEvent(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	if ams.IsManagementEvent(e.Type) && !auth(r).Permissions.Allows(ams.PermAdmin) {
		return needAdmin(w, ams.ErrManagementEventsNeedAdmin("", e.Type))
	}
	return writeJSON(w, http.StatusOK, e)
}

// needAdmin returns err, a 403 for want of admin, after setting the
// WWW-Authenticate challenge of RFC 6750 that names the scope.
func needAdmin(w http.ResponseWriter, err error) error {
	w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="admin"`)
	return err
}
