package sqlstore

import (
	"strings"
	"testing"

	"github.com/amsdev/ams"
)

// TestEventTraceRoundTrip: an event's trace context is kept in its data
// column under $trace and taken out of Data again, beside the other
// envelope extras.
func TestEventTraceRoundTrip(t *testing.T) {
	turn := "trn_1"
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, e := range []*ams.Event{
		{ID: "evt_1", Data: map[string]any{"id": "msg_1"}, Trace: tp},
		{ID: "evt_2", Data: map[string]any{}, Trace: tp, TurnID: &turn, Request: &ams.EventRequest{ID: "req_1"}},
		{ID: "evt_3", Data: map[string]any{"id": "msg_1"}},
	} {
		b, err := encodeEventData(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), `"$trace":"`+tp+`"`); got != (e.Trace != "") {
			t.Fatalf("%s: data column %s", e.ID, b)
		}
		var back ams.Event
		if err := decodeEventData(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Trace != e.Trace || len(back.Data) != len(e.Data) {
			t.Fatalf("%s: decoded trace %q data %v, want %q %v", e.ID, back.Trace, back.Data, e.Trace, e.Data)
		}
		if _, ok := back.Data["$trace"]; ok {
			t.Fatalf("%s: $trace left in Data", e.ID)
		}
	}
}
