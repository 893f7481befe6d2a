package ams

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
)

// MarshalData returns the JSON of m, an event's data (or its
// previous_attributes), byte for byte as json.Marshal(m) writes it: keys
// sorted, strings escaped as json.Marshal escapes them. Every event is
// encoded when it is stored and again in each delivery's body, and
// json.Marshal reads a map through reflection and sorts its keys with
// reflect values; this writes the values events hold (strings, numbers,
// booleans, nil, Metadata, nested maps and slices of them, times) directly
// and hands anything else to json.Marshal. TestMarshalDataAsJSON compares
// the two.
func MarshalData(m map[string]any) ([]byte, error) {
	return AppendData(make([]byte, 0, DataSize(m)), m)
}

// DataSize estimates the length of MarshalData(m), to size its buffer:
// the keys and strings as they are, 24 bytes for any other value (a
// string that needs escapes, or a long number, may make it grow once).
func DataSize(m map[string]any) int {
	n := 2
	for k, v := range m {
		n += len(k) + 4
		switch v := v.(type) {
		case string:
			n += len(v) + 2
		case map[string]any:
			n += DataSize(v)
		case Metadata:
			for mk, mv := range v {
				n += len(mk) + len(mv) + 6
			}
		default:
			n += 24
		}
	}
	return n
}

// AppendData appends MarshalData(m) to b.
func AppendData(b []byte, m map[string]any) ([]byte, error) {
	return appendDataValue(b, m)
}

// appendDataValue appends v as json.Marshal encodes it.
func appendDataValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendJSONString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case float64:
		return appendFloat64(b, v)
	case *string:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendJSONString(b, *v), nil
	case Metadata:
		return appendMetadata(b, v), nil
	case map[string]string:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendMetadata(b, Metadata(v)), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		var err error
		for i, k := range sortedKeys(v) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			if b, err = appendDataValue(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []string:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s)
		}
		return append(b, ']'), nil
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		var err error
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendDataValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case JSONTime:
		return AppendJSONTime(b, time.Time(v)), nil
	}
	// Anything else (records such as *APIError, other numbers): as
	// json.Marshal writes it.
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// sortedKeys returns m's keys in the order json.Marshal writes them.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendFloat64 appends f as json.Marshal writes a float64: the shortest
// decimal that reads back as f, in exponent form (with at least one digit
// of exponent) below 1e-6 and from 1e21.
func appendFloat64(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		_, err := json.Marshal(f) // json's error for it
		return nil, err
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as json.Marshal.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// AppendJSONString appends s as a JSON string, escaped as json.Marshal
// escapes it (HTML characters included).
func AppendJSONString(b []byte, s string) []byte { return appendJSONString(b, s) }

// AppendJSONTime appends t as JSONTime encodes it: a JSON string of
// TimeFormat in UTC.
func AppendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	return append(appendTime(b, t), '"')
}

// AppendEventRequest appends r as json.Marshal writes an *EventRequest:
// null, or its id and idempotency_key (null without one).
func AppendEventRequest(b []byte, r *EventRequest) []byte {
	if r == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, r.ID)
	b = append(b, `,"idempotency_key":`...)
	if r.IdempotencyKey == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *r.IdempotencyKey)
	}
	return append(b, '}')
}
