package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/messaging"
	"github.com/amsdev/ams/world"
)

// The assistant's world over HTTP: tasks (/v1/tasks), calendar events
// (/v1/calendar/events) and assistant actions (/v1/assistants/{id}/actions).
// Validation, storage and events are world.Service's; the handlers check
// the request's shape, pass the body on as JSON and answer the record.

// readObject reads the request body, which must be one JSON object (the
// checks of decodeJSON: not empty, valid JSON, nothing after it), and
// returns it for world.Service to read field by field.
func readObject(r *http.Request) (json.RawMessage, error) {
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSpace(b)), nil
}

// checkAssistantField refuses an assistant_id in body that is a string
// but not an assistant id (400, as POST /v1/messages does); world.Service
// reports the other errors of the field.
func checkAssistantField(body json.RawMessage) error {
	var m struct {
		AssistantID json.RawMessage `json:"assistant_id"`
	}
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	var id string
	if json.Unmarshal(m.AssistantID, &id) == nil && m.AssistantID != nil && string(m.AssistantID) != "null" && !ams.HasPrefixID(id, ams.PrefixAssistant) {
		return ams.ParamError("parameter_invalid", "assistant_id", "'assistant_id' must be an assistant id (ast_...).")
	}
	return nil
}

// queryTime reads an optional RFC 3339 time query parameter, in UTC and
// to the nanosecond given (the store rounds it to its milliseconds as the
// comparison needs).
func queryTime(r *http.Request, name string) (*time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	if _, err := world.ParseTime(v); err != nil {
		return nil, ams.ParamError("parameter_invalid", name, "'%s' must be an RFC 3339 time such as 2026-11-21T09:00:00Z.", name)
	}
	t, _ := time.Parse(time.RFC3339Nano, strings.TrimSpace(v)) // ParseTime accepted it
	t = t.UTC()
	return &t, nil
}

// queryAssistant reads the optional assistant_id filter.
func queryAssistant(r *http.Request) (string, error) {
	a := r.URL.Query().Get("assistant_id")
	if a != "" && !ams.HasPrefixID(a, ams.PrefixAssistant) {
		return "", ams.ParamError("parameter_invalid", "assistant_id", "'assistant_id' must be an assistant id (ast_...).")
	}
	return a, nil
}

// Tasks.

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
	p, err := listParams(r)
	if err != nil {
		return err
	}
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
	page, err := s.World.Store.ListTasks(r.Context(), auth(r).User.ID, f, p)
	if err != nil {
		return err
	}
	return writeList(w, page, func(t *ams.Task) string { return t.ID })
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	t, err := s.World.Store.FindTask(r.Context(), auth(r).User.ID, id)
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

// Calendar events.

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
	p, err := listParams(r)
	if err != nil {
		return err
	}
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
	page, err := s.World.Store.ListCalendarEvents(r.Context(), auth(r).User.ID, f, p)
	if err != nil {
		return err
	}
	return writeList(w, page, func(e *ams.CalendarEvent) string { return e.ID })
}

func (s *Server) getCalendarEvent(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e, err := s.World.Store.FindCalendarEvent(r.Context(), auth(r).User.ID, id)
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

// Assistant actions.

// actionRequest is the body of POST /v1/assistants/{id}/actions.
type actionRequest struct {
	Type  *string         `json:"type"`
	Input json.RawMessage `json:"input"`
}

// findAssistant returns the assistant of the {id} path value; an unknown
// one is 404 naming param id (as the route's prelude does for an id that
// is not an assistant's).
func (s *Server) findAssistant(r *http.Request) (*ams.Assistant, error) {
	a, err := s.Store.FindAssistant(r.Context(), auth(r).User.ID, r.PathValue("id"))
	if err != nil {
		return nil, ams.WithParam(err, "id")
	}
	return a, nil
}

func (s *Server) runAction(w http.ResponseWriter, r *http.Request) error {
	var req actionRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Type == nil {
		return ams.ParamError("parameter_missing", "type", "Missing required parameter 'type': the tool to run, one of %s.", toolList())
	}
	if len(req.Input) > 0 && string(req.Input) != "null" && req.Input[0] != '{' {
		return ams.ParamError("invalid_type", "input", "'input' must be of type object.")
	}
	a, err := s.findAssistant(r)
	if err != nil {
		return err
	}
	act, err := s.World.RunAction(r.Context(), auth(r).User.ID, a, "", *req.Type, req.Input)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/assistants/"+a.ID+"/actions/"+act.ID)
	return writeJSON(w, http.StatusCreated, act)
}

func toolList() string {
	var b bytes.Buffer
	for i, n := range world.ToolNames() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}

func (s *Server) listActions(w http.ResponseWriter, r *http.Request) error {
	p, err := listParams(r)
	if err != nil {
		return err
	}
	conv := r.URL.Query().Get("conversation_id")
	if conv != "" && !ams.HasPrefixID(conv, ams.PrefixConversation) {
		return ams.ParamError("parameter_invalid", "conversation_id", "'conversation_id' must be a conversation id (conv_...).")
	}
	a, err := s.findAssistant(r)
	if err != nil {
		return err
	}
	page, err := s.World.Store.ListActions(r.Context(), auth(r).User.ID, ams.ActionFilter{AssistantID: a.ID, ConversationID: conv}, p)
	if err != nil {
		return err
	}
	return writeList(w, page, func(a *ams.Action) string { return a.ID })
}

func (s *Server) getAction(w http.ResponseWriter, r *http.Request) error {
	a, err := s.findAssistant(r)
	if err != nil {
		return err
	}
	id := r.PathValue("action_id")
	act, err := s.World.Store.FindAction(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	if act.AssistantID != a.ID {
		return ams.NotFound("action", id)
	}
	return writeJSON(w, http.StatusOK, act)
}

// Message edits.

// updateMessageRequest is the body of PATCH /v1/messages/{id}.
type updateMessageRequest struct {
	Content  *string           `json:"content"`
	Metadata ams.MetadataPatch `json:"metadata"`
}

func (s *Server) updateMessage(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req updateMessageRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	m, err := s.Messages.UpdateMessage(r.Context(), auth(r).User.ID, id, messaging.MessageUpdate{Content: req.Content, Metadata: req.Metadata})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, m)
}

func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.Messages.DeleteMessage(r.Context(), auth(r).User.ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
