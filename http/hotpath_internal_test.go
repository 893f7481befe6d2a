package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// TestEncodeJSONAsEncoder checks that writeJSON's direct call of a
// record's MarshalJSON writes what json.Encoder (HTML left as is, a
// newline at the end) wrote before, byte for byte: records, pointers to
// them, nil pointers (null), values without MarshalJSON, and this
// package's own encoders.
func TestEncodeJSONAsEncoder(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 18, 30, 0, 120e6, time.UTC)
	m := &ams.Message{ID: "msg_1", Object: "message", UserID: "usr_1", AssistantID: "ast_1", ConversationID: "conv_1",
		Direction: ams.DirectionOutbound, Content: "a <b> & \"c\"\n\u2028 é \x01", Metadata: ams.Metadata{"k": "<v>"}, CreatedAt: at, UpdatedAt: at}
	var nilMsg *ams.Message
	exp := at.Add(time.Hour)
	rec := &ams.APIKeyRecord{ID: "key_1", CreatedAt: at, ExpiresAt: &exp}
	for name, v := range map[string]any{
		"message":        m,
		"message value":  *m,
		"nil message":    nilMsg,
		"empty metadata": &ams.Message{ID: "msg_2"},
		"conversation":   &ams.Conversation{ID: "conv_1", Title: "<t>", CreatedAt: at},
		"created key":    createdKey{APIKeyRecord: rec, Secret: "ams_sk_<x>"},
		"map":            map[string]string{"status": "ok", "b": "<&>"},
		"list":           listBody[*ams.Message]{Object: "list", Data: []*ams.Message{m, m}},
		"metadata":       ams.Metadata{"a": "b"},
		"nil metadata":   ams.Metadata(nil),
		"error body":     errorBody{},
		"string":         "<html>",
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w := httptest.NewRecorder()
		if err := writeJSON(w, 200, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := w.Body.String(); got != want.String() {
			t.Errorf("%s: writeJSON wrote\n%s\nwant\n%s", name, got, want.String())
		}
		if cl := w.Header().Get("Content-Length"); cl != itoa(want.Len()) {
			t.Errorf("%s: Content-Length %s, want %d", name, cl, want.Len())
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestRateLimitHeaders checks setRateLimitHeaders against the headers
// written one by one, for small, large and zero figures, a reset in the
// past, now and a fraction of a second ahead, and each window; and that a
// value added later to one header leaves the others alone.
func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 21, 40, 0, 250e6, time.UTC)
	for _, limits := range []ams.Limits{{PerMinute: 60, PerDay: 10_000}, {PerMinute: 1_000_000_000, PerDay: 2_000_000_000}, {}} {
		for _, win := range []ams.RateWindow{
			{Name: "minute", Limit: 60, Remaining: 59, Reset: now.Add(61 * time.Second)},
			{Name: "day", Limit: 10_000, Remaining: 0, Reset: now.Add(1500 * time.Millisecond)},
			{Name: "minute", Limit: 1_000_000_000, Remaining: 999_999_999, Reset: now},
			{Name: "day", Limit: 5, Remaining: 5, Reset: now.Add(-time.Hour)},
		} {
			want := http.Header{}
			want.Set("X-RateLimit-Limit", strconv.Itoa(win.Limit))
			want.Set("X-RateLimit-Remaining", strconv.Itoa(win.Remaining))
			want.Set("X-RateLimit-Reset", strconv.FormatInt(ceilUnix(win.Reset), 10))
			want.Set("RateLimit-Policy", `"minute";q=`+strconv.Itoa(limits.PerMinute)+`;w=60, "day";q=`+strconv.Itoa(limits.PerDay)+`;w=86400`)
			want.Set("RateLimit", `"`+win.Name+`";r=`+strconv.Itoa(win.Remaining)+`;t=`+strconv.FormatInt(secondsUntil(now, win.Reset), 10))
			got := http.Header{}
			setRateLimitHeaders(got, limits, win, now)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("limits %+v, window %+v:\n got %v\nwant %v", limits, win, got, want)
			}
			got.Add("X-RateLimit-Limit", "x")
			if got.Get("X-RateLimit-Remaining") != want.Get("X-RateLimit-Remaining") {
				t.Errorf("adding to one header changed another: %v", got)
			}
		}
	}
}
