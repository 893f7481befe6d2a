package webhook_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/webhook"
)

// envelope is the body of a delivery as a struct, which json.Marshal
// encodes by reflection: what Body must write, byte for byte.
type envelope struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	Type      string            `json:"type"`
	CreatedAt ams.JSONTime      `json:"created_at"`
	Request   *ams.EventRequest `json:"request"`
	TurnID    *string           `json:"turn_id"`
	Previous  map[string]any    `json:"previous_attributes,omitempty"`
	Test      bool              `json:"test,omitempty"`
	Data      map[string]any    `json:"data"`
}

// TestBodyAsReflection checks that Body writes what json.Marshal writes
// for the event's envelope, for events with and without each optional
// field and with text that needs escaping.
func TestBodyAsReflection(t *testing.T) {
	at := time.Date(2026, 11, 28, 21, 30, 0, 7e6, time.FixedZone("CET", 3600))
	key, turn := "key <&> \u2028", "trn_\xff"
	m := &ams.Message{ID: "msg_1", UserID: "usr_1", AssistantID: "ast_1", ConversationID: "conv_1", Direction: ams.DirectionInbound,
		Content: "<script>\"hi\"\n</script>", Metadata: ams.Metadata{"k": "v&"}, CreatedAt: at, UpdatedAt: at}
	var events []*ams.Event
	for _, req := range []*ams.EventRequest{nil, {ID: "req_1"}, {ID: "req_<2>", IdempotencyKey: &key}} {
		for _, tid := range []*string{nil, &turn} {
			for _, prev := range []map[string]any{nil, {}, {"title": "old <t>", "n": 1.5}} {
				for _, test := range []bool{false, true} {
					e := ams.MessageCreatedEvent(m)
					e.Request, e.TurnID, e.PreviousAttributes, e.Test = req, tid, prev, test
					events = append(events, e)
				}
			}
		}
	}
	tu := &ams.Turn{ID: "trn_1", UserID: "usr_1", Status: ams.TurnCompleted, CreatedAt: at, UpdatedAt: at}
	events = append(events, ams.TurnLifecycleEvent(tu, at), &ams.Event{ID: "evt_\x00", Type: "x", CreatedAt: time.Time{}},
		&ams.Event{ID: "evt_far", Type: "x", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Data: map[string]any{}})
	for _, e := range events {
		want, err := json.Marshal(envelope{ID: e.ID, Object: "event", Type: e.Type, CreatedAt: ams.JSONTime(e.CreatedAt),
			Request: e.Request, TurnID: e.TurnID, Previous: e.PreviousAttributes, Test: e.Test, Data: e.Data})
		if err != nil {
			t.Fatal(err)
		}
		got, err := webhook.Body(e)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("Body =\n%s\nwant\n%s", got, want)
		}
	}
	if _, err := webhook.Body(&ams.Event{ID: "evt_1", Data: map[string]any{"f": func() {}}}); err == nil {
		t.Error("Body of data that does not encode: no error")
	}
}
