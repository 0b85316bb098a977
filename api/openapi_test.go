package api

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// Every /api route is described in the OpenAPI document, and every /api
// operation described is a route: the document cannot drift from the code.
// (The device-side routes it describes are checked against a running hub
// in server's TestOpenAPIRoutesExist.)
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	s := &Server{trust: struct{ Trust }{}, agent: struct{ Agent }{}, oauth: struct{ OAuth }{}, accounts: struct{ Accounts }{}}
	registered := map[string]bool{}
	for _, rt := range append(s.apiRoutes(), s.publicRoutes()...) {
		for _, m := range rt.methods {
			registered[m.method+" "+rt.path] = true
		}
	}
	var missing, extra []string
	for k := range registered {
		if _, ok := operations[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range operations {
		if strings.Contains(k, " /api/") && !registered[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("routes without a description: %v\ndescriptions without a route: %v", missing, extra)
	}
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openAPI(), &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("document: %v %q", err, doc.OpenAPI)
	}
	for path, ops := range doc.Paths {
		for method, o := range ops {
			if o["summary"] == "" || o["responses"] == nil {
				t.Errorf("%s %s has no summary or responses", method, path)
			}
			if strings.Contains(path, "{id}") {
				params, _ := o["parameters"].([]any)
				if len(params) == 0 {
					t.Errorf("%s %s does not declare its path parameters", method, path)
				}
			}
		}
	}
}
