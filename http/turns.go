package http

import (
	"net/http"

	"github.com/amsdev/ams"
)

// Turns over HTTP (/v1/turns): one POST /v1/messages each, read and
// cancelled through the messaging service; stream.go follows one's events.

func (s *Server) getTurn(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	t, err := s.Messages.Turn(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t)
}

func (s *Server) listTurns(w http.ResponseWriter, r *http.Request) error {
	conv := r.URL.Query().Get("conversation_id")
	if conv != "" && !ams.HasPrefixID(conv, ams.PrefixConversation) {
		return ams.ParamError("parameter_invalid", "conversation_id", "'conversation_id' must be a conversation id (conv_...).")
	}
	page, err := s.Messages.ListTurns(r.Context(), auth(r).User.ID, conv, listOf(r))
	if err != nil {
		return err
	}
	return writeList(w, page, func(t *ams.Turn) string { return t.ID })
}

// cancelTurn stops a running turn (messaging.Service.Cancel) and answers
// it: cancelled, or still running with cancel_requested when another
// process runs it. A turn that has ended is answered unchanged.
func (s *Server) cancelTurn(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := noBody(r); err != nil {
		return err
	}
	t, err := s.Messages.Cancel(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t)
}
