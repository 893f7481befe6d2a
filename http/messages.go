package http

import (
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/messaging"
)

// Messages over HTTP (/v1/messages): sending one runs a turn (the
// messaging service; stream.go answers it as Server-Sent Events), and an
// inbound message can be edited, deleted or its turn cancelled.

// createMessageRequest is the body of POST /v1/messages.
type createMessageRequest struct {
	AssistantID    *string `json:"assistant_id"`
	Message        *string `json:"message"`
	ConversationID *string `json:"conversation_id"`
	// Stream true answers Server-Sent Events (see stream.go).
	Stream *bool `json:"stream"`
	// Metadata is the inbound message's (ams.MetadataPatch).
	Metadata ams.MetadataPatch `json:"metadata"`
}

func (s *Server) createMessage(w http.ResponseWriter, r *http.Request) error {
	var req createMessageRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.AssistantID == nil {
		return ams.ParamError("parameter_missing", "assistant_id", "Missing required parameter 'assistant_id'.")
	}
	if req.Message == nil {
		return ams.ParamError("parameter_missing", "message", "Missing required parameter 'message'.")
	}
	if !ams.HasPrefixID(*req.AssistantID, ams.PrefixAssistant) {
		return ams.ParamError("parameter_invalid", "assistant_id", "'assistant_id' must be an assistant id (ast_...).")
	}
	in := messaging.SendInput{AssistantID: *req.AssistantID, Message: *req.Message, Timezone: auth(r).User.Timezone, Metadata: req.Metadata,
		IdempotencyKey: r.Header.Get("Idempotency-Key")}
	if req.ConversationID != nil {
		if !ams.HasPrefixID(*req.ConversationID, ams.PrefixConversation) {
			return ams.ParamError("parameter_invalid", "conversation_id", "'conversation_id' must be a conversation id (conv_...).")
		}
		in.ConversationID = *req.ConversationID
	}
	if req.Stream != nil && *req.Stream {
		in.Stream = true
		return s.streamMessage(w, r, auth(r).User.ID, in)
	}
	run, err := s.Messages.Start(r.Context(), auth(r).User.ID, in)
	if err != nil {
		return err
	}
	reply, err := run.Wait(r.Context())
	select {
	case <-run.Done():
		// The turn that answers: this one, or for a turn that lost its
		// Idempotency-Key to another request's, the one replayed; none
		// when nothing was stored (its start is deferred, see
		// messaging.Service.DeferStart).
		if t := run.Final(); t != nil {
			w.Header().Set("X-Turn-Id", t.ID)
		}
	default:
	}
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/messages/"+reply.ID)
	return writeJSON(w, http.StatusCreated, reply)
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	m, err := s.Store.FindMessage(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, m)
}

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

// cancelMessage is cancelTurn for the turn of an inbound message.
func (s *Server) cancelMessage(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := noBody(r); err != nil {
		return err
	}
	t, err := s.Messages.TurnOfMessage(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	if t, err = s.Messages.Cancel(r.Context(), auth(r).User.ID, t.ID); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t)
}
