package messaging

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// MaxTitle is the longest conversation title accepted, in characters.
const MaxTitle = 200

// ConversationInput holds the fields of a conversation to create or
// change (the body of POST and PATCH /v1/conversations). AssistantID is
// required on create and refused on update.
type ConversationInput struct {
	AssistantID *string
	Title       *string
	Metadata    ams.MetadataPatch
}

// checkTitle validates a title and returns it trimmed.
func checkTitle(t string) (string, error) {
	t = strings.TrimSpace(t)
	if !ams.ValidText(t) {
		return "", ams.ParamError("parameter_invalid", "title", "'title' must be valid UTF-8 text without NUL characters.")
	}
	if utf8.RuneCountInString(t) > MaxTitle {
		return "", ams.ParamError("parameter_invalid", "title", "'title' is longer than %d characters.", MaxTitle)
	}
	return t, nil
}

// CreateConversation starts an empty conversation of userID with the
// assistant in.AssistantID, with its title ("" when not given: a
// conversation created here does not take its first message's) and
// metadata. It emits no event (the interface has none for
// conversations). ENOTFOUND (param assistant_id) for an assistant the
// user does not have.
func (s *Service) CreateConversation(ctx context.Context, userID string, in ConversationInput) (*ams.Conversation, error) {
	if in.AssistantID == nil {
		return nil, ams.ParamError("parameter_missing", "assistant_id", "Missing required parameter 'assistant_id'.")
	}
	var title string
	if in.Title != nil {
		var err error
		if title, err = checkTitle(*in.Title); err != nil {
			return nil, err
		}
	}
	md, err := in.Metadata.Merge(ams.Metadata{}, "metadata")
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now().UTC().Truncate(time.Millisecond)
	c := &ams.Conversation{ID: ams.NewID(ams.PrefixConversation), Object: "conversation", UserID: userID, AssistantID: *in.AssistantID,
		Title: title, Metadata: md, LastMessageAt: now, CreatedAt: now, UpdatedAt: now}
	err = s.Store.Update(ctx, func(tx Tx) error {
		if _, err := tx.FindAssistant(ctx, userID, c.AssistantID); err != nil {
			return ams.WithParam(err, "assistant_id")
		}
		ams.KeepAnswer(ctx, c)
		if err := tx.CreateConversation(ctx, c); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.ConversationEvent(ams.EventConversationCreated, c, now))
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// UpdateConversation changes the title and merges the metadata of
// conversation id. Bad input is refused whether the conversation exists
// or not; an input that changes nothing keeps updated_at.
func (s *Service) UpdateConversation(ctx context.Context, userID, id string, in ConversationInput) (*ams.Conversation, error) {
	if in.AssistantID != nil {
		return nil, ams.ParamError("parameter_invalid", "assistant_id", "A conversation's assistant cannot be changed.")
	}
	var title string
	if in.Title != nil {
		var err error
		if title, err = checkTitle(*in.Title); err != nil {
			return nil, err
		}
	}
	if err := in.Metadata.Check("metadata"); err != nil {
		return nil, err
	}
	var out *ams.Conversation
	err := s.Store.Update(ctx, func(tx Tx) error {
		c, err := tx.FindConversation(ctx, userID, id)
		if err != nil {
			return err
		}
		out = c
		was := ams.ConversationEvent(ams.EventConversationUpdated, c, c.UpdatedAt)
		md, err := in.Metadata.Merge(c.Metadata, "metadata")
		if err != nil {
			return err
		}
		changed := !md.Equal(c.Metadata) || in.Title != nil && title != c.Title
		c.Metadata = md
		if in.Title != nil {
			c.Title = title
		}
		if !changed {
			return nil
		}
		if now := s.Clock.Now().UTC().Truncate(time.Millisecond); now.After(c.UpdatedAt) {
			c.UpdatedAt = now
		}
		if err := tx.UpdateConversation(ctx, c); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.ConversationEvent(ams.EventConversationUpdated, c, c.UpdatedAt).Since(was))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteConversation deletes conversation id with its messages, and
// emits message.deleted for each message (its data the message as it
// was), all in one transaction. The actions run in the conversation stay,
// with its id in their conversation_id: they are the record of what the
// assistant did, and tasks or events they made are not deleted.
func (s *Service) DeleteConversation(ctx context.Context, userID, id string) error {
	return s.Store.Update(ctx, func(tx Tx) error {
		c, err := tx.FindConversation(ctx, userID, id)
		if err != nil {
			return err
		}
		msgs, err := tx.DeleteConversation(ctx, userID, id)
		if err != nil {
			return err
		}
		now := s.Clock.Now()
		events := make([]*ams.Event, 0, len(msgs)+1)
		for _, m := range msgs {
			events = append(events, ams.MessageEvent(ams.EventMessageDeleted, m, now))
		}
		events = append(events, ams.ConversationEvent(ams.EventConversationDeleted, c, now))
		return tx.Emit(ctx, events...)
	})
}
