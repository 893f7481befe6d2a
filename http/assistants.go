package http

import (
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/world"
)

// Assistants over HTTP (/v1/assistants): the world service validates and
// writes them (world/assistants.go); the handlers read them from the store.

// assistantRequest is the body of POST and PATCH /v1/assistants; the
// world service validates it.
type assistantRequest = world.AssistantInput

func (s *Server) listAssistants(w http.ResponseWriter, r *http.Request) error {
	page, err := s.Store.ListAssistants(r.Context(), auth(r).User.ID, listOf(r))
	if err != nil {
		return err
	}
	return writeList(w, page, func(a *ams.Assistant) string { return a.ID })
}

func (s *Server) getAssistant(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	a, err := s.Store.FindAssistant(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, a)
}

func (s *Server) createAssistant(w http.ResponseWriter, r *http.Request) error {
	var req assistantRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	a, err := s.World.CreateAssistant(r.Context(), auth(r).User.ID, req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/assistants/"+a.ID)
	return writeJSON(w, http.StatusCreated, a)
}

func (s *Server) updateAssistant(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req assistantRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := s.World.UpdateAssistant(r.Context(), auth(r).User.ID, id, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteAssistant(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.World.DeleteAssistant(r.Context(), auth(r).User.ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
