package http

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/world"
)

// An assistant's actions over HTTP (/v1/assistants/{id}/actions): a tool
// run directly, and the record of each tool run (world/tools.go).

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
	conv := r.URL.Query().Get("conversation_id")
	if conv != "" && !ams.HasPrefixID(conv, ams.PrefixConversation) {
		return ams.ParamError("parameter_invalid", "conversation_id", "'conversation_id' must be a conversation id (conv_...).")
	}
	a, err := s.findAssistant(r)
	if err != nil {
		return err
	}
	page, err := s.Store.ListActions(r.Context(), auth(r).User.ID, ams.ActionFilter{AssistantID: a.ID, ConversationID: conv}, listOf(r))
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
	act, err := s.Store.FindAction(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	if act.AssistantID != a.ID {
		return ams.NotFound("action", id)
	}
	return writeJSON(w, http.StatusOK, act)
}
