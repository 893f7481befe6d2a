package http_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/amsdev/ams"
)

// TestGetMessageAnswer pins what GET /v1/messages/{id} answers, byte for
// byte: the body (fields in order, HTML characters and control characters
// escaped as json.Marshal escapes them, timestamps with three decimals, a
// newline at the end), its Content-Type and Content-Length, the request id
// and the rate-limit headers; and that query parameters are still
// checked.
func TestGetMessageAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	text := "Tags <b> & \"quotes\"\n\u2028 é"
	reply := f.send(text, "")
	conv, _ := reply["conversation_id"].(string)
	page, err := f.Data.ListMessages(context.Background(), f.User.ID, conv, ams.ListParams{Limit: 10, Order: ams.OrderAsc})
	if err != nil || len(page.Data) != 2 {
		t.Fatalf("messages: %v %v", page, err)
	}
	m := page.Data[0]
	r := f.do("GET", "/v1/messages/"+m.ID, "")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	want := `{"id":"` + m.ID + `","object":"message","assistant_id":"` + f.Assistant.ID + `","conversation_id":"` + m.ConversationID +
		`","direction":"inbound","content":"Tags \u003cb\u003e \u0026 \"quotes\"\n\u2028 é","metadata":{},"created_at":"` +
		ams.FormatTime(m.CreatedAt) + `","updated_at":"` + ams.FormatTime(m.UpdatedAt) + "\"}\n"
	if string(r.body) != want {
		t.Errorf("body\n%s\nwant\n%s", r.body, want)
	}
	h := r.header
	if h.Get("Content-Type") != "application/json" || h.Get("Content-Length") != strconv.Itoa(len(want)) ||
		!strings.HasPrefix(h.Get("X-Request-Id"), ams.PrefixRequest) || h.Get("X-RateLimit-Limit") != "60" ||
		h.Get("RateLimit-Policy") != `"minute";q=60;w=60, "day";q=10000;w=86400` || !strings.HasPrefix(h.Get("RateLimit"), `"minute";r=`) {
		t.Errorf("headers: %v", h)
	}
	wantError(t, f.do("GET", "/v1/messages/"+m.ID+"?expand=x", ""), 400, "invalid_request_error", "unknown_parameter", "expand")
	wantError(t, f.do("GET", "/v1/messages/"+m.ID+"?x%FF=1", ""), 400, "invalid_request_error", "invalid_encoding", "x\uFFFD")
	if r := f.do("GET", "/v1/messages/"+m.ID+"?", ""); r.status != 200 || string(r.body) != want {
		t.Errorf("with an empty query: %d %s", r.status, r.body)
	}
}
