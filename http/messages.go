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
	// Background true answers 202 with the turn at once; the turn runs on
	// the server (messaging.SendInput.Background).
	Background *bool `json:"background"`
	// MultitaskStrategy: enqueue, reject or interrupt (the assistant's
	// by default).
	MultitaskStrategy *string `json:"multitask_strategy"`
	// The per-turn options (ams.TurnOptions).
	Instructions    *string             `json:"instructions"`
	Tools           []*ams.ClientTool   `json:"tools"`
	ToolChoice      *ams.ToolChoice     `json:"tool_choice"`
	MaxOutputTokens *int                `json:"max_output_tokens"`
	ResponseFormat  *ams.ResponseFormat `json:"response_format"`
}

// options returns the request's per-turn options, nil when it has none.
func (req *createMessageRequest) options() (*ams.TurnOptions, error) {
	if req.Instructions == nil && req.Tools == nil && req.ToolChoice == nil && req.MaxOutputTokens == nil && req.ResponseFormat == nil {
		return nil, nil
	}
	o := &ams.TurnOptions{Instructions: req.Instructions, Tools: req.Tools, ToolChoice: req.ToolChoice, ResponseFormat: req.ResponseFormat}
	if req.MaxOutputTokens != nil {
		if *req.MaxOutputTokens < 1 {
			return nil, ams.ParamError("parameter_invalid", "max_output_tokens", "'max_output_tokens' must be an integer of 1 or more.")
		}
		o.MaxOutputTokens = *req.MaxOutputTokens
	}
	return o, nil
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
	if req.MultitaskStrategy != nil {
		if *req.MultitaskStrategy == "" {
			return ams.ParamError("parameter_invalid", "multitask_strategy", "multitask_strategy must be 'enqueue', 'reject' or 'interrupt'.")
		}
		in.MultitaskStrategy = *req.MultitaskStrategy
	}
	opts, err := req.options()
	if err != nil {
		return err
	}
	in.Options = opts
	in.Background = req.Background != nil && *req.Background
	if req.Stream != nil && *req.Stream {
		in.Stream = true
		return s.streamMessage(w, r, auth(r).User.ID, in)
	}
	run, err := s.Messages.Start(r.Context(), auth(r).User.ID, in)
	if err != nil {
		return err
	}
	if in.Background {
		// 202 with the turn as it started (queued or running), or as it
		// is for a retry of a background send.
		t := run.Turn
		if run.Replayed {
			t = run.Final()
		}
		// It holds the request's turn slot while it runs here (a queued
		// turn's Run is done at once: it holds none until it starts).
		keepTurnSlot(r, run.Done())
		w.Header().Set("X-Turn-Id", t.ID)
		w.Header().Set("Location", "/v1/turns/"+t.ID)
		return writeJSON(w, http.StatusAccepted, t)
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
	if reply == nil {
		// The turn stopped at requires_action: the turn tells what it
		// waits for (POST /v1/turns/{id}/tool_outputs or /approvals).
		t := run.Final()
		w.Header().Set("Location", "/v1/turns/"+t.ID)
		return writeJSON(w, http.StatusOK, t)
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
