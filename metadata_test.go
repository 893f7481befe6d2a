package ams_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/amsdev/ams"
)

func patch(js string) ams.MetadataPatch {
	return ams.MetadataPatch{Set: true, Raw: json.RawMessage(js)}
}

func TestMetadataMerge(t *testing.T) {
	base := ams.Metadata{"a": "1", "b": "2"}
	got, err := patch(`{"a": "one", "b": null, "c": "3", "d": ""}`).Merge(base, "metadata")
	if err != nil || !got.Equal(ams.Metadata{"a": "one", "c": "3"}) {
		t.Fatalf("merge: %v %v", got, err)
	}
	if !base.Equal(ams.Metadata{"a": "1", "b": "2"}) {
		t.Fatalf("merge changed its input: %v", base)
	}
	if got, err := (ams.MetadataPatch{}).Merge(base, "metadata"); err != nil || !got.Equal(base) {
		t.Fatalf("absent patch: %v %v", got, err)
	}
	// 50 keys at most, counted on the result: removals make room.
	keys := func(n int, value string) string {
		var kv []string
		for i := range n {
			kv = append(kv, fmt.Sprintf(`"k%02d": %s`, i, value))
		}
		return "{" + strings.Join(kv, ",") + "}"
	}
	full, err := patch(keys(50, `"v"`)).Merge(nil, "metadata")
	if err != nil || len(full) != 50 {
		t.Fatalf("50 keys: %d %v", len(full), err)
	}
	if _, err := patch(`{"one more": "v"}`).Merge(full, "metadata"); ams.ErrorKindOf(err) != ams.EINVALID {
		t.Fatalf("51st key: %v", err)
	}
	if got, err := patch(`{"k00": null, "one more": "v"}`).Merge(full, "metadata"); err != nil || len(got) != 50 {
		t.Fatalf("swap a key at 50: %d %v", len(got), err)
	}
	// Characters, not bytes: 40 and 500 multi-byte characters pass.
	if _, err := patch(`{"`+strings.Repeat("é", 40)+`": "`+strings.Repeat("é", 500)+`"}`).Merge(nil, "metadata"); err != nil {
		t.Fatalf("40/500 characters: %v", err)
	}
	for _, c := range []struct{ js, param string }{
		{keys(51, `"v"`), "metadata"},
		{`{"` + strings.Repeat("k", 41) + `": "v"}`, "metadata." + strings.Repeat("k", 41)},
		{`{"": "v"}`, "metadata."},
		{`{"k": "` + strings.Repeat("v", 501) + `"}`, "metadata.k"},
		{`{"k": 1}`, "metadata.k"},
		{`{"k": true}`, "metadata.k"},
		{`{"k": ["v"]}`, "metadata.k"},
		{`["k"]`, "metadata"},
		{`"k"`, "metadata"},
		{`null`, "metadata"},
	} {
		_, err := patch(c.js).Merge(ams.Metadata{}, "metadata")
		var e *ams.Error
		if !asError(err, &e) || e.Kind != ams.EINVALID || e.Code != "parameter_invalid" || e.Param != c.param {
			t.Errorf("%.60s: %v, want parameter_invalid naming %q", c.js, err, c.param)
		}
	}
}

func asError(err error, e **ams.Error) bool {
	x, ok := err.(*ams.Error)
	*e = x
	return ok
}

func TestMetadataJSON(t *testing.T) {
	var m ams.Metadata
	if b, _ := json.Marshal(m); string(b) != "{}" {
		t.Fatalf("nil metadata encodes as %s", b)
	}
	if b, _ := json.Marshal(struct {
		M ams.Metadata `json:"metadata"`
	}{}); string(b) != `{"metadata":{}}` {
		t.Fatalf("nil metadata field encodes as %s", b)
	}
	back, err := ams.DecodeMetadata(ams.EncodeMetadata(ams.Metadata{"a": "<&>"}))
	if err != nil || back["a"] != "<&>" {
		t.Fatalf("round trip: %v %v", back, err)
	}
	if m, err := ams.DecodeMetadata(""); err != nil || m == nil || len(m) != 0 {
		t.Fatalf("empty column: %v %v", m, err)
	}
}
