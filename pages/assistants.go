package pages

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/format"
	"github.com/amsdev/ams/messaging"
	"github.com/amsdev/ams/ratelimit"
)

// Page sizes of the assistants pages.
const (
	assistantsPerPage    = 50
	conversationsPerPage = 20
	messagesPerPage      = 50
)

// pager holds the links to the neighbouring pages of a list shown newest
// first ("" when there is none).
type pager struct {
	Newer, Older string
}

// listParams reads a page's cursor from the query (after: older than that
// record, before: newer), for a list of ids with prefix, newest first.
func listParams(r *http.Request, limit int, prefix string) (ams.ListParams, error) {
	q := r.URL.Query()
	p := ams.ListParams{Limit: limit, Order: ams.OrderDesc, After: q.Get("after"), Before: q.Get("before")}
	for name, v := range map[string]string{"after": p.After, "before": p.Before} {
		if v != "" && !ams.HasPrefixID(v, prefix) {
			return p, &ams.Error{Kind: ams.EINVALID, Code: "parameter_invalid", Param: name,
				Message: "This page link is not valid: go back to the list and follow its links."}
		}
	}
	if p.After != "" && p.Before != "" {
		return p, &ams.Error{Kind: ams.EINVALID, Code: "parameter_invalid", Param: "before",
			Message: "This page link is not valid: go back to the list and follow its links."}
	}
	return p, nil
}

// newPager returns the links around a page read with p (newest first):
// newest and oldest are the ids of its first and last records.
func newPager(base string, p ams.ListParams, hasMore bool, n int, newest, oldest string) pager {
	var pg pager
	if n == 0 {
		if p.After != "" || p.Before != "" {
			pg.Newer = base // back to the start
		}
		return pg
	}
	if p.Before != "" {
		if hasMore {
			pg.Newer = base + "?before=" + url.QueryEscape(newest)
		} else {
			pg.Newer = base
		}
		pg.Older = base + "?after=" + url.QueryEscape(oldest)
		return pg
	}
	if hasMore {
		pg.Older = base + "?after=" + url.QueryEscape(oldest)
	}
	if p.After != "" {
		pg.Newer = base + "?before=" + url.QueryEscape(newest)
	}
	return pg
}

// assistantsData is the data of the assistants list.
type assistantsData struct {
	Assistants []*ams.Assistant
	Pager      pager
}

// assistants lists the account's assistants, newest first.
func (s *Server) assistants(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	p, err := listParams(r, assistantsPerPage, ams.PrefixAssistant)
	if err != nil {
		return nil, err
	}
	page, err := s.Store.ListAssistants(r.Context(), c.User.ID, p)
	if err != nil {
		return nil, err
	}
	d := &assistantsData{Assistants: page.Data}
	if n := len(page.Data); n > 0 {
		d.Pager = newPager("/account/assistants", p, page.HasMore, n, page.Data[0].ID, page.Data[n-1].ID)
	} else {
		d.Pager = newPager("/account/assistants", p, false, 0, "", "")
	}
	return d, nil
}

// messageForm is the form that sends a message.
type messageForm struct {
	Message string
}

// assistantData is the data of an assistant's page.
type assistantData struct {
	Assistant     *ams.Assistant
	Conversations []*ams.Conversation
	Pager         pager
	Form          messageForm
	CanSend       bool // the server sends messages from the pages
	Settings      settings
}

// findAssistant returns the user's assistant id; another account's or an
// unknown id is a 404 error.
func (s *Server) findAssistant(r *http.Request, c *Ctx, id string) (*ams.Assistant, error) {
	return s.Store.FindAssistant(r.Context(), c.User.ID, id)
}

// assistantPage loads an assistant's page with the form f.
func (s *Server) assistantPage(r *http.Request, c *Ctx, f messageForm) (*assistantData, error) {
	a, err := s.findAssistant(r, c, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	c.Title = a.Name
	p, err := listParams(r, conversationsPerPage, ams.PrefixConversation)
	if err != nil {
		return nil, err
	}
	page, err := s.Store.ListConversations(r.Context(), c.User.ID, a.ID, p)
	if err != nil {
		return nil, err
	}
	base := "/account/assistants/" + url.PathEscape(a.ID)
	d := &assistantData{Assistant: a, Conversations: page.Data, Form: f, CanSend: s.Messages != nil}
	d.Settings = settingsOf(a, s.World != nil)
	if n := len(page.Data); n > 0 {
		d.Pager = newPager(base, p, page.HasMore, n, page.Data[0].ID, page.Data[n-1].ID)
	} else {
		d.Pager = newPager(base, p, false, 0, "", "")
	}
	return d, nil
}

// assistant shows an assistant, its conversations (newest first) and the
// form that starts a new one.
func (s *Server) assistant(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return s.assistantPage(r, c, messageForm{})
}

// startConversation sends the first message of a new conversation and
// shows the conversation with the reply.
func (s *Server) startConversation(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	a, err := s.findAssistant(r, c, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	f := messageForm{Message: formMessage(r)}
	reply, err := s.send(r, c, a, "", f.Message)
	if err != nil {
		return nil, err
	}
	if reply == nil {
		return s.assistantPage(r, c, f)
	}
	return c.Redirect(conversationPath(a.ID, reply.ConversationID) + "#" + reply.ID)
}

// conversationData is the data of a conversation's page.
type conversationData struct {
	Assistant    *ams.Assistant
	Conversation *ams.Conversation
	// Messages are the page's messages, oldest first.
	Messages []*ams.Message
	Pager    pager
	Form     messageForm
	CanSend  bool
	// Latest is whether the page ends with the conversation's last
	// message (the form to reply is shown below it).
	Latest bool
	// Waiting are the conversation's turns waiting for approval or for
	// tool outputs (approvals.go).
	Waiting []waitingTurn
}

func conversationPath(assistantID, conversationID string) string {
	return "/account/assistants/" + url.PathEscape(assistantID) + "/conversations/" + url.PathEscape(conversationID)
}

// conversationPage loads a conversation's page with the form f.
func (s *Server) conversationPage(r *http.Request, c *Ctx, f messageForm) (*conversationData, error) {
	ctx := r.Context()
	a, err := s.findAssistant(r, c, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	conv, err := s.Store.FindConversation(ctx, c.User.ID, r.PathValue("conv"))
	if err != nil {
		return nil, err
	}
	if conv.AssistantID != a.ID {
		return nil, ams.NotFound("conversation", conv.ID)
	}
	c.Title = conv.Title
	if strings.TrimSpace(c.Title) == "" {
		c.Title = "Conversation"
	}
	p, err := listParams(r, messagesPerPage, ams.PrefixMessage)
	if err != nil {
		return nil, err
	}
	page, err := s.Store.ListMessages(ctx, c.User.ID, conv.ID, p)
	if err != nil {
		return nil, err
	}
	msgs := page.Data // newest first
	base := conversationPath(a.ID, conv.ID)
	d := &conversationData{Assistant: a, Conversation: conv, Form: f, CanSend: s.Messages != nil}
	if n := len(msgs); n > 0 {
		d.Pager = newPager(base, p, page.HasMore, n, msgs[0].ID, msgs[n-1].ID)
	} else {
		d.Pager = newPager(base, p, false, 0, "", "")
	}
	d.Latest = d.Pager.Newer == ""
	if d.Waiting, err = s.waitingTurns(r, c, conv.ID); err != nil {
		return nil, err
	}
	d.Messages = make([]*ams.Message, len(msgs))
	for i, m := range msgs {
		d.Messages[len(msgs)-1-i] = m
	}
	return d, nil
}

// conversation shows a conversation's messages, oldest first (the last
// page: the latest ones, with links to older pages), and the form to send
// the next message.
func (s *Server) conversation(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return s.conversationPage(r, c, messageForm{})
}

// sendMessage sends a message in a conversation, then shows the
// conversation with the reply (POST → 303 → GET).
func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	ctx := r.Context()
	a, err := s.findAssistant(r, c, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	conv, err := s.Store.FindConversation(ctx, c.User.ID, r.PathValue("conv"))
	if err != nil {
		return nil, err
	}
	if conv.AssistantID != a.ID {
		return nil, ams.NotFound("conversation", conv.ID)
	}
	f := messageForm{Message: formMessage(r)}
	reply, err := s.send(r, c, a, conv.ID, f.Message)
	if err != nil {
		return nil, err
	}
	if reply == nil {
		return s.conversationPage(r, c, f) // with the form error

	}
	return c.Redirect(conversationPath(a.ID, conv.ID) + "#" + reply.ID)
}

// formMessage is the message field of the form, with the browser's CRLF
// line breaks made LF.
func formMessage(r *http.Request) string {
	return strings.ReplaceAll(r.PostForm.Get("message"), "\r\n", "\n")
}

// send sends text to assistant a (in conversation conv, or a new one when
// conv is "") through the messaging service the API uses, which validates
// it and stores nothing when it fails. It returns the reply; or nil
// after recording a form error (bad message, engine failure); or an error
// for the error page.
func (s *Server) send(r *http.Request, c *Ctx, a *ams.Assistant, conv, text string) (*ams.Message, error) {
	if s.Messages == nil {
		c.Status = http.StatusServiceUnavailable
		c.Fail("message", "Sending messages from this page is not available on this server; use the API.")
		return nil, nil
	}
	// A message sent here runs the assistant as one through the API does
	// (a model call, with --llm-base-url), so it counts against the
	// account's rate limits too.
	if d, err := s.takeRequest(r, c); ams.ErrorKindOf(err) == ams.ERATELIMIT {
		c.Status = http.StatusTooManyRequests
		c.Fail("message", fmt.Sprintf("Your plan's limit of %s requests per %s is reached; try again in %d seconds. Your message was not sent.",
			format.Number(d.Tightest().Limit), d.Tightest().Name, ratelimit.RetryAfter(d, c.Now)))
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	reply, err := s.sendWait(r, c.User.ID, messaging.SendInput{
		AssistantID: a.ID, ConversationID: conv, Message: text, Timezone: c.User.Timezone,
	})
	if err == nil {
		s.Logger.Info("message sent from the account pages", "user", c.User.ID, "assistant", a.ID, "conversation", reply.ConversationID)
		return reply, nil
	}
	var e *ams.Error
	if !errors.As(err, &e) {
		return nil, err
	}
	switch e.Kind {
	case ams.EINVALID:
		c.Fail("message", e.Message)
	case ams.EUPSTREAM:
		// The turn failed after its inbound message was stored (what its
		// tools did stays): say so, rather than that nothing was sent.
		c.Status = http.StatusBadGateway
		c.Fail("message", e.Message+" Your message is in the conversation without a reply: send it again to retry.")
	case ams.EUNAVAILABLE:
		c.Status = http.StatusServiceUnavailable
		c.Fail("message", e.Message+" Your message was not sent: try again.")
	default:
		return nil, err
	}
	return nil, nil
}
