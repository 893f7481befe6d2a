package http_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestGzip: the API compresses JSON answers of 1 KiB or more for a client
// that accepts gzip, with Vary: Accept-Encoding; not small answers, not a
// stream, not the account pages, and nothing for a client that does not
// ask.
func TestGzip(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gz := []string{"Accept-Encoding", "gzip"}

	r := f.do("GET", "/v1/openapi.json", "", gz...)
	if r.status != 200 || r.header.Get("Content-Encoding") != "gzip" || !strings.Contains(strings.Join(r.header.Values("Vary"), ", "), "Accept-Encoding") {
		t.Fatalf("openapi.json with gzip: %d %v", r.status, r.header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(plain, &doc); err != nil || doc["openapi"] != "3.1.0" || len(r.body) >= len(plain)/2 {
		t.Fatalf("decompressed: %v (%d bytes from %d)", err, len(plain), len(r.body))
	}

	// A client that accepts only identity gets plain JSON (set, the
	// header also keeps Go's transport from asking for gzip itself).
	if r := f.do("GET", "/v1/openapi.json", "", "Accept-Encoding", "identity"); r.header.Get("Content-Encoding") != "" || !json.Valid(r.body) {
		t.Fatalf("Accept-Encoding: identity: %v", r.header)
	}
	// A small answer is not worth compressing.
	if r := f.do("GET", "/v1/assistants/"+f.Assistant.ID, "", gz...); r.status != 200 || r.header.Get("Content-Encoding") != "" || !json.Valid(r.body) {
		t.Fatalf("small answer: %d %v", r.status, r.header)
	}
	// A stream passes through as it is written.
	s := f.do("POST", "/v1/messages", `{"assistant_id":"`+f.Assistant.ID+`","message":"`+strings.Repeat("hello ", 300)+`","stream":true}`, gz...)
	if s.status != 200 || s.header.Get("Content-Encoding") != "" || !strings.HasPrefix(s.header.Get("Content-Type"), "text/event-stream") ||
		!bytes.Contains(s.body, []byte("event: ")) {
		t.Fatalf("stream: %d %v %.200s", s.status, s.header, s.body)
	}
	// The pages are never compressed.
	if p := f.do("GET", "/login", "", gz...); p.status != 200 || p.header.Get("Content-Encoding") != "" {
		t.Fatalf("login page: %d %v", p.status, p.header)
	}
}
