package http

import (
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/world"
)

// Integrations over HTTP: POST /v1/integrations connects one (its
// provider checks the connection first; nothing is stored if that fails),
// GET reads it, DELETE disconnects it (the record stays, with status
// disconnected, and so do the calendar events it brought), and POST
// /v1/integrations/{id}/sync syncs it now. The changes are the world
// service's (world/integrations.go).

// Integrator connects and syncs the integrations of one provider; it is
// the world service's (world.Service.Integrations).
type Integrator = world.Integrator

func (s *Server) listIntegrations(w http.ResponseWriter, r *http.Request) error {
	page, err := s.Store.ListIntegrations(r.Context(), auth(r).User.ID, listOf(r))
	if err != nil {
		return err
	}
	return writeList(w, page, func(i *ams.Integration) string { return i.ID })
}

func (s *Server) createIntegration(w http.ResponseWriter, r *http.Request) error {
	var req world.ConnectInput
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	in, err := s.World.Connect(r.Context(), auth(r).User.ID, req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/integrations/"+in.ID)
	return writeJSON(w, http.StatusCreated, in)
}

func (s *Server) getIntegration(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	in, err := s.Store.FindIntegration(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, in)
}

// deleteIntegration disconnects an integration: status disconnected and
// integration.disconnected, once; disconnecting it again changes nothing.
// The record stays (GET and lists show it), and so do the calendar events
// it brought: they become events of this service only, and a new
// connection to the same calendar takes them over by their UID.
func (s *Server) deleteIntegration(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.World.Disconnect(r.Context(), auth(r).User.ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// syncIntegration syncs an integration now and answers it as it is
// afterwards: a failed sync answers 200 with status error and last_error
// (the sync itself worked as asked).
func (s *Server) syncIntegration(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := noBody(r); err != nil {
		return err
	}
	out, err := s.World.SyncNow(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}
