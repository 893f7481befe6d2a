package http

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/amsdev/ams/openapi"
)

// TestVersioningConventionsDocumented holds the route table to
// openapi.json for docs/versioning.md's conventions: a route answers an
// ETag and 304 (etag.go) exactly when its operation documents the
// If-None-Match parameter, the ETag header of its 200 and a 304; a route
// is deprecated (deprecation.go) exactly when its operation says
// "deprecated": true.
func TestVersioningConventionsDocumented(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]struct {
			Deprecated bool `json:"deprecated"`
			Parameters []struct {
				Ref string `json:"$ref"`
			} `json:"parameters"`
			Responses map[string]struct {
				Headers map[string]json.RawMessage `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	conditional := 0
	for _, rt := range (&Server{}).Routes() {
		key := rt.Method + " " + rt.Pattern
		op, ok := doc.Paths[rt.Pattern][strings.ToLower(rt.Method)]
		if !ok {
			continue // TestOpenAPIMatchesRoutes reports it
		}
		param := false
		for _, p := range op.Parameters {
			param = param || p.Ref == "#/components/parameters/IfNoneMatch"
		}
		_, notModified := op.Responses["304"]
		_, tagged := op.Responses["200"].Headers["ETag"]
		if documented := param && notModified && tagged; documented != etagged(rt) {
			t.Errorf("%s: answers an ETag: %v; documents If-None-Match %v, 304 %v, ETag on 200 %v",
				key, etagged(rt), param, notModified, tagged)
		} else if (param || notModified || tagged) && !documented {
			t.Errorf("%s documents only part of a conditional GET: If-None-Match %v, 304 %v, ETag %v", key, param, notModified, tagged)
		}
		if etagged(rt) {
			conditional++
		}
		if _, deprecated := (&Server{}).deprecationOf(rt); deprecated != op.Deprecated {
			t.Errorf("%s: deprecated in the route table %v, in openapi.json %v", key, deprecated, op.Deprecated)
		}
	}
	if conditional < 13 {
		t.Errorf("%d conditional GETs, want the 13 single-record GETs at least", conditional)
	}
}
