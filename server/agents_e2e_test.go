package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/sim"
)

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// An outside agent (the official Go SDK client) uses the assembled hub's
// /mcp endpoint to turn on a simulated lamp.
func TestMCPEndpointControlsADevice(t *testing.T) {
	h := startHub(t, "", nil)
	lamp := h.device(sim.Config{DeviceID: "aa:00:00:00:0d:01", Lamp: true})
	h.readyTools(lamp.ID())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Without the token the endpoint refuses.
	res, err := http.Post(h.URL()+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil || res.StatusCode != 401 {
		t.Fatalf("/mcp without a token: %v %v", res, err)
	}
	res.Body.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: h.URL() + "/mcp", HTTPClient: &http.Client{Transport: bearer{h.Token, http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	name := catalog.Name(lamp.ID(), "self.lamp.turn_on")
	var found bool
	waitFor(t, "the lamp's tool on /mcp", func() bool {
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			return false
		}
		for _, tl := range tools.Tools {
			found = found || tl.Name == name
		}
		return found
	})
	out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
	if err != nil || out.IsError {
		t.Fatalf("call %s: %+v %v", name, out, err)
	}
	if !lamp.LampOn() {
		t.Fatal("the simulated lamp is still off")
	}
}

// With no LLM configured the agent says exactly what to set. The hub is a
// function of its Config: LLM keys in the process environment count only
// through LoadConfig, so they do not configure a hub opened without them.
func TestAgentChatExplainsConfiguration(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	h := startHub(t, "", nil)
	if st, _ := h.callWith("", "POST", "/api/agent/chat", map[string]any{"message": "打开客厅的灯"}); st != 401 {
		t.Fatalf("agent without a token = %d", st)
	}
	st, body := h.call("POST", "/api/agent/chat", map[string]any{"message": "打开客厅的灯"})
	if st != 503 || !strings.Contains(errMessage(body), "ANTHROPIC_API_KEY") {
		t.Fatalf("unconfigured agent = %d %v", st, body)
	}
}
