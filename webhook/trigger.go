package webhook

import (
	"context"
	"time"

	"github.com/amsdev/ams"
)

// TestEventData is the data of a test event (Trigger): it carries no
// record, so a receiver tells it from a real event by "test": true.
func TestEventData() map[string]any {
	return map[string]any{"test": true}
}

// TestEvent returns a test event of type typ of the account userID.
func TestEvent(userID, typ string, now time.Time) *ams.Event {
	return &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: userID, Type: typ, CreatedAt: now, Data: TestEventData()}
}

// Trigger stores a test event of type typ (one of ams.EventTypes) for the
// account and returns it: it is listed at GET /v1/events, sent on the
// account's event streams (GET /v1/events/stream, which ams listen
// forwards) and delivered to the webhooks that subscribe to typ, like
// any event of its type, but its data is only {"test": true}. An
// unknown type is EINVALID naming "type"; an account on the waitlist may
// not trigger (as it may not ping). The caller checks that management
// types (ams.IsManagementEvent) are asked for with admin.
func (s *Service) Trigger(ctx context.Context, userID, typ string) (*ams.Event, error) {
	if typ == "" {
		return nil, ams.ParamError("parameter_missing", "type", "'type' is required: an event type such as %s.", ams.EventMessageCreated)
	}
	if !ams.IsEventType(typ) {
		return nil, ams.ParamError("parameter_invalid", "type", "Unknown event type '%s'.", ams.Clip(typ))
	}
	if err := s.approved(ctx, userID); err != nil {
		return nil, err
	}
	e := TestEvent(userID, typ, s.Clock.Now())
	ams.KeepAnswer(ctx, e)
	if err := s.Store.Update(ctx, func(tx Tx) error { return tx.Emit(ctx, e) }); err != nil {
		return nil, err
	}
	return e, nil
}
