package http

import (
	"context"
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/messaging"
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

// toolOutputsRequest is the body of POST /v1/turns/{id}/tool_outputs.
type toolOutputsRequest struct {
	ToolOutputs []messaging.ToolOutput `json:"tool_outputs"`
}

// approvalsRequest is the body of POST /v1/turns/{id}/approvals.
type approvalsRequest struct {
	Approvals []messaging.Approval `json:"approvals"`
}

// submitToolOutputs answers the client tool calls a turn waits for
// (messaging.Service.SubmitToolOutputs) and answers 200 with the turn
// once its resumed attempt has ended or stopped again (at once, running,
// for a background turn).
func (s *Server) submitToolOutputs(w http.ResponseWriter, r *http.Request) error {
	var req toolOutputsRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	run, err := s.Messages.SubmitToolOutputs(r.Context(), auth(r).User.ID, r.PathValue("id"), auth(r).User.Timezone, req.ToolOutputs)
	if err != nil {
		return err
	}
	return s.resumedTurn(w, r, run)
}

// approveToolCalls decides on the tool calls a turn waits to have
// approved (messaging.Service.Approve), and answers as submitToolOutputs.
func (s *Server) approveToolCalls(w http.ResponseWriter, r *http.Request) error {
	var req approvalsRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	run, err := s.Messages.Approve(r.Context(), auth(r).User.ID, r.PathValue("id"), auth(r).User.Timezone, req.Approvals)
	if err != nil {
		return err
	}
	return s.resumedTurn(w, r, run)
}

// resumedTurn answers 200 with the turn of a resumed run: as it is when
// the run ends (completed, failed, or waiting again), or, for a
// background turn or when the request's time runs out first, as it is
// now (running; follow it with GET /v1/turns/{id} or its events).
func (s *Server) resumedTurn(w http.ResponseWriter, r *http.Request, run *messaging.Run) error {
	id := run.Turn.ID
	if !run.Turn.Background {
		select {
		case <-run.Done():
		case <-r.Context().Done():
		}
	} else {
		keepTurnSlot(r, run.Done()) // as a background send does
	}
	ctx := context.WithoutCancel(r.Context())
	t, err := s.Messages.Turn(ctx, auth(r).User.ID, id)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/turns/"+id)
	return writeJSON(w, http.StatusOK, t)
}
