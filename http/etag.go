package http

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
)

// Conditional GETs of single records (docs/versioning.md): the answer of
// a GET of one record (a route whose pattern ends in a path parameter,
// and GET /v1/account) carries an ETag made from its body, and a request
// whose If-None-Match names it is answered 304 Not Modified without a
// body. The record is read, and the request counted against the rate
// limit, either way: the gain is the bytes not sent, and a client that
// caches records learns at once that its copy is current.
//
// The tag is weak (W/"..."): the body is JSON whose meaning, not its
// bytes, it vouches for, and an answer of 1 KiB or more is gzip-encoded
// for clients that accept it (compressAPI), which a strong tag would
// have to tell apart from the identity encoding (RFC 9110, 8.8.1).
// If-None-Match compares weakly anyway (RFC 9110, 13.1.2).

// etagged reports whether rt's answers carry an ETag.
func etagged(rt Route) bool {
	return rt.Method == http.MethodGet && rt.Permissions != nil &&
		(strings.HasSuffix(rt.Pattern, "}") || rt.Pattern == "/v1/account") &&
		!streamRoutes[rt.Method+" "+rt.Pattern]
}

// withETag returns rt's handler, answering with an ETag and 304 when rt
// is etagged; rt's handler unchanged otherwise.
func withETag(rt Route) func(http.ResponseWriter, *http.Request) error {
	if !etagged(rt) {
		return rt.Handler
	}
	h := rt.Handler
	return func(w http.ResponseWriter, r *http.Request) error {
		bw := &bufferedWriter{header: w.Header()}
		err := h(bw, r)
		if err != nil && bw.status == 0 && bw.body.Len() == 0 {
			return err // nothing written: the error answer as usual
		}
		if err == nil && (bw.status == 0 || bw.status == http.StatusOK) {
			tag := etagOf(bw.body.Bytes())
			w.Header().Set("ETag", tag)
			if etagMatches(r.Header.Values("If-None-Match"), tag) {
				w.Header().Del("Content-Type")
				w.Header().Del("Content-Length")
				w.WriteHeader(http.StatusNotModified)
				return nil
			}
		}
		if bw.status != 0 {
			w.WriteHeader(bw.status)
		}
		if _, werr := w.Write(bw.body.Bytes()); werr != nil && err == nil {
			err = werr
		}
		return err
	}
}

// etagOf returns the weak entity tag of a body: W/ and 128 bits of its
// SHA-256, in quotes.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `W/"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// etagMatches reports whether the If-None-Match header values name tag,
// by weak comparison (W/ ignored on either side), or are "*".
func etagMatches(values []string, tag string) bool {
	want := strings.TrimPrefix(tag, "W/")
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == want {
				return true
			}
		}
	}
	return false
}

// bufferedWriter holds a handler's answer so that its ETag can be
// computed before anything is sent. Headers go to the real writer's map.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
