// Package messaging runs a conversation turn: it stores the inbound
// message, asks the assistant's engine for a reply, and stores the reply,
// with their message.created events, in one transaction. The HTTP API and
// the account pages both send messages through it.
package messaging

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// HistoryLength is how many earlier messages of a conversation an engine
// sees.
const HistoryLength = 50

// Service sends messages to assistants.
type Service struct {
	Store ams.Store
	// EngineFor returns the engine that runs the assistant (chosen by its
	// model).
	EngineFor func(a *ams.Assistant) (ams.Engine, error)
	// Tools returns the toolbox an engine may use to act for the user in a
	// conversation; nil means engines may not act.
	Tools func(userID string, a *ams.Assistant, conversationID string) ams.Toolbox
	Clock ams.Clock
	// EngineTimeout bounds one reply; 0 means 60 s.
	EngineTimeout time.Duration
}

// SendInput is a message to send.
type SendInput struct {
	AssistantID    string
	Message        string
	ConversationID string // empty: start a new conversation
	// Timezone is the account's IANA time zone ("" is UTC), in which the
	// engine reads dates such as "tomorrow at 9".
	Timezone string
	// Stream, when set, receives the reply's text as the engine produces
	// it (see ams.EngineRequest.Stream).
	Stream func(delta string) error
	// Metadata is the inbound message's metadata (ams.MetadataPatch;
	// null or "" values are left out).
	Metadata ams.MetadataPatch
}

// Send delivers in.Message to the user's assistant and returns the stored
// reply. Errors: EINVALID for bad input, ENOTFOUND (param assistant_id or
// conversation_id) for an assistant or conversation the user does not
// have, EUPSTREAM when the engine fails. On any error nothing is stored.
func (s *Service) Send(ctx context.Context, userID string, in SendInput) (*ams.Message, error) {
	if strings.TrimSpace(in.Message) == "" {
		return nil, ams.ParamError("parameter_invalid", "message", "The message must not be empty.")
	}
	if len(in.Message) > ams.MaxMessageLength {
		return nil, ams.ParamError("parameter_invalid", "message", "The message is longer than %d bytes.", ams.MaxMessageLength)
	}
	if !utf8.ValidString(in.Message) {
		return nil, ams.ParamError("parameter_invalid", "message", "The message is not valid UTF-8.")
	}
	if strings.ContainsRune(in.Message, 0) {
		return nil, ams.ParamError("parameter_invalid", "message", "The message must not contain NUL characters.")
	}
	md, err := in.Metadata.Merge(ams.Metadata{}, "metadata")
	if err != nil {
		return nil, err
	}
	a, err := s.Store.FindAssistant(ctx, userID, in.AssistantID)
	if err != nil {
		return nil, withParam(err, "assistant_id")
	}
	now := s.Clock.Now()
	x := &ams.Exchange{ConversationID: in.ConversationID}
	var history []*ams.Message
	if in.ConversationID == "" {
		x.NewConversation = &ams.Conversation{
			ID: ams.NewID(ams.PrefixConversation), Object: "conversation", UserID: userID, AssistantID: a.ID,
			Title: Title(in.Message), LastMessageAt: now, CreatedAt: now, UpdatedAt: now,
		}
		x.ConversationID = x.NewConversation.ID
	} else {
		c, err := s.Store.FindConversation(ctx, userID, in.ConversationID)
		if err != nil {
			return nil, withParam(err, "conversation_id")
		}
		if c.AssistantID != a.ID {
			return nil, ams.ParamError("parameter_invalid", "conversation_id",
				"Conversation '%s' belongs to assistant '%s', not '%s'.", c.ID, c.AssistantID, a.ID)
		}
		if history, err = s.Store.RecentMessages(ctx, userID, c.ID, HistoryLength); err != nil {
			return nil, err
		}
	}
	x.Inbound = &ams.Message{
		ID: ams.NewID(ams.PrefixMessage), Object: "message", UserID: userID, AssistantID: a.ID,
		ConversationID: x.ConversationID, Direction: ams.DirectionInbound, Content: in.Message, Metadata: md,
		CreatedAt: now, UpdatedAt: now,
	}
	engine, err := s.EngineFor(a)
	if err != nil {
		return nil, err
	}
	timeout := s.EngineTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	loc := time.UTC
	if in.Timezone != "" {
		if l, err := time.LoadLocation(in.Timezone); err == nil {
			loc = l
		}
	}
	req := &ams.EngineRequest{Assistant: a, History: append(history, x.Inbound), Now: now, Location: loc, Stream: in.Stream}
	if s.Tools != nil {
		req.Tools = s.Tools(userID, a, x.ConversationID)
	}
	reply, err := engine.Reply(ectx, req)
	cancel()
	if err != nil {
		if ctx.Err() != nil { // the caller went away; not the engine's fault
			return nil, ctx.Err()
		}
		var ae *ams.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, &ams.Error{Kind: ams.EUPSTREAM, Code: "engine_error",
			Message: fmt.Sprintf("The assistant's engine could not reply: %s", engineReason(err))}
	}
	if strings.TrimSpace(reply.Content) == "" {
		return nil, &ams.Error{Kind: ams.EUPSTREAM, Code: "engine_error", Message: "The assistant's engine returned an empty reply."}
	}
	at := s.Clock.Now()
	if at.Before(now) {
		at = now
	}
	x.Reply = &ams.Message{
		ID: ams.NewID(ams.PrefixMessage), Object: "message", UserID: userID, AssistantID: a.ID,
		ConversationID: x.ConversationID, Direction: ams.DirectionOutbound, Content: reply.Content, Metadata: ams.Metadata{},
		CreatedAt: at, UpdatedAt: at,
	}
	x.Events = []*ams.Event{ams.MessageCreatedEvent(x.Inbound), ams.MessageCreatedEvent(x.Reply)}
	if err := s.Store.SaveExchange(ctx, x); err != nil {
		return nil, err
	}
	return x.Reply, nil
}

// engineReason says why an engine failed without exposing internal text:
// only a timeout is named.
func engineReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "it did not answer in time."
	}
	return "it failed."
}

// withParam names param on a not-found error.
func withParam(err error, param string) error {
	var e *ams.Error
	if errors.As(err, &e) && e.Kind == ams.ENOTFOUND {
		c := *e
		c.Param = param
		return &c
	}
	return err
}

// Title returns a conversation title from its first message: the first
// line, at most 80 characters.
func Title(msg string) string {
	line := strings.TrimSpace(msg)
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	if utf8.RuneCountInString(line) <= 80 {
		return line
	}
	r := []rune(line)
	return strings.TrimSpace(string(r[:79])) + "…"
}
