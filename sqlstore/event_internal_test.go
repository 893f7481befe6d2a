package sqlstore

import (
	"encoding/json"
	"errors"
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

// TestEventDataColumnAsBefore: the data column encodeEventData writes
// in one buffer is, byte for byte, the column as it was written before
// (json.Marshal of the data, of each envelope extra, joined), with every
// combination of extras, empty and nil data.
func TestEventDataColumnAsBefore(t *testing.T) {
	turn, key, tp := "trn_<1>", "key\u2028&", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	datas := []map[string]any{nil, {}, {"id": "msg_1", "content": "<b>\"hi\"</b>", "n": 3, "meta": ams.Metadata{"k": "v"}}}
	for _, data := range datas {
		for _, req := range []*ams.EventRequest{nil, {ID: "req_1"}, {ID: "req_2", IdempotencyKey: &key}} {
			for _, tid := range []*string{nil, &turn} {
				for _, prev := range []map[string]any{nil, {}, {"title": "old"}} {
					for _, trace := range []string{"", tp} {
						for _, test := range []bool{false, true} {
							e := &ams.Event{ID: "evt_1", Data: data, Request: req, TurnID: tid, PreviousAttributes: prev, Trace: trace, Test: test}
							want, wantErr := encodeEventDataBefore(e)
							got, err := encodeEventData(e)
							if (err != nil) != (wantErr != nil) || string(got) != string(want) {
								t.Fatalf("%+v: data column %s (%v), want %s (%v)", e, got, err, want, wantErr)
							}
						}
					}
				}
			}
		}
	}
}

// encodeEventDataBefore is encodeEventData as it was written before it
// wrote into one buffer (issue 33).
func encodeEventDataBefore(e *ams.Event) ([]byte, error) {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return nil, err
	}
	if e.Request == nil && e.TurnID == nil && e.PreviousAttributes == nil && e.Trace == "" && !e.Test {
		return data, nil
	}
	var head []string
	if e.Request != nil {
		r, _ := json.Marshal(e.Request)
		head = append(head, `"`+keyRequest+`":`+string(r))
	}
	if e.TurnID != nil {
		id, _ := json.Marshal(*e.TurnID)
		head = append(head, `"`+keyTurnID+`":`+string(id))
	}
	if e.PreviousAttributes != nil {
		p, _ := json.Marshal(e.PreviousAttributes)
		head = append(head, `"`+keyPrevious+`":`+string(p))
	}
	if e.Trace != "" {
		tp, _ := json.Marshal(e.Trace)
		head = append(head, `"`+keyTrace+`":`+string(tp))
	}
	if e.Test {
		head = append(head, `"`+keyTest+`":true`)
	}
	if len(data) < 2 || data[0] != '{' {
		return nil, errors.New("not an object")
	}
	out := "{" + strings.Join(head, ",")
	if len(data) > 2 {
		out += ","
	}
	return []byte(out + string(data[1:])), nil
}
