package agent_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/api"
	"github.com/xiaozhi-hub/hub/registry"
)

const apiToken = "agent-test-admin-token"

// serve mounts a on the hub's admin API over reg, as server.Open does, and
// returns the API's base URL.
func serve(t *testing.T, reg *registry.Registry, a *agent.Agent) string {
	t.Helper()
	mux := http.NewServeMux()
	api.New(api.Options{Registry: reg, Token: apiToken, Agent: a}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// request sends body to the API with the admin token.
func request(t *testing.T, method, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
