package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// decodeJSON reads the request body into v, refusing malformed JSON,
// text that is not valid UTF-8 or holds a NUL, duplicate keys, a body
// that is not an object (null included), unknown fields, wrong types,
// a null where an object is required (checkNulls) and trailing data,
// each with an error that names the parameter at fault.
func decodeJSON(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	return checkNulls(b, reflect.TypeOf(v))
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkNulls refuses a JSON null in b, the body decoded into a value of
// type t, where t's field (at any depth, through maps and arrays) is an
// object: a struct or a map, or a pointer to one. encoding/json would
// take such a null as if the field were absent (or an empty map). A type
// that decodes itself (json.Unmarshaler, such as world.Optional or
// json.RawMessage) decides what its null means and is left alone.
func checkNulls(b []byte, t reflect.Type) error {
	if !bytes.Contains(b, []byte("null")) {
		return nil // the common case: no null to look for
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if dec.Decode(&tree) != nil {
		return nil // checkJSON and Decode have refused what cannot be read
	}
	return nullAt(tree, t, "")
}

// nullAt is checkNulls for the value val at path, to be decoded into t.
func nullAt(val any, t reflect.Type, path string) error {
	for {
		if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
			return nil
		}
		if t.Kind() != reflect.Pointer {
			break
		}
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if val == nil && path != "" {
			path = ams.Clip(path)
			return ams.ParamError("invalid_type", path, "'%s' must be of type object, not null.", path)
		}
	}
	join := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	switch t.Kind() {
	case reflect.Struct:
		m, _ := val.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if f, ok := jsonField(t, k); ok {
				if err := nullAt(m[k], f.Type, join(k)); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		m, _ := val.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := nullAt(m[k], t.Elem(), join(k)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		a, _ := val.([]any)
		for i, e := range a {
			if err := nullAt(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonField returns the field of struct type t that encoding/json
// decodes the key into: the one of that name, else one whose name
// matches it ignoring case.
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	var fold *reflect.StructField
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous && f.Tag.Get("json") == "" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = &f
		}
	}
	if fold != nil {
		return *fold, true
	}
	return reflect.StructField{}, false
}

// readBody reads the request body, which must be one JSON object whose
// every key and string is valid text (ams.ValidText), with no key twice
// in an object, and nothing after it (checkJSON).
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, bodyReadError(err)
	}
	if err := checkJSON(b); err != nil {
		return nil, err
	}
	return b, nil
}

// MaxJSONDepth is how deeply a request body's objects and arrays may
// nest: the body itself is depth 1. A deeper body is refused before
// anything else is done with it.
const MaxJSONDepth = 64

// checkJSON walks the JSON text b token by token and refuses, naming the
// parameter's path (a.b, a[2].c): a body that is not a single JSON object
// (`null` included); objects and arrays nested more than MaxJSONDepth
// deep (invalid_json); a key or string that is invalid UTF-8 or holds a
// NUL (invalid_encoding), since encoding/json would silently replace the
// one with U+FFFD and PostgreSQL cannot store the other; and a key given
// twice in one object (duplicate_key), which encoding/json would take
// the last of.
//
// Its work and memory grow with len(b) alone, whatever the body's shape:
// the stack of open containers holds each one's current key or index,
// and a path is built only for the error that names it.
func checkJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []jsonFrame
	wantKey := false
	// done advances the enclosing container past one value.
	done := func() {
		if len(stack) == 0 {
			return
		}
		if f := &stack[len(stack)-1]; f.object {
			wantKey = true
		} else {
			f.index++
		}
	}
	start := int64(0)
	for first := true; ; first = false {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if first {
				return jsonError(io.EOF)
			}
			return jsonError(io.ErrUnexpectedEOF)
		}
		if err != nil {
			return jsonError(err)
		}
		end := dec.InputOffset()
		raw := b[start:end]
		start = end
		if first {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				if tok == nil {
					return ams.Errorf(ams.EINVALID, "invalid_json", "The request body must be a JSON object, not null.")
				}
				return ams.Errorf(ams.EINVALID, "invalid_json", "The request body must be a JSON object.")
			}
		}
		if s, ok := tok.(string); ok && (!ams.ValidText(s) || !utf8.Valid(raw)) {
			path := jsonPath(stack, true)
			if wantKey {
				path = jsonPath(stack, false)
				if path == "" {
					return ams.Errorf(ams.EINVALID, "invalid_encoding",
						"A key of the request body is not valid UTF-8 or holds a NUL character.")
				}
			}
			path = ams.Clip(path)
			return ams.ParamError("invalid_encoding", path,
				"'%s' is not valid UTF-8 or holds a NUL character.", path)
		}
		switch {
		case wantKey && tok != json.Delim('}'):
			f := &stack[len(stack)-1]
			k := tok.(string)
			f.key = k
			if _, dup := f.keys[k]; dup {
				p := ams.Clip(jsonPath(stack, true))
				return ams.ParamError("duplicate_key", p, "'%s' is given more than once in the request body.", p)
			}
			if f.keys == nil {
				f.keys = map[string]struct{}{}
			}
			f.keys[k] = struct{}{}
			wantKey = false
		case tok == json.Delim('{') || tok == json.Delim('['):
			if len(stack) == MaxJSONDepth {
				p := ams.Clip(jsonPath(stack, true))
				return ams.ParamError("invalid_json", p,
					"The request body nests objects and arrays more than %d levels deep, at '%s'.", MaxJSONDepth, p)
			}
			stack = append(stack, jsonFrame{object: tok == json.Delim('{')})
			wantKey = tok == json.Delim('{')
		case tok == json.Delim('}') || tok == json.Delim(']'):
			stack = stack[:len(stack)-1]
			wantKey = false
			done()
		default:
			done()
		}
		if len(stack) == 0 {
			break
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ams.Errorf(ams.EINVALID, "invalid_json", "The request body must hold a single JSON object.")
	}
	return nil
}

// jsonFrame is one open object or array of checkJSON's walk.
type jsonFrame struct {
	object bool
	keys   map[string]struct{} // the object's keys so far; nil until the first
	key    string              // the object's current key
	index  int                 // the array's next index
}

// jsonPath returns the path (a.b, a[2].c) of the value that the next
// token of the walk starts (child), or of the innermost open container
// (!child).
func jsonPath(stack []jsonFrame, child bool) string {
	if !child {
		if len(stack) == 0 {
			return ""
		}
		stack = stack[:len(stack)-1]
	}
	var sb strings.Builder
	for _, f := range stack {
		if f.object {
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(f.key)
		} else {
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(f.index))
			sb.WriteByte(']')
		}
	}
	return sb.String()
}

func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return bodyReadError(err)
	case errors.Is(err, io.EOF):
		return ams.Errorf(ams.EINVALID, "invalid_json", "The request body is empty; it must be a JSON object.")
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
		return ams.Errorf(ams.EINVALID, "invalid_json", "The request body is not valid JSON.")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return ams.Errorf(ams.EINVALID, "invalid_json", "The request body must be a JSON object.")
		}
		// typ.Value is "number 123…" for a number out of range: the
		// client's digits, clipped like any quoted input.
		field := ams.Clip(typ.Field)
		return ams.ParamError("invalid_type", field, "'%s' must be of type %s, not %s.", field, jsonTypeName(typ.Type.Kind().String()), ams.Clip(typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := ams.Clip(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
		return ams.ParamError("unknown_parameter", field, "Unknown parameter '%s'.", field)
	}
	return ams.Errorf(ams.EINVALID, "invalid_json", "The request body could not be decoded as JSON.")
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	default:
		return "number"
	}
}

// query checks a request's query parameters: any not in allowed (besides
// the list parameters when list is true) is refused.
func checkQuery(q url.Values, list bool, allowed ...string) error {
	for k := range q {
		if list && slices.Contains([]string{"limit", "after", "before", "order"}, k) {
			continue
		}
		if !slices.Contains(allowed, k) {
			k = ams.Clip(k)
			return ams.ParamError("unknown_parameter", k, "Unknown query parameter '%s'.", k)
		}
	}
	return nil
}

// listParams parses limit, after, before and order (the route's prelude
// has refused the parameters the route does not accept).
func listParams(r *http.Request) (ams.ListParams, error) {
	q := r.URL.Query()
	p := ams.ListParams{Limit: 20, Order: ams.OrderDesc, After: q.Get("after"), Before: q.Get("before")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return p, ams.ParamError("parameter_invalid", "limit", "'limit' must be an integer from 1 to 100.")
		}
		p.Limit = n
	}
	if p.After != "" && p.Before != "" {
		return p, ams.ParamError("parameter_invalid", "before", "Give at most one of 'after' and 'before'.")
	}
	switch o := q.Get("order"); o {
	case "", ams.OrderDesc:
	case ams.OrderAsc:
		p.Order = ams.OrderAsc
	default:
		return p, ams.ParamError("parameter_invalid", "order", "'order' must be 'asc' or 'desc'.")
	}
	return p, nil
}

// listBody is the list envelope of DESIGN.md.
type listBody[T any] struct {
	Object  string  `json:"object"`
	Data    []T     `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// writeList answers a page as the list envelope.
func writeList[T any](w http.ResponseWriter, page *ams.Page[T], id func(T) string) error {
	b := listBody[T]{Object: "list", Data: page.Data, HasMore: page.HasMore}
	if n := len(page.Data); n > 0 {
		first, last := id(page.Data[0]), id(page.Data[n-1])
		b.FirstID, b.LastID = &first, &last
	}
	return writeJSON(w, http.StatusOK, b)
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeJSON answers v as JSON with status, as json.Encoder writes it (HTML
// characters left as they are, a newline at the end). A record with its
// own MarshalJSON (the records of package ams, for their timestamps) is
// asked directly and its bytes are the answer: json.Encoder would copy
// them and compact them again, a second pass over the answer that
// changes nothing, since every MarshalJSON of ams and of this package
// returns compact JSON (json.Marshal's, or written alike).
func writeJSON(w http.ResponseWriter, status int, v any) error {
	if m, ok := v.(json.Marshaler); ok && !isNilPointer(v) {
		b, err := m.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode response: %w", err)
		}
		return writeBody(w, status, append(b, '\n'))
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 {
			buf.Reset()
			bufPool.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends with a newline
		return fmt.Errorf("encode response: %w", err)
	}
	return writeBody(w, status, buf.Bytes())
}

// writeBody answers body, JSON, with status.
func writeBody(w http.ResponseWriter, status int, body []byte) error {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// isNilPointer reports whether v is a nil pointer, which json encodes as
// null (its MarshalJSON, on a value receiver, cannot be called).
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
