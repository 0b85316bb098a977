package services_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/services"
	"github.com/xiaozhi-hub/hub/services/servicestest"
)

// weatherServer is a Streamable HTTP MCP server (the go-sdk's own) that
// wants a bearer token, as Home Assistant's MCP Server integration does.
func weatherServer(t *testing.T, token string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "2.0"}, nil)
	type in struct {
		City string `json:"city"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "forecast", Description: "tomorrow's weather in a city"},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + a.City}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api/mcp"
}

// Servers under mcp-servers: a Streamable HTTP one with a bearer header
// and a stdio one, both listed with kind "configured" and called over
// REST; the stdio server, when it dies, is started again; neither can be
// deleted through the API.
func TestConfiguredServers(t *testing.T) {
	calc := servicestest.Calculator(t)
	url := weatherServer(t, "ha-long-lived-token")
	h, _ := servertest.Start(t, func(c *server.Config) {
		c.MCPServers = []services.ServerConfig{
			{Name: "home-assistant", URL: url, Headers: map[string]string{"Authorization": "Bearer ha-long-lived-token"}},
			{Name: "calc", Command: calc, Args: []string{"--test-tools"}},
		}
	})
	ha := waitService(t, h, "home-assistant", "online", online)
	if ha.Kind != hub.ServiceConfigured || ha.Tools[0].Name != "forecast" || ha.Server != "weather 2.0" {
		t.Fatalf("home-assistant: %+v", ha)
	}
	if st, r := call(t, h, "home-assistant", "forecast", map[string]string{"city": "Hangzhou"}); st != 200 || r.Content[0].Text != "sunny in Hangzhou" {
		t.Fatalf("forecast: %d %+v", st, r)
	}
	waitService(t, h, "calc", "online", online)
	if st, r := call(t, h, "calc", "calculator", map[string]string{"python_expression": "6*7"}); st != 200 || !strings.Contains(r.Content[0].Text, `"result":42`) {
		t.Fatalf("calculator: %d %+v", st, r)
	}
	first := pid(t, h)
	call(t, h, "calc", "exit", nil) // the server dies mid-call
	// It is started again (after a backoff): another process answers.
	waitService(t, h, "calc", "restarted", func(s hub.ServiceView) bool { return s.Online && pidOK(t, h, first) })
	if st := do(t, h, "DELETE", "/api/services/calc", nil, nil); st != http.StatusConflict {
		t.Fatalf("deleting a configured server: %d", st)
	}
}

func pid(t *testing.T, h *server.Hub) int {
	t.Helper()
	st, r := call(t, h, "calc", "pid", nil)
	if st != 200 {
		t.Fatalf("pid: %d %+v", st, r)
	}
	var v struct{ Pid int }
	_ = json.Unmarshal([]byte(r.Content[0].Text), &v)
	return v.Pid
}

// pidOK reports whether the calc server answers pid with a process other
// than first.
func pidOK(t *testing.T, h *server.Hub, first int) bool {
	st, r := call(t, h, "calc", "pid", nil)
	if st != 200 || len(r.Content) == 0 {
		return false
	}
	var v struct{ Pid int }
	return json.Unmarshal([]byte(r.Content[0].Text), &v) == nil && v.Pid != first && v.Pid != 0
}

// A configured server that cannot be reached is listed offline with the
// reason, and calls to it fail at once.
func TestConfiguredServerUnreachable(t *testing.T) {
	url := weatherServer(t, "right")
	h, _ := servertest.Start(t, func(c *server.Config) {
		c.MCPServers = []services.ServerConfig{{Name: "ha", URL: url, Headers: map[string]string{"Authorization": "Bearer wrong"}}}
	})
	s := waitService(t, h, "ha", "failed", func(s hub.ServiceView) bool { return s.Error != "" })
	if s.Online || !strings.Contains(s.Error, "connect") {
		t.Fatalf("%+v", s)
	}
}
