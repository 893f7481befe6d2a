package messaging

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// TestStreamDataAsJSON checks that streamData writes what json.Marshal
// writes for the data of a turn's events, byte for byte.
func TestStreamDataAsJSON(t *testing.T) {
	at := time.Date(2026, 11, 28, 21, 30, 0, 5e6, time.FixedZone("CET", 3600))
	texts := []string{"", "Hello", "<script>&amp;</script>", "a\u2028b", "\xff\xfe", "tab\t\"\\\x00"}
	var values []any
	for _, s := range texts {
		values = append(values, DeltaData{Delta: s},
			&ams.Message{ID: "msg_1", Object: "message", Content: s, Metadata: ams.Metadata{"k": s}, CreatedAt: at, UpdatedAt: at},
			&ams.Turn{ID: "trn_1", Object: "turn", Status: ams.TurnFailed, StopReason: s, CreatedAt: at, UpdatedAt: at,
				Error: &ams.ActionError{Type: "api_error", Message: s}},
			ErrorData{Error: &ams.ActionError{Type: "api_error", Message: s}})
	}
	values = append(values, (*ams.Message)(nil), (*ams.Turn)(nil), &ams.Turn{})
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := streamData(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("streamData(%T) =\n%s\nwant\n%s", v, got, want)
		}
	}
}
