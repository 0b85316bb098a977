package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// Every people-facing route is served by one adapter (package api): the
// device-trust and agent routes answer a wrong method with 405 and an Allow
// header in the error JSON like every other /api route, /mcp is behind the
// same token check, and the agent's "no model" answer carries a code of
// the hub's own.
func TestOneAPIAdapter(t *testing.T) {
	h := startHub(t, "", nil)
	for _, c := range []struct{ method, path, allow string }{
		{"POST", "/api/activations", "GET, HEAD"},
		{"GET", "/api/activations/123456/approve", "POST"},
		{"POST", "/api/devices/aa:00:00:00:00:01/trust", "GET, HEAD"},
		{"GET", "/api/devices/aa:00:00:00:00:01/token", "DELETE"},
		{"GET", "/api/devices/aa:00:00:00:00:01/rebind", "POST"},
		{"GET", "/api/agent/chat", "POST"},
		{"DELETE", "/api/agent/runs", "GET, HEAD"},
	} {
		req, _ := http.NewRequest(c.method, h.URL()+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+h.Token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 405 || res.Header.Get("Allow") != c.allow || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s = %d, Allow %q, %s; want 405, Allow %q, JSON", c.method, c.path, res.StatusCode,
				res.Header.Get("Allow"), res.Header.Get("Content-Type"), c.allow)
		}
	}
	if st, body := h.callWith("", "POST", "/mcp", map[string]any{}); st != 401 || errCode(body) != "unauthorized" {
		t.Errorf("/mcp without the token = %d %v", st, body)
	}
	if st, body := h.call("POST", "/api/agent/chat", map[string]any{"message": "hi"}); st != 503 || errCode(body) != "unavailable" {
		t.Errorf("agent without a model = %d %v, want 503 code unavailable", st, body)
	}
	// The registry says what is unknown; the API says where to look.
	if st, body := h.call("GET", "/api/devices/aa:00:00:00:00:77", nil); st != 404 || !strings.Contains(errMessage(body), "GET /api/devices lists") {
		t.Errorf("unknown device = %d %v", st, body)
	}
}

// The range of a call's timeoutMs is the hub's max-call-timeout, whatever
// it is set to, and the API says so in milliseconds.
func TestCallTimeoutFollowsMaxCallTimeout(t *testing.T) {
	for _, c := range []struct {
		max       time.Duration
		timeoutMs int
		status    int
		mentions  string
	}{
		{60 * time.Second, 90_000, 422, "timeoutMs must be between 1 and 60000"},
		{600 * time.Second, 400_000, 200, ""},
		{600 * time.Second, 0, 422, "timeoutMs must be between 1 and 600000"},
	} {
		h := startHub(t, "", func(cfg *server.Config) { cfg.MaxCallTimeout = c.max })
		d := h.device(sim.Config{DeviceID: "aa:00:00:00:0e:01"})
		h.readyTools(d.ID())
		st, body := h.call("POST", "/api/devices/"+d.ID()+"/tools/self.audio_speaker.set_volume/call",
			map[string]any{"arguments": map[string]any{"volume": 20}, "timeoutMs": c.timeoutMs})
		if st != c.status || !strings.Contains(errMessage(body), c.mentions) {
			t.Errorf("max %v, timeoutMs %d = %d %v; want %d mentioning %q", c.max, c.timeoutMs, st, body, c.status, c.mentions)
		}
	}
}
