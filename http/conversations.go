package http

import (
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/messaging"
)

// Conversations over HTTP (/v1/conversations): the messaging service
// writes them (messaging/conversations.go).

// conversationRequest is the body of POST and PATCH /v1/conversations.
type conversationRequest struct {
	AssistantID *string           `json:"assistant_id"`
	Title       *string           `json:"title"`
	Metadata    ams.MetadataPatch `json:"metadata"`
}

func (req *conversationRequest) input() messaging.ConversationInput {
	return messaging.ConversationInput{AssistantID: req.AssistantID, Title: req.Title, Metadata: req.Metadata}
}

func (s *Server) listConversations(w http.ResponseWriter, r *http.Request) error {
	asst := r.URL.Query().Get("assistant_id")
	if asst != "" && !ams.HasPrefixID(asst, ams.PrefixAssistant) {
		return ams.ParamError("parameter_invalid", "assistant_id", "'assistant_id' must be an assistant id (ast_...).")
	}
	page, err := s.Store.ListConversations(r.Context(), auth(r).User.ID, asst, listOf(r))
	if err != nil {
		return err
	}
	return writeList(w, page, func(c *ams.Conversation) string { return c.ID })
}

func (s *Server) getConversation(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	c, err := s.Store.FindConversation(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, c)
}

func (s *Server) createConversation(w http.ResponseWriter, r *http.Request) error {
	var req conversationRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.AssistantID != nil && !ams.HasPrefixID(*req.AssistantID, ams.PrefixAssistant) {
		return ams.ParamError("parameter_invalid", "assistant_id", "'assistant_id' must be an assistant id (ast_...).")
	}
	c, err := s.Messages.CreateConversation(r.Context(), auth(r).User.ID, req.input())
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/conversations/"+c.ID)
	return writeJSON(w, http.StatusCreated, c)
}

func (s *Server) updateConversation(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req conversationRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c, err := s.Messages.UpdateConversation(r.Context(), auth(r).User.ID, id, req.input())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, c)
}

func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.Messages.DeleteConversation(r.Context(), auth(r).User.ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listConversationMessages(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	userID := auth(r).User.ID
	if _, err := s.Store.FindConversation(r.Context(), userID, id); err != nil {
		return err
	}
	page, err := s.Store.ListMessages(r.Context(), userID, id, listOf(r))
	if err != nil {
		return err
	}
	return writeList(w, page, func(m *ams.Message) string { return m.ID })
}
