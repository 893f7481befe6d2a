package world

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// Limits of the text fields of tasks and calendar events, in bytes.
const (
	MaxTitle = 500
	MaxText  = 10_000 // notes, description
	MaxPlace = 500    // location
)

// object is a JSON input object being read field by field, so that every
// error names the field at fault (param, with prefix: "input.due_at" for a
// tool's input, "due_at" for a request body). The first error is kept;
// later reads are no-ops.
type object struct {
	m      map[string]json.RawMessage
	prefix string
	err    error
}

// parseObject reads raw as a JSON object whose keys are all in allowed.
func parseObject(raw json.RawMessage, prefix string, allowed ...string) (*object, error) {
	o := &object{prefix: prefix}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, ams.ParamError("parameter_invalid", strings.TrimSuffix(prefix, "."), "The input must be a JSON object.")
	}
	if err := json.Unmarshal(raw, &o.m); err != nil {
		return nil, ams.ParamError("parameter_invalid", strings.TrimSuffix(prefix, "."), "The input is not valid JSON.")
	}
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return nil, ams.ParamError("unknown_parameter", ams.Clip(prefix+k), "Unknown field '%s'; allowed: %s.", ams.Clip(k), strings.Join(allowed, ", "))
		}
	}
	return o, nil
}

func (o *object) fail(code, name, format string, args ...any) {
	if o.err == nil {
		o.err = ams.ParamError(code, o.prefix+name, format, args...)
	}
}

// has reports whether the field is present (null included).
func (o *object) has(name string) bool { _, ok := o.m[name]; return ok }

// isNull reports whether the field is present and null.
func (o *object) isNull(name string) bool {
	v, ok := o.m[name]
	return ok && string(bytes.TrimSpace(v)) == "null"
}

// str reads a string field of at most max bytes (0: no limit beyond
// validity), its line endings normalised ("\r\n" and "\r" become "\n",
// before the length is checked). Absent or null gives "" and false;
// required makes that an error.
func (o *object) str(name string, required bool, max int) (string, bool) {
	if !o.has(name) || o.isNull(name) {
		if required {
			o.fail("parameter_missing", name, "The field '%s' is required.", name)
		}
		return "", false
	}
	var s string
	if err := json.Unmarshal(o.m[name], &s); err != nil {
		o.fail("parameter_invalid", name, "The field '%s' must be a string.", name)
		return "", false
	}
	// Line endings are "\n" in what is stored: a "\r" would be kept as it
	// is in JSON but cannot be written in iCalendar (the feed, CalDAV).
	s = ams.NormalizeNewlines(s)
	switch {
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		o.fail("parameter_invalid", name, "The field '%s' must be valid UTF-8 text without NUL characters.", name)
	case max > 0 && len(s) > max:
		o.fail("parameter_invalid", name, "The field '%s' is longer than %d bytes.", name, max)
	case required && strings.TrimSpace(s) == "":
		o.fail("parameter_invalid", name, "The field '%s' must not be empty.", name)
	}
	return s, true
}

// metadataPatch reads the metadata field as a patch (not Set when
// absent), its pairs checked (the count is checked when it is merged).
func (o *object) metadataPatch() ams.MetadataPatch {
	v, ok := o.m["metadata"]
	if !ok {
		return ams.MetadataPatch{}
	}
	p := ams.MetadataPatch{Set: true, Raw: v}
	if err := p.Check(o.prefix + "metadata"); err != nil && o.err == nil {
		o.err = err
	}
	return p
}

// metadata reads the metadata field of a record to create: the pairs
// given, with null and "" values left out; empty when absent.
func (o *object) metadata(base ams.Metadata) ams.Metadata {
	p := o.metadataPatch()
	if o.err != nil {
		return base
	}
	m, err := p.Merge(base, o.prefix+"metadata")
	if err != nil {
		o.err = err
		return base
	}
	return m
}

// timeField is a time read from input: absent (Set false), null (Set
// true, Value nil), or a time.
type timeField struct {
	Set   bool
	Value *time.Time
}

// time reads an RFC 3339 time; null is allowed only when nullable.
func (o *object) time(name string, nullable bool) timeField {
	if !o.has(name) {
		return timeField{}
	}
	if o.isNull(name) {
		if !nullable {
			o.fail("parameter_invalid", name, "The field '%s' must be a time, not null.", name)
		}
		return timeField{Set: true}
	}
	var s string
	if err := json.Unmarshal(o.m[name], &s); err != nil {
		o.fail("parameter_invalid", name, "The field '%s' must be an RFC 3339 time string such as \"2026-11-21T09:00:00Z\".", name)
		return timeField{}
	}
	t, err := ParseTime(s)
	if err != nil {
		o.fail("parameter_invalid", name, "The field '%s' is not an RFC 3339 time such as \"2026-11-21T09:00:00Z\": '%s'.", name, clip(s))
		return timeField{}
	}
	return timeField{Set: true, Value: &t}
}

// integer reads an integer field within [lo, hi]; absent gives def.
func (o *object) integer(name string, lo, hi, def int) int {
	if !o.has(name) || o.isNull(name) {
		return def
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(o.m[name]))
	d.UseNumber()
	if err := d.Decode(&n); err != nil {
		o.fail("parameter_invalid", name, "The field '%s' must be an integer.", name)
		return def
	}
	v, err := n.Int64()
	if err != nil || v < int64(lo) || v > int64(hi) {
		o.fail("parameter_invalid", name, "The field '%s' must be an integer from %d to %d.", name, lo, hi)
		return def
	}
	return int(v)
}

// enum reads a string field that must be one of values; absent gives "".
func (o *object) enum(name string, values ...string) string {
	s, ok := o.str(name, false, 0)
	if ok && !slices.Contains(values, s) {
		o.fail("parameter_invalid", name, "The field '%s' must be one of %s.", name, strings.Join(values, ", "))
		return ""
	}
	return s
}

// ParseTime reads an RFC 3339 time (fractional seconds allowed) and
// returns it in UTC, truncated to the millisecond the stores keep. Years
// outside 1970..9999 are refused, checked in UTC, after the offset is
// applied: "9999-12-31T23:59:59-23:59" is in the year 10000 and refused,
// as "1970-01-01T00:00:00+01:00" (1969) is.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, err
	}
	t = t.UTC()
	if t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, fmt.Errorf("year %d (in UTC) out of range", t.Year())
	}
	return t.Truncate(time.Millisecond), nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	r := []rune(s)
	if len(r) > 40 {
		r = r[:40]
	}
	return string(r) + "…"
}
