package http

import (
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/messaging"
)

func (s *Server) getOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, err := w.Write(s.OpenAPI)
	return err
}

func (s *Server) listAssistants(w http.ResponseWriter, r *http.Request) error {
	p, err := listParams(r)
	if err != nil {
		return err
	}
	page, err := s.Store.ListAssistants(r.Context(), auth(r).User.ID, p)
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

func (s *Server) listConversations(w http.ResponseWriter, r *http.Request) error {
	p, err := listParams(r)
	if err != nil {
		return err
	}
	asst := r.URL.Query().Get("assistant_id")
	if asst != "" && !ams.HasPrefixID(asst, ams.PrefixAssistant) {
		return ams.ParamError("parameter_invalid", "assistant_id", "'assistant_id' must be an assistant id (ast_...).")
	}
	page, err := s.Store.ListConversations(r.Context(), auth(r).User.ID, asst, p)
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

// conversationRequest is the body of POST and PATCH /v1/conversations.
type conversationRequest struct {
	AssistantID *string           `json:"assistant_id"`
	Title       *string           `json:"title"`
	Metadata    ams.MetadataPatch `json:"metadata"`
}

func (req *conversationRequest) input() messaging.ConversationInput {
	return messaging.ConversationInput{AssistantID: req.AssistantID, Title: req.Title, Metadata: req.Metadata}
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
	p, err := listParams(r)
	if err != nil {
		return err
	}
	userID := auth(r).User.ID
	if _, err := s.Store.FindConversation(r.Context(), userID, id); err != nil {
		return err
	}
	page, err := s.Store.ListMessages(r.Context(), userID, id, p)
	if err != nil {
		return err
	}
	return writeList(w, page, func(m *ams.Message) string { return m.ID })
}

func (s *Server) listIntegrations(w http.ResponseWriter, r *http.Request) error {
	p, err := listParams(r)
	if err != nil {
		return err
	}
	page, err := s.Store.ListIntegrations(r.Context(), auth(r).User.ID, p)
	if err != nil {
		return err
	}
	return writeList(w, page, func(i *ams.Integration) string { return i.ID })
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) error {
	p, err := listParams(r)
	if err != nil {
		return err
	}
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
	page, err := s.Store.ListEvents(r.Context(), auth(r).User.ID, f, p)
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

func (s *Server) getTurn(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	t, err := s.Messages.Turn(r.Context(), auth(r).User.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t)
}

func (s *Server) listTurns(w http.ResponseWriter, r *http.Request) error {
	p, err := listParams(r)
	if err != nil {
		return err
	}
	conv := r.URL.Query().Get("conversation_id")
	if conv != "" && !ams.HasPrefixID(conv, ams.PrefixConversation) {
		return ams.ParamError("parameter_invalid", "conversation_id", "'conversation_id' must be a conversation id (conv_...).")
	}
	page, err := s.Messages.ListTurns(r.Context(), auth(r).User.ID, conv, p)
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
