package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/world"
)

// Helpers the handlers of several entities share: reading a body and
// query parameters, and writing an answer.

// readObject reads the request body, which must be one JSON object (the
// checks of decodeJSON: not empty, valid JSON, nothing after it), and
// returns it for world.Service to read field by field.
func readObject(r *http.Request) (json.RawMessage, error) {
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSpace(b)), nil
}

// checkAssistantField refuses an assistant_id in body that is a string
// but not an assistant id (400, as POST /v1/messages does); world.Service
// reports the other errors of the field.
func checkAssistantField(body json.RawMessage) error {
	var m struct {
		AssistantID json.RawMessage `json:"assistant_id"`
	}
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	var id string
	if json.Unmarshal(m.AssistantID, &id) == nil && m.AssistantID != nil && string(m.AssistantID) != "null" && !ams.HasPrefixID(id, ams.PrefixAssistant) {
		return ams.ParamError("parameter_invalid", "assistant_id", "'assistant_id' must be an assistant id (ast_...).")
	}
	return nil
}

// queryTime reads an optional RFC 3339 time query parameter, in UTC and
// to the nanosecond given (the store rounds it to its milliseconds as the
// comparison needs).
func queryTime(r *http.Request, name string) (*time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	if _, err := world.ParseTime(v); err != nil {
		return nil, ams.ParamError("parameter_invalid", name, "'%s' must be an RFC 3339 time such as 2026-11-21T09:00:00Z.", name)
	}
	t, _ := time.Parse(time.RFC3339Nano, strings.TrimSpace(v)) // ParseTime accepted it
	t = t.UTC()
	return &t, nil
}

// queryAssistant reads the optional assistant_id filter.
func queryAssistant(r *http.Request) (string, error) {
	a := r.URL.Query().Get("assistant_id")
	if a != "" && !ams.HasPrefixID(a, ams.PrefixAssistant) {
		return "", ams.ParamError("parameter_invalid", "assistant_id", "'assistant_id' must be an assistant id (ast_...).")
	}
	return a, nil
}

// bodyTime reads an optional RFC 3339 time of a request body.
func bodyTime(v *string, name string) (*time.Time, error) {
	if v == nil {
		return nil, nil
	}
	t, err := world.ParseTime(*v)
	if err != nil {
		return nil, ams.ParamError("parameter_invalid", name, "'%s' must be an RFC 3339 time such as 2026-11-21T09:00:00Z.", name)
	}
	return &t, nil
}

// noBody refuses any body other than empty or {} (the route's prelude
// has refused query parameters).
func noBody(r *http.Request) error {
	if r.ContentLength == 0 {
		return nil
	}
	var v struct{}
	return decodeJSON(r, &v)
}

// noStore marks an answer that shows a secret once: no cache keeps it. An
// Idempotency-Key replays it (the same secret, sealed at rest with the
// key for ams.IdempotencyTTL; see storedAnswers).
func noStore(w http.ResponseWriter) { w.Header().Set("Cache-Control", "no-store") }

// withField returns rec's JSON object with one more field, name: value,
// at its end.
func withField(rec any, name string, value any) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("withField: %T does not encode as an object", rec)
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+len(name)+len(v)+4)
	out = append(out, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, name...)
	out = append(out, '"', ':')
	out = append(out, v...)
	return append(out, '}'), nil
}
