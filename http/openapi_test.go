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

// TestOpenAPIRoutePreludes: each route accepts exactly the query
// parameters its OpenAPI operation documents, and checks each id of its
// path against the prefix of the documented id's pattern.
func TestOpenAPIRoutePreludes(t *testing.T) {
	t.Parallel()
	type param struct {
		Ref    string `json:"$ref"`
		Name   string `json:"name"`
		In     string `json:"in"`
		Schema struct {
			Ref     string `json:"$ref"`
			Pattern string `json:"pattern"`
		} `json:"schema"`
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []param `json:"parameters"`
		} `json:"paths"`
		Components struct {
			Parameters map[string]param `json:"parameters"`
			Schemas    map[string]struct {
				Pattern string `json:"pattern"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	resolve := func(p param) param {
		if p.Ref != "" {
			p = doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
		}
		if p.Schema.Ref != "" {
			p.Schema.Pattern = doc.Components.Schemas[strings.TrimPrefix(p.Schema.Ref, "#/components/schemas/")].Pattern
		}
		return p
	}
	for _, rt := range (&amshttp.Server{}).Routes() {
		key := rt.Method + " " + rt.Pattern
		var documented []string
		paths := map[string]string{} // path value -> its id's pattern
		for _, p := range doc.Paths[rt.Pattern][strings.ToLower(rt.Method)].Parameters {
			switch p = resolve(p); p.In {
			case "query":
				documented = append(documented, p.Name)
			case "path":
				paths[p.Name] = p.Schema.Pattern
			}
		}
		if !rt.Query.Any {
			accepted := slices.Clone(rt.Query.Names)
			if rt.Query.List {
				accepted = append(accepted, "limit", "after", "before", "order")
			}
			slices.Sort(documented)
			slices.Sort(accepted)
			if !slices.Equal(documented, accepted) {
				t.Errorf("%s: openapi.json documents the query parameters %v, the route accepts %v", key, documented, accepted)
			}
		}
		checked := map[string]bool{}
		for _, id := range rt.IDs {
			checked[id.Name] = true
			pattern, ok := paths[id.Name]
			if !ok {
				t.Errorf("%s: the route checks the path id %s, which openapi.json does not document", key, id.Name)
				continue
			}
			if want := "^" + id.Prefix + "["; !strings.HasPrefix(pattern, want) {
				t.Errorf("%s: openapi.json's %s has the pattern %q, the route checks the prefix %q", key, id.Name, pattern, id.Prefix)
			}
		}
		for name := range paths {
			if !checked[name] {
				t.Errorf("%s: the route does not check the path id %s", key, name)
			}
		}
	}
}
