package http

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/amsdev/ams"
)

// allocatedBy returns the bytes the heap grew by (allocations, not the
// live heap) while f ran, the least of three runs, so that a goroutine
// of another test allocating at the same time cannot inflate it.
func allocatedBy(f func()) uint64 {
	least := ^uint64(0)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// The JSON checks' allocations may grow with the body's length, never
// faster: at most bytesPerByte for each byte of input, plus a constant.
// The old checkJSON built each nested value's whole path before any
// check, about 1.5·d² bytes for a body nested d deep: for the 20 KB body
// below, some 150 MB. encoding/json's Decoder.Token allocates about 60
// bytes per byte of `1,1,1,…` (each number a string and an interface),
// the costliest shape measured: the bound leaves it twice that.
const (
	bytesPerByte = 128
	bytesFixed   = 64 << 10
)

func allocBound(n int) uint64 { return uint64(bytesPerByte*n + bytesFixed) }

// TestCheckJSONDepth: a body nested deeper than MaxJSONDepth is refused
// with invalid_json naming the path where it goes too deep; one nested
// exactly that deep is accepted.
func TestCheckJSONDepth(t *testing.T) {
	t.Parallel()
	nest := func(depth int) []byte {
		// {"a":[[...]]}: the object is depth 1, each array one more.
		return []byte(`{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
	}
	if err := checkJSON(nest(MaxJSONDepth)); err != nil {
		t.Fatalf("a body %d deep: %v", MaxJSONDepth, err)
	}
	err := checkJSON(nest(MaxJSONDepth + 1))
	var ae *ams.Error
	if !errors.As(err, &ae) || ae.Kind != ams.EINVALID || ae.Code != "invalid_json" {
		t.Fatalf("a body %d deep: %v, want invalid_json", MaxJSONDepth+1, err)
	}
	if want := "a" + strings.Repeat("[0]", MaxJSONDepth-2); ae.Param != ams.Clip(want) {
		t.Fatalf("param %q, want %q", ae.Param, ams.Clip(want))
	}
	// Objects count as arrays do, and the path names their keys.
	deepObj := strings.Repeat(`{"k":`, MaxJSONDepth+1) + `1` + strings.Repeat(`}`, MaxJSONDepth+1)
	if err := checkJSON([]byte(deepObj)); !errors.As(err, &ae) || ae.Code != "invalid_json" ||
		ae.Param != ams.Clip(strings.TrimSuffix(strings.Repeat("k.", MaxJSONDepth), ".")) {
		t.Fatalf("objects %d deep: %v (param %q)", MaxJSONDepth+1, err, ae.Param)
	}
}

// TestCheckJSONAllocationsBounded: whatever the shape of the body (deep,
// wide, many keys, long keys, many small values), checking it allocates
// at most bytesPerByte per input byte.
func TestCheckJSONAllocationsBounded(t *testing.T) {
	deep := func(n int) string { return `{"title":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}` }
	bodies := map[string]string{
		"deep arrays, refused":        deep(10_000),
		"deep objects, refused":       strings.Repeat(`{"k":`, 10_000) + `1` + strings.Repeat(`}`, 10_000),
		"deep, long keys, refused":    strings.Repeat(`{"`+strings.Repeat("k", 1000)+`":`, 200) + `1` + strings.Repeat(`}`, 200),
		"deep, unclosed":              `{"a":` + strings.Repeat("[", 20_000),
		"wide array":                  `{"a":[` + strings.Repeat(`1,`, 100_000) + `1]}`,
		"many empty objects":          `{"a":[` + strings.Repeat(`{},`, 100_000) + `{}]}`,
		"many keys":                   `{` + manyKeys(20_000) + `}`,
		"63 deep, wide at the bottom": `{"a":` + strings.Repeat("[", 62) + strings.Repeat(`[],`, 50_000) + `[]` + strings.Repeat("]", 62) + `}`,
	}
	for name, body := range bodies {
		b := []byte(body)
		got := allocatedBy(func() { _ = checkJSON(b) })
		if got > allocBound(len(b)) {
			t.Errorf("%s: checking %d bytes allocated %d bytes, more than %d", name, len(b), got, allocBound(len(b)))
		}
	}
}

func manyKeys(n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`"k`)
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString(string(rune('a' + i%26)))
		sb.WriteString(strconv.Itoa(i))
		sb.WriteString(`":1`)
	}
	return sb.String()
}

// FuzzCheckJSONAllocations: for any body, the checks that run before a
// handler sees it (readBody: checkJSON) allocate at most bytesPerByte per
// input byte plus a constant, accepted or refused.
func FuzzCheckJSONAllocations(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"a":[[[[[[[[]]]]]]]]}`, `{"a":{"b":{"c":{}}}}`, `{"a":"b","a":"c"}`,
		`{"title":` + strings.Repeat("[", 2000), `{"a":[` + strings.Repeat(`{},`, 500) + `{}]}`,
		strings.Repeat(`{"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk":`, 300),
		"{\"a\":\"\xff\"}", `{"a":1}{}`, `[` + strings.Repeat(`[`, 100),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := allocatedBy(func() {
			r := httptest.NewRequest(http.MethodPost, "/v1/fuzz", bytes.NewReader(body))
			r.Body = http.MaxBytesReader(nil, r.Body, MaxBodyBytes)
			_, _ = readBody(r)
		})
		// io.ReadAll's buffer and the request are part of the run: the
		// constant covers them.
		if got > allocBound(len(body))+uint64(2*len(body)) {
			t.Fatalf("checking %d bytes allocated %d bytes, more than %d", len(body), got, allocBound(len(body))+uint64(2*len(body)))
		}
	})
}
