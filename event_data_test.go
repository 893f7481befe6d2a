package ams

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestDirectEventDataAsRecord checks that the events whose data is built
// field by field (ConversationEvent, TurnLifecycleEvent) carry what the
// record's own JSON holds, as recordEvent would make it.
func TestDirectEventDataAsRecord(t *testing.T) {
	at := time.Date(2026, 11, 28, 21, 30, 0, 5e6, time.FixedZone("CET", 3600))
	done := at.Add(time.Minute)
	for _, s := range messageJSONTexts() {
		for _, meta := range []Metadata{nil, {}, {"a": s}} {
			c := &Conversation{ID: "conv_" + s, Object: "conversation", UserID: "usr_1", AssistantID: "ast_1", Title: s,
				MessageCount: 3, LastMessageAt: at, Metadata: meta, CreatedAt: at, UpdatedAt: done}
			sameData(t, ConversationEvent(EventConversationCreated, c, at), recordEvent(EventConversationCreated, c.UserID, "conversation", c, at))
		}
		for _, tu := range []*Turn{
			{ID: "trn_" + s, Object: "turn", UserID: "usr_1", AssistantID: "ast_1", ConversationID: "conv_1", Status: TurnCompleted,
				InboundMessageID: "msg_1", ReplyMessageID: s, StopReason: s, CreatedAt: at, UpdatedAt: at, CompletedAt: &done,
				ActionIDs: []string{"act_1", s}, Background: true, MultitaskStrategy: MultitaskInterrupt},
			{ID: "trn_1", Object: "turn", Status: TurnFailed, Error: &ActionError{Type: "api_error", Code: s, Message: s}, CreatedAt: at, UpdatedAt: at},
			{ID: "trn_1", Object: "turn", Status: TurnCancelled, CancelRequested: true},
		} {
			sameData(t, TurnLifecycleEvent(tu, at), recordEvent(EventTurnCompleted, tu.UserID, "turn", tu, at))
		}
	}
}

// sameData checks that got's data is want's, once stored: the same JSON
// value (a nested record may keep its fields' order, which decoding
// does not see).
func sameData(t *testing.T, got, want *Event) {
	t.Helper()
	var g, w any
	for _, c := range []struct {
		e   *Event
		out *any
	}{{got, &g}, {want, &w}} {
		b, err := MarshalData(c.e.Data)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, c.out); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s data =\n%v\nwant\n%v", got.Type, g, w)
	}
}
