package ams

import (
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
)

// ValidText reports whether s can be stored as text on every engine: valid
// UTF-8 without a NUL byte (PostgreSQL stores neither, SQLite would keep
// them). Every string a client sends is checked with it at the edge (the
// JSON body decoder, the query, path and form readers) before any handler
// or store sees it.
func ValidText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// InvalidValue returns the name of the first parameter of v (in sorted
// order) whose name or one of whose values is not ValidText, and true; or
// "", false when all are valid. The name returned is made printable with
// Clip.
func InvalidValue(v url.Values) (string, bool) {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !ValidText(k) {
			return Clip(k), true
		}
		for _, s := range v[k] {
			if !ValidText(s) {
				return k, true
			}
		}
	}
	return "", false
}

// MaxQuoted is the number of characters of client input an error message
// quotes at most (Clip).
const MaxQuoted = 100

// Clip returns client input for quoting in a message: invalid UTF-8 and
// NUL bytes replaced with U+FFFD and cut to MaxQuoted characters, with
// "…" when it was longer.
func Clip(s string) string {
	if len(s) <= MaxQuoted && ValidText(s) {
		return s
	}
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	n := 0
	for i := range s {
		if n == MaxQuoted {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// InvalidPathValue returns the name of the first wildcard of an
// http.ServeMux pattern ("GET /v1/tasks/{id}") whose value (as value
// returns it, e.g. (*http.Request).PathValue) is not ValidText, and true;
// or "", false.
func InvalidPathValue(pattern string, value func(name string) string) (string, bool) {
	for rest := pattern; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return "", false
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "", false
		}
		name := strings.TrimSuffix(rest[i+1:i+j], "...")
		rest = rest[i+j+1:]
		if !ValidText(value(name)) {
			return name, true
		}
	}
}
