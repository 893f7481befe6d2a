package pages

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/messaging"
	"github.com/amsdev/ams/world"
)

// A turn that waits for approval (its assistant's require_approval names
// a tool it called) shows on its conversation's page with the calls and
// Approve / Reject; the assistant's page sets require_approval and
// multitask_strategy (DESIGN.md, "Turns an integrator builds on").

// waitingTurn is a turn of a conversation that waits, as its page shows
// it.
type waitingTurn struct {
	Turn  *ams.Turn
	Calls []waitingCall
	// Approval is set when it waits for approval (the page decides);
	// otherwise it waits for the client's tool outputs.
	Approval bool
}

// waitingCall is one call a waiting turn asks about.
type waitingCall struct {
	Name      string
	Arguments string
}

// waitingTurns returns the conversation's turns that wait (the newest
// few turns are read: at most one of a conversation waits at a time).
func (s *Server) waitingTurns(r *http.Request, c *Ctx, convID string) ([]waitingTurn, error) {
	if s.Messages == nil {
		return nil, nil
	}
	page, err := s.Messages.ListTurns(r.Context(), c.User.ID, convID, ams.ListParams{Limit: 10, Order: ams.OrderDesc})
	if err != nil {
		return nil, err
	}
	var out []waitingTurn
	for _, t := range page.Data {
		if t.Status != ams.TurnRequiresAction || t.RequiredAction == nil {
			continue
		}
		w := waitingTurn{Turn: t, Approval: t.RequiredAction.Type == ams.RequiredApproveToolCalls}
		for _, call := range t.RequiredAction.ToolCalls {
			args, _ := json.MarshalIndent(call.Arguments, "", "  ")
			w.Calls = append(w.Calls, waitingCall{Name: call.Name, Arguments: string(args)})
		}
		out = append(out, w)
	}
	return out, nil
}

// sendWait sends a message through the messaging service and waits for
// its turn: the reply, or, when the turn stopped to wait for approval or
// tool outputs, a stand-in whose ID is the waiting turn's anchor on the
// conversation's page ("turn-<id>").
func (s *Server) sendWait(r *http.Request, userID string, in messaging.SendInput) (*ams.Message, error) {
	run, err := s.Messages.Start(r.Context(), userID, in)
	if err != nil {
		return nil, err
	}
	reply, err := run.Wait(r.Context())
	if err != nil || reply != nil {
		return reply, err
	}
	t := run.Final()
	if t == nil {
		return nil, ams.Errorf(ams.EUPSTREAM, "engine_error", "The assistant's engine could not reply.")
	}
	return &ams.Message{ID: "turn-" + t.ID, ConversationID: t.ConversationID}, nil
}

// decideTurn approves or rejects every call a waiting turn asks about
// (the button pressed: decision=approve or reject), then shows the
// conversation with what the turn did next.
func (s *Server) decideTurn(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	if s.Messages == nil {
		return nil, ams.Errorf(ams.EUNAVAILABLE, "unavailable", "Approvals cannot be given from this page on this server; use the API.")
	}
	d, err := s.conversationPage(r, c, messageForm{})
	if err != nil {
		return nil, err
	}
	id := r.PathValue("turn")
	i := slices.IndexFunc(d.Waiting, func(w waitingTurn) bool { return w.Turn.ID == id && w.Approval })
	if i < 0 {
		c.Fail("approval", "This turn no longer waits for approval.")
		c.Status = http.StatusConflict
		return d, nil
	}
	approved := r.PostForm.Get("decision") == "approve"
	var as []messaging.Approval
	for _, call := range d.Waiting[i].Turn.RequiredAction.ToolCalls {
		a := messaging.Approval{ToolCallID: call.ID, Approved: approved}
		if !approved {
			a.Reason = "Rejected on the account pages."
		}
		as = append(as, a)
	}
	run, err := s.Messages.Approve(r.Context(), c.User.ID, id, c.User.Timezone, as)
	if ams.ErrorKindOf(err) == ams.ECONFLICT {
		c.Fail("approval", "This turn no longer waits for approval.")
		c.Status = http.StatusConflict
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	select {
	case <-run.Done():
	case <-r.Context().Done():
	}
	if approved {
		c.Flash(FlashSuccess, "Approved: the assistant went on.")
	} else {
		c.Flash(FlashSuccess, "Rejected: nothing was done, and the assistant was told.")
	}
	return c.Redirect(conversationPath(d.Assistant.ID, d.Conversation.ID))
}

// settings is the assistant's turn settings as its page shows them.
type settings struct {
	Tools        []toolChoice
	All          bool // require_approval ["*"]
	Strategy     string
	Strategies   []string
	CanChange    bool
	ClientTools  int
	ApprovalText string
}

// toolChoice is a built-in tool and whether its calls need approval.
type toolChoice struct {
	Name    string
	Checked bool
}

func settingsOf(a *ams.Assistant, canChange bool) settings {
	st := settings{Strategy: a.MultitaskStrategy, CanChange: canChange, ClientTools: len(a.Tools),
		Strategies: []string{ams.MultitaskEnqueue, ams.MultitaskReject, ams.MultitaskInterrupt}}
	if st.Strategy == "" {
		st.Strategy = ams.MultitaskEnqueue
	}
	st.All = slices.Contains(a.RequireApproval, "*")
	for _, n := range world.ToolNames() {
		st.Tools = append(st.Tools, toolChoice{Name: n, Checked: st.All || slices.Contains(a.RequireApproval, n)})
	}
	return st
}

// assistantSettings sets the assistant's require_approval (the built-in
// tools checked, or every tool) and multitask_strategy, through the
// service of PATCH /v1/assistants/{id}. Integration tools named in
// require_approval are kept.
func (s *Server) assistantSettings(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	a, err := s.findAssistant(r, c, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if s.World == nil {
		return nil, ams.Errorf(ams.EUNAVAILABLE, "unavailable", "The assistant's settings cannot be changed from this page on this server; use the API.")
	}
	names := []string{}
	if r.PostForm.Get("approve_all") == "on" {
		names = []string{"*"}
	} else {
		for _, n := range world.ToolNames() {
			if slices.Contains(r.PostForm["approve"], n) {
				names = append(names, n)
			}
		}
		for _, n := range a.RequireApproval {
			if n != "*" && !slices.Contains(world.ToolNames(), n) {
				names = append(names, n) // an integration's tool
			}
		}
	}
	in := world.AssistantInput{RequireApproval: world.Optional[[]string]{Set: true, Value: names},
		MultitaskStrategy: world.Optional[string]{Set: true, Value: r.PostForm.Get("multitask_strategy")}}
	if _, err := s.World.UpdateAssistant(r.Context(), c.User.ID, a.ID, in); err != nil {
		if e, ok := err.(*ams.Error); ok && e.Kind == ams.EINVALID {
			c.Fail("multitask_strategy", e.Message)
			d, perr := s.assistantPage(r, c, messageForm{})
			if perr != nil {
				return nil, perr
			}
			return d, nil
		}
		return nil, err
	}
	c.Flash(FlashSuccess, "Settings saved.")
	return c.Redirect("/account/assistants/" + a.ID)
}
