package webhook

import (
	"context"
	"time"

	"github.com/amsdev/ams"
)

// TestEvent returns a test event of type typ (one of ams.EventTypes) of
// account u at now: its data is a made-up record of the type, shaped as a
// real event of that type carries it (the record, its ids fresh: they name
// no record of the account), *.updated events carry previous_attributes,
// and the envelope says "test": true, so that a receiver handles it as it
// would a real one and can still tell it apart. account.updated carries
// the account itself.
func TestEvent(u *ams.User, typ string, now time.Time) *ams.Event {
	now = now.UTC().Truncate(time.Millisecond)
	e := testEvent(u, typ, now)
	e.ID, e.Object, e.UserID, e.Type, e.CreatedAt, e.Test = ams.NewID(ams.PrefixEvent), "event", u.ID, typ, now, true
	return e
}

// testEvent makes the record of a test event of typ; TestEvent sets the
// envelope.
func testEvent(u *ams.User, typ string, now time.Time) *ams.Event {
	astID, convID := ams.NewID(ams.PrefixAssistant), ams.NewID(ams.PrefixConversation)
	later := now.Add(24 * time.Hour)
	remind := later.Add(-time.Hour)
	md := ams.Metadata{}
	switch typ {
	case ams.EventMessageCreated, ams.EventMessageUpdated, ams.EventMessageDeleted:
		m := &ams.Message{ID: ams.NewID(ams.PrefixMessage), Object: "message", UserID: u.ID, AssistantID: astID, ConversationID: convID,
			Direction: ams.DirectionInbound, Content: "This is a test message from ams.", Metadata: md, CreatedAt: now, UpdatedAt: now}
		switch typ {
		case ams.EventMessageCreated:
			return ams.MessageCreatedEvent(m)
		case ams.EventMessageDeleted:
			return ams.MessageDeletedEvent(m, now)
		}
		e := ams.MessageEvent(typ, m, now)
		e.PreviousAttributes = map[string]any{"content": "This was a test message from ams."}
		return e
	case ams.EventTaskCreated, ams.EventTaskCompleted, ams.EventTaskUpdated, ams.EventTaskReminder, ams.EventTaskDeleted:
		t := &ams.Task{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: u.ID, AssistantID: astID, Title: "Test task from ams",
			Status: ams.TaskOpen, DueAt: &later, RemindAt: &remind, Metadata: md, CreatedAt: now, UpdatedAt: now}
		if typ == ams.EventTaskCompleted {
			t.Status, t.CompletedAt = ams.TaskCompleted, &now
		}
		e := ams.TaskEvent(typ, t, now)
		if typ == ams.EventTaskUpdated {
			e.PreviousAttributes = map[string]any{"title": "Test task"}
		}
		return e
	case ams.EventEventCreated, ams.EventEventUpdated, ams.EventEventReminder, ams.EventEventDeleted, ams.EventEventRestored:
		c := &ams.CalendarEvent{ID: ams.NewID(ams.PrefixCalendar), Object: "calendar_event", UserID: u.ID, AssistantID: astID,
			Title: "Test event from ams", StartsAt: later, EndsAt: later.Add(time.Hour), RemindAt: &remind, Metadata: md, CreatedAt: now, UpdatedAt: now}
		if typ == ams.EventEventDeleted {
			c.DeletedAt, c.DeletedBy = &now, ams.DeletedByAPI
		}
		e := ams.CalendarEventEvent(typ, c, now)
		if typ == ams.EventEventUpdated {
			e.PreviousAttributes = map[string]any{"title": "Test event"}
		}
		return e
	case ams.EventIntegrationConnected, ams.EventIntegrationDisconnected, ams.EventIntegrationError:
		in := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", UserID: u.ID, Provider: "caldav",
			Status: ams.IntegrationConnected, Config: map[string]any{}, ConnectedAt: now, CreatedAt: now, UpdatedAt: now}
		switch typ {
		case ams.EventIntegrationDisconnected:
			in.Status = ams.IntegrationDisconnected
		case ams.EventIntegrationError:
			msg := "test: the calendar server answered 503"
			in.Status, in.LastError = ams.IntegrationError, &msg
		}
		e := ams.IntegrationEvent(typ, in, now)
		if in.LastError != nil {
			e.Data["error"] = *in.LastError
		}
		return e
	case ams.EventWebhookFailing:
		return ams.WebhookFailingEvent(u.ID, ams.NewID(ams.PrefixWebhook), "https://example.com/webhooks/ams",
			"Test: delivery of an event failed 5 times in a row; the last attempt: the receiver answered 503.", now)
	case ams.EventWebhookEnabled:
		return ams.WebhookEnabledEvent(&ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: "https://example.com/webhooks/ams"}, now)
	case ams.EventWebhookDegraded, ams.EventWebhookRecovered:
		code, msg := 503, "the receiver answered 503"
		if typ == ams.EventWebhookRecovered {
			code = 200
			return ams.WebhookHealthEvent(typ, u.ID, ams.NewID(ams.PrefixWebhook), "https://example.com/webhooks/ams", &code, nil, ams.WebhookDegradedAfter, now)
		}
		return ams.WebhookHealthEvent(typ, u.ID, ams.NewID(ams.PrefixWebhook), "https://example.com/webhooks/ams", &code, &msg, ams.WebhookDegradedAfter, now)
	case ams.EventAPIKeyCreated, ams.EventAPIKeyRevoked:
		k := &ams.APIKey{ID: ams.NewID(ams.PrefixAPIKey), Object: "api_key", UserID: u.ID, Name: "Test key", Hint: ams.KeyHint("ams_sk_test0000"),
			Permissions: ams.Permissions{ams.PermRead}, CreatedAt: now}
		if typ == ams.EventAPIKeyRevoked {
			k.RevokedAt = &now
		}
		return ams.APIKeyEvent(typ, k, now)
	case ams.EventOAuthClientCreated, ams.EventOAuthClientSecretRotated, ams.EventOAuthClientDeleted:
		c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: u.ID, Name: "Test app",
			RedirectURIs: []string{"https://example.com/oauth/callback"}, CreatedAt: now, UpdatedAt: now}
		return ams.OAuthClientEvent(typ, c, now)
	case ams.EventAccountUpdated:
		return ams.AccountUpdatedEvent(u, map[string]any{"timezone": "UTC"}, now)
	case ams.EventAssistantCreated, ams.EventAssistantUpdated, ams.EventAssistantDeleted:
		a := &ams.Assistant{ID: astID, Object: "assistant", UserID: u.ID, Name: "Test assistant", Model: ams.ModelBuiltin, Metadata: md, CreatedAt: now, UpdatedAt: now}
		e := ams.AssistantEvent(typ, a, now)
		if typ == ams.EventAssistantUpdated {
			e.PreviousAttributes = map[string]any{"name": "Test"}
		}
		return e
	case ams.EventConversationCreated, ams.EventConversationUpdated, ams.EventConversationDeleted:
		c := &ams.Conversation{ID: convID, Object: "conversation", UserID: u.ID, AssistantID: astID, Title: "Test conversation",
			LastMessageAt: now, Metadata: md, CreatedAt: now, UpdatedAt: now}
		e := ams.ConversationEvent(typ, c, now)
		if typ == ams.EventConversationUpdated {
			e.PreviousAttributes = map[string]any{"title": "Test"}
		}
		return e
	case ams.EventTurnRequiresAction, ams.EventTurnCompleted, ams.EventTurnFailed, ams.EventTurnCancelled:
		t := &ams.Turn{ID: ams.NewID(ams.PrefixTurn), Object: "turn", UserID: u.ID, AssistantID: astID, ConversationID: convID,
			InboundMessageID: ams.NewID(ams.PrefixMessage), MultitaskStrategy: ams.MultitaskEnqueue, ActionIDs: []string{},
			Usage: ams.Usage{InputTokens: 12, OutputTokens: 8, TotalTokens: 20}, CreatedAt: now, UpdatedAt: now}
		switch typ {
		case ams.EventTurnRequiresAction:
			t.Status, t.StopReason = ams.TurnRequiresAction, ams.StopRequiresAction
			t.RequiredAction = &ams.RequiredAction{Type: ams.RequiredSubmitToolOutputs, ExpiresAt: now.Add(10 * time.Minute),
				ToolCalls: []*ams.ToolCallRequest{{ID: ams.NewID(ams.PrefixCall), Name: "lookup_order", Arguments: []byte(`{"order_id":"A-1"}`)}}}
		case ams.EventTurnCompleted:
			t.Status, t.StopReason, t.ReplyMessageID, t.CompletedAt = ams.TurnCompleted, ams.StopEndTurn, ams.NewID(ams.PrefixMessage), &now
		case ams.EventTurnFailed:
			t.Status, t.StopReason, t.CompletedAt = ams.TurnFailed, ams.StopError, &now
			t.Error = &ams.ActionError{Type: "api_error", Code: "engine_error", Message: "This is a test failure from ams."}
		case ams.EventTurnCancelled:
			t.Status, t.StopReason, t.CompletedAt = ams.TurnCancelled, ams.StopCancelled, &now
			t.Error = &ams.ActionError{Type: "invalid_request_error", Code: "turn_cancelled", Message: "The turn was cancelled."}
		}
		return ams.TurnLifecycleEvent(t, now)
	}
	// A type without a sample (a later addition): its ids only.
	return &ams.Event{Data: map[string]any{}}
}

// Trigger stores a test event of type typ (one of ams.EventTypes) for the
// account and returns it: it is listed at GET /v1/events, sent on the
// account's event streams (GET /v1/events/stream, which ams listen
// forwards) and delivered to the webhooks that subscribe to typ, like
// any event of its type (filters included), with a made-up record of
// the type as its data (TestEvent) and "test": true. An unknown type is
// EINVALID naming "type"; an account on the waitlist may not trigger (as
// it may not ping). The caller checks that management types
// (ams.IsManagementEvent) are asked for with admin.
func (s *Service) Trigger(ctx context.Context, userID, typ string) (*ams.Event, error) {
	if typ == "" {
		return nil, ams.ParamError("parameter_missing", "type", "'type' is required: an event type such as %s.", ams.EventMessageCreated)
	}
	if !ams.IsEventType(typ) {
		return nil, ams.ParamError("parameter_invalid", "type", "Unknown event type '%s'.", ams.Clip(typ))
	}
	u, err := s.Store.FindUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	if !u.Approved() {
		return nil, ams.ErrWaitlistedWebhooks()
	}
	e := TestEvent(u, typ, s.Clock.Now())
	ams.KeepAnswer(ctx, e)
	if err := s.Store.Update(ctx, func(tx Tx) error { return tx.Emit(ctx, e) }); err != nil {
		return nil, err
	}
	return e, nil
}
