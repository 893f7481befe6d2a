package http_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	amshttp "github.com/amsdev/ams/http"
	"github.com/amsdev/ams/openapi"
)

// TestOpenAPIMatchesRoutes fails when a route exists without its documented
// operation, an operation is documented without a route, or the documented
// permissions differ from the ones the route enforces.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Permissions []string `json:"x-permissions"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	s := &amshttp.Server{}
	routes := map[string]bool{}
	for _, rt := range s.Routes() {
		key := rt.Method + " " + rt.Pattern
		routes[key] = true
		if _, ok := ops[key]; !ok {
			t.Errorf("route %s has no operation in openapi.json", key)
			continue
		}
		documented := doc.Paths[rt.Pattern][strings.ToLower(rt.Method)].Permissions
		var enforced []string
		for _, p := range rt.Permissions {
			enforced = append(enforced, string(p))
		}
		slices.Sort(documented)
		slices.Sort(enforced)
		if !slices.Equal(documented, enforced) {
			t.Errorf("%s: openapi.json documents permissions %v, the route enforces %v", key, documented, enforced)
		}
	}
	for key := range ops {
		if !routes[key] {
			t.Errorf("openapi.json documents %s, which has no route", key)
		}
	}
}
