package ams

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"unicode/utf8"
)

// Limits of metadata, Stripe's: keys per record, characters per key and
// per value.
const (
	MaxMetadataKeys     = 50
	MaxMetadataKeyLen   = 40
	MaxMetadataValueLen = 500
)

// Metadata is the set of key-value pairs a client attaches to a record
// (assistants, conversations, messages, tasks, calendar events, webhooks)
// for its own use: at most MaxMetadataKeys keys of 1 to MaxMetadataKeyLen
// characters, each with a string value of at most MaxMetadataValueLen
// characters. ams never reads it. It encodes as a JSON object, {} when
// empty (never null).
type Metadata map[string]string

// MarshalJSON implements json.Marshaler: nil is {}.
func (m Metadata) MarshalJSON() ([]byte, error) {
	if len(m) == 0 { // most records have none: no map encoding for them
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]string(m))
}

// Equal reports whether m and o hold the same pairs (nil and empty are
// equal).
func (m Metadata) Equal(o Metadata) bool { return maps.Equal(m, o) }

// MetadataPatch is the metadata field of a request as the client sent it:
// a JSON object whose string values set keys and whose null or ""
// values remove them (Stripe's rule). Set is false when the request had no
// metadata field. It decodes from any JSON value, so that ParseMetadata or
// Merge, not the decoder, reports what is wrong with it.
type MetadataPatch struct {
	Set bool
	Raw json.RawMessage
}

// UnmarshalJSON implements json.Unmarshaler; it keeps the value as given.
func (p *MetadataPatch) UnmarshalJSON(b []byte) error {
	p.Set = true
	p.Raw = bytes.Clone(b)
	return nil
}

// pairs reads the patch: each key with its new value, nil to remove it.
// param names the field in errors ("metadata", or "input.metadata").
func (p MetadataPatch) pairs(param string) (map[string]*string, error) {
	raw := bytes.TrimSpace(p.Raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, ParamError("parameter_invalid", param, "'%s' must be an object of string values.", param)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, ParamError("parameter_invalid", param, "'%s' must be an object of string values.", param)
	}
	keys := slices.Sorted(maps.Keys(m))
	out := make(map[string]*string, len(m))
	for _, k := range keys {
		kp := Clip(param + "." + k)
		if k == "" || utf8.RuneCountInString(k) > MaxMetadataKeyLen {
			return nil, ParamError("parameter_invalid", kp, "Metadata keys must be 1 to %d characters long.", MaxMetadataKeyLen)
		}
		if !ValidText(k) {
			return nil, ParamError("parameter_invalid", kp, "Metadata keys must be valid UTF-8 text without NUL characters.")
		}
		v := bytes.TrimSpace(m[k])
		if string(v) == "null" {
			out[k] = nil
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, ParamError("parameter_invalid", kp, "Metadata values must be strings (null or \"\" removes a key).")
		}
		if utf8.RuneCountInString(s) > MaxMetadataValueLen {
			return nil, ParamError("parameter_invalid", kp, "Metadata values must be at most %d characters long.", MaxMetadataValueLen)
		}
		if !ValidText(s) {
			return nil, ParamError("parameter_invalid", kp, "Metadata values must be valid UTF-8 text without NUL characters.")
		}
		if s == "" {
			out[k] = nil
			continue
		}
		out[k] = &s
	}
	return out, nil
}

// Check validates the patch on its own (its shape, keys and values), so
// that a request can be refused before anything is read or written. The
// count of keys is checked by Merge, on the result.
func (p MetadataPatch) Check(param string) error {
	if !p.Set {
		return nil
	}
	_, err := p.pairs(param)
	return err
}

// Merge returns m with the patch applied: string values set their keys,
// null and "" remove theirs, keys not named stay. m itself is not
// changed. The result may hold at most MaxMetadataKeys keys. Every error
// is EINVALID naming param, or param.<key> for one pair. A patch that is
// not Set returns m.
func (p MetadataPatch) Merge(m Metadata, param string) (Metadata, error) {
	if !p.Set {
		return m, nil
	}
	pairs, err := p.pairs(param)
	if err != nil {
		return nil, err
	}
	out := make(Metadata, len(m)+len(pairs))
	maps.Copy(out, m)
	for k, v := range pairs {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	if len(out) > MaxMetadataKeys {
		return nil, ParamError("parameter_invalid", param, "Metadata may hold at most %d keys; this would make %d.", MaxMetadataKeys, len(out))
	}
	return out, nil
}

// EncodeMetadata returns m as the JSON text the stores keep ("{}" when
// empty).
func EncodeMetadata(m Metadata) string {
	b, _ := m.MarshalJSON() // a map of strings always encodes
	return string(b)
}

// DecodeMetadata reads the JSON text a store keeps; "" or null is empty.
func DecodeMetadata(s string) (Metadata, error) {
	m := Metadata{}
	if s == "" || s == "null" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	return m, nil
}
