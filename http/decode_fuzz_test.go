package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/world"
)

// The shapes of body the handlers decode into: pointers for optional
// fields, world.Optional (its own UnmarshalJSON), slices, maps of any,
// raw JSON and nested objects. They are declared here, not taken from the
// handlers, so that the target follows decodeJSON rather than any one
// route.
type (
	fuzzFlat struct {
		Name   *string   `json:"name"`
		Count  *int64    `json:"count"`
		Active *bool     `json:"active"`
		Tags   *[]string `json:"tags"`
	}
	fuzzRaw struct {
		Type  *string         `json:"type"`
		Input json.RawMessage `json:"input"`
	}
	fuzzNested struct {
		Inner *fuzzFlat          `json:"inner"`
		List  []fuzzFlat         `json:"list"`
		Map   map[string]float64 `json:"map"`
	}
)

// fuzzBodies returns a new value of each body type decodeJSON is fuzzed
// with, selected by which.
func fuzzBody(which uint8) any {
	switch which % 7 {
	case 0:
		return new(fuzzFlat)
	case 1:
		return new(fuzzRaw)
	case 2:
		return new(fuzzNested)
	case 3:
		return new(world.AssistantInput)
	case 4:
		return new(world.ConnectInput)
	case 5:
		return new(struct{}) // the body-less POST routes
	default:
		return new(map[string]any)
	}
}

func fuzzDecode(body []byte, v any) error {
	r := httptest.NewRequest(http.MethodPost, "/v1/fuzz", bytes.NewReader(body))
	r.Body = http.MaxBytesReader(nil, r.Body, MaxBodyBytes)
	return decodeJSON(r, v)
}

// FuzzDecodeJSON: whatever body decodeJSON is given, it never panics; a
// refusal is an *ams.Error answered with a 4xx status, whose message and
// param quote at most about ams.MaxQuoted characters of the body; a body
// it accepts
// re-encodes, and the re-encoded body is accepted again and decodes to the
// same value (encoding it once more gives the same bytes).
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, ``, `null`, `[]`, `"x"`, `1`, `{"name":"a"}`, `{"name":null}`, `{"name":1}`,
		`{"name":"a","name":"b"}`, `{"name":"a"} {}`, `{"name":"a"}garbage`, `{"nope":1}`,
		`{"count":9223372036854775808}`, `{"count":1.5}`, `{"count":-0}`, `{"active":"true"}`,
		`{"tags":["a",1]}`, `{"tags":null}`, "{\"name\":\"\xff\xfe\"}", `{"name":"\u0000"}`,
		`{"name":"\ud800"}`, `{"type":"x","input":{"a":[1,{"b":null}]}}`, `{"input":  [ 1 , 2 ] }`,
		`{"inner":{"name":"a","count":2},"list":[{},{"active":true}],"map":{"a":1e308}}`,
		`{"map":{"a":1e309}}`, `{"name":"a","description":null,"instructions":"b","model":"builtin"}`,
		`{"provider":"caldav","config":{"url":"https://x"},"secrets":{"password":"p"}}`,
		`{"config":null}`, `{"NAME":"case"}`, "\ufeff{}", ` { } `, "{\"name\":\"a\"}\n",
		`{"a":{"b":{"c":{"d":{"e":[[[[[]]]]]}}}}}`, `{"name":"` + string(make([]byte, 200)) + `"}`,
		`{"count":` + strings.Repeat("9", 300) + `}`, `{"` + strings.Repeat("k", 300) + `":1}`,
		`{"inner":null}`, `{"list":[null]}`, `{"map":null}`, `{"secrets":null}`, `{"description":null}`,
	} {
		for which := range uint8(7) {
			f.Add(which, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		v := fuzzBody(which)
		err := fuzzDecode(body, v)
		if err != nil {
			var ae *ams.Error
			if !errors.As(err, &ae) {
				t.Fatalf("decode %q: %T %v, want an *ams.Error", body, err, err)
			}
			if st, ok := kindStatus[ae.Kind]; !ok || st < 400 || st > 499 {
				t.Fatalf("decode %q: kind %v (status %d), want a 4xx: %v", body, ae.Kind, st, err)
			}
			if ae.Code == "" || ae.Message == "" {
				t.Fatalf("decode %q: error without code or message: %#v", body, ae)
			}
			if q := quoted(ae.Message, body); q != "" {
				t.Fatalf("decode %.200q: message quotes more than %d characters of the body: %.300q", body, ams.MaxQuoted, q)
			}
			if n := utf8.RuneCountInString(ae.Param); n > ams.MaxQuoted+1 {
				t.Fatalf("decode %.200q: param of %d characters: %.300q", body, n, ae.Param)
			}
			return
		}
		enc, err := fuzzReencode(v)
		if err != nil {
			t.Fatalf("decode %q accepted a value that does not encode: %v", body, err)
		}
		w := fuzzBody(which)
		if err := fuzzDecode(enc, w); err != nil {
			t.Fatalf("decode %q accepted; its encoding %s is refused: %v", body, enc, err)
		}
		again, err := fuzzReencode(w)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, again) {
			t.Fatalf("decode %q: encoding is not stable:\n%s\n%s", body, enc, again)
		}
	})
}

// quoted returns the first run of the message longer than ams.MaxQuoted
// characters (with a margin for the message's own words around a quote)
// that is also in the body, or "".
func quoted(msg string, body []byte) string {
	r := []rune(msg)
	n := ams.MaxQuoted + 20
	for i := 0; i+n <= len(r); i++ {
		if w := string(r[i : i+n]); bytes.Contains(body, []byte(w)) {
			return w
		}
	}
	return ""
}

// fuzzReencode encodes a decoded body as a client would send it again:
// a field whose value is null is left out (decodeJSON refuses null for
// an object field, and takes it as absent for the others). world.Optional
// has no MarshalJSON: a field set is its value or null, a field not set
// is left out.
func fuzzReencode(v any) ([]byte, error) {
	a, ok := v.(*world.AssistantInput)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var tree any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			return nil, err
		}
		return json.Marshal(dropNulls(tree))
	}
	m := map[string]any{}
	for name, o := range map[string]world.Optional[string]{"name": a.Name, "description": a.Description,
		"instructions": a.Instructions, "model": a.Model} {
		switch {
		case o.Set && o.Null:
			m[name] = nil
		case o.Set:
			m[name] = o.Value
		}
	}
	return json.Marshal(m)
}

// dropNulls removes the null-valued keys of every object in v.
func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else {
				v[k] = dropNulls(e)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = dropNulls(e)
		}
	}
	return v
}
