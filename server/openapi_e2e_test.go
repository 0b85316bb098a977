package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// GET /api/openapi.json (with the token) describes the API; every path it
// describes exists on a running hub: a request to it is not answered
// "no such route" (404) or "method not allowed" (405).
func TestOpenAPIRoutesExist(t *testing.T) {
	h := startHub(t, "", nil)
	if st, _ := h.callWith("", "GET", "/api/openapi.json", nil); st != 401 {
		t.Fatalf("openapi.json without a token = %d", st)
	}
	st, doc := h.call("GET", "/api/openapi.json", nil)
	if st != 200 || doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi.json = %d %v", st, doc["openapi"])
	}
	for path, ops := range doc["paths"].(map[string]any) {
		for method := range ops.(map[string]any) {
			url := strings.NewReplacer("{id}", "aa:00:00:00:0a:01", "{tool}", "self.x", "{code}", "123456").Replace(path)
			req, _ := http.NewRequest(strings.ToUpper(method), h.URL()+url, strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+h.Token)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Error struct{ Message string } }
			_ = json.NewDecoder(res.Body).Decode(&body)
			res.Body.Close()
			if res.StatusCode == 405 || res.StatusCode == 404 && strings.Contains(body.Error.Message, "no such endpoint") ||
				res.StatusCode == 404 && body.Error.Message == "" {
				t.Errorf("%s %s is described but answers %d %q", method, path, res.StatusCode, body.Error.Message)
			}
		}
	}
}
