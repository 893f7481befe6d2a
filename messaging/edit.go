package messaging

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// CheckContent validates a message's text as Send does: not blank, at
// most ams.MaxMessageLength bytes, valid UTF-8, no NUL. param names the
// field in the error.
func CheckContent(text, param string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return ams.ParamError("parameter_invalid", param, "The %s must not be empty.", param)
	case len(text) > ams.MaxMessageLength:
		return ams.ParamError("parameter_invalid", param, "The %s is longer than %d bytes.", param, ams.MaxMessageLength)
	case !utf8.ValidString(text):
		return ams.ParamError("parameter_invalid", param, "The %s is not valid UTF-8.", param)
	case strings.ContainsRune(text, 0):
		return ams.ParamError("parameter_invalid", param, "The %s must not contain NUL characters.", param)
	}
	return nil
}

// MessageUpdate holds the fields of a message to change (the body of
// PATCH /v1/messages/{id}); at least one must be given.
type MessageUpdate struct {
	Content  *string
	Metadata ams.MetadataPatch
}

// EditMessage replaces the content of message id (UpdateMessage with
// content only).
func (s *Service) EditMessage(ctx context.Context, userID, id, content string) (*ams.Message, error) {
	return s.UpdateMessage(ctx, userID, id, MessageUpdate{Content: &content})
}

// UpdateMessage replaces the content and merges the metadata of message
// id, and emits message.updated, in one transaction. Only the content of
// inbound messages (the user's program's own) may be edited: an
// assistant's reply is its record of what it said, so changing its
// content (given at all) is EINVALID with code message_not_editable; its
// metadata may change. An update that changes nothing leaves the message as it is and
// emits nothing. Another account's message is ENOTFOUND.
func (s *Service) UpdateMessage(ctx context.Context, userID, id string, in MessageUpdate) (*ams.Message, error) {
	if in.Content == nil && !in.Metadata.Set {
		return nil, ams.ParamError("parameter_missing", "content", "Give 'content', 'metadata' or both.")
	}
	if in.Content != nil {
		if err := CheckContent(*in.Content, "content"); err != nil {
			return nil, err
		}
	}
	if err := in.Metadata.Check("metadata"); err != nil {
		return nil, err
	}
	var out *ams.Message
	err := s.Store.Update(ctx, func(tx Tx) error {
		m, err := tx.FindMessage(ctx, userID, id)
		if err != nil {
			return err
		}
		out = m
		was := ams.MessageEvent(ams.EventMessageUpdated, m, m.UpdatedAt)
		changed := false
		if in.Content != nil && m.Direction != ams.DirectionInbound {
			return ams.Errorf(ams.EINVALID, "message_not_editable",
				"Message '%s' is the assistant's reply (direction %s); only inbound messages can be edited.", m.ID, m.Direction)
		}
		if in.Content != nil && *in.Content != m.Content {
			m.Content, changed = *in.Content, true
		}
		md, err := in.Metadata.Merge(m.Metadata, "metadata")
		if err != nil {
			return err
		}
		if !md.Equal(m.Metadata) {
			m.Metadata, changed = md, true
		}
		if !changed {
			return nil
		}
		now := s.Clock.Now()
		if now.Before(m.CreatedAt) {
			now = m.CreatedAt
		}
		m.UpdatedAt = now
		if err := tx.UpdateMessage(ctx, m); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.MessageEvent(ams.EventMessageUpdated, m, now).Since(was))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteMessage deletes message id, inbound or outbound, and emits
// message.deleted (its data is the message as it was), in one
// transaction. The conversation stays, counted one message fewer.
func (s *Service) DeleteMessage(ctx context.Context, userID, id string) error {
	return s.Store.Update(ctx, func(tx Tx) error {
		m, err := tx.FindMessage(ctx, userID, id)
		if err != nil {
			return err
		}
		now := s.Clock.Now()
		if err := tx.DeleteMessage(ctx, userID, id, now); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.MessageEvent(ams.EventMessageDeleted, m, now))
	})
}
