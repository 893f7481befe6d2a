package http

import (
	"net/http"

	"github.com/amsdev/ams"
)

// Tasks over HTTP (/v1/tasks). Validation, storage and events are
// world.Service's; the handlers check the request's shape, pass the body
// on as JSON and answer the record.

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r)
	if err != nil {
		return err
	}
	if err := checkAssistantField(body); err != nil {
		return err
	}
	t, err := s.World.CreateTask(r.Context(), auth(r).User.ID, "", body, "")
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/tasks/"+t.ID)
	return writeJSON(w, http.StatusCreated, t)
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) error {
	var err error
	var f ams.TaskFilter
	if f.AssistantID, err = queryAssistant(r); err != nil {
		return err
	}
	switch f.Status = r.URL.Query().Get("status"); f.Status {
	case "", ams.TaskOpen, ams.TaskCompleted:
	default:
		return ams.ParamError("parameter_invalid", "status", "'status' must be 'open' or 'completed'.")
	}
	if f.DueAfter, err = queryTime(r, "due_after"); err != nil {
		return err
	}
	if f.DueBefore, err = queryTime(r, "due_before"); err != nil {
		return err
	}
	page, err := s.Store.ListTasks(r.Context(), auth(r).User.ID, f, listOf(r))
	if err != nil {
		return err
	}
	return writeList(w, page, func(t *ams.Task) string { return t.ID })
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	t, err := s.Store.FindTask(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t)
}

func (s *Server) updateTask(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	body, err := readObject(r)
	if err != nil {
		return err
	}
	t, err := s.World.UpdateTask(r.Context(), auth(r).User.ID, id, body, "")
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t)
}

func (s *Server) completeTask(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := noBody(r); err != nil {
		return err
	}
	t, err := s.World.CompleteTask(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t)
}

func (s *Server) deleteTask(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.World.DeleteTask(r.Context(), auth(r).User.ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
