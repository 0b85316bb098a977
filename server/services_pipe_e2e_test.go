package server_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/services/servicestest"
)

// The reference client through every door: 78/mcp-calculator's
// mcp_pipe.py, unmodified, connects the calculator (a stdio MCP server
// behind it) to a service of the hub. Its tool is listed (REST and /mcp)
// and called over REST, over /mcp (the go-sdk client) and by the agent
// (a stand-in model speaking OpenAI's wire format); when the pipe dies
// the service goes offline (REST says so, /mcp withdraws the tool, a call
// is 409 at once) and when the pipe runs again every door works again.
func TestReferencePipeThroughEveryDoor(t *testing.T) {
	py := servicestest.Python(t)
	calc := servicestest.Calculator(t)
	name := catalog.ServiceKey("calc") + "_calculator"
	p := newProviders(t, name)
	p.args = `{"python_expression":"6*7"}`
	h := talkingHub(t, p, nil)

	st, body := h.call("POST", "/api/services", map[string]any{"name": "calc"})
	if st != 201 {
		t.Fatalf("POST /api/services: %d %v", st, body)
	}
	url, _ := body["url"].(string)
	isOnline := func(want bool) func() bool {
		return func() bool {
			v, err := server.ServicesOf(h.Hub).Service(nil, "calc")
			return err == nil && v.Online == want && len(v.Tools) > 0
		}
	}
	pipe := servicestest.Pipe(t, py, url, calc)
	waitFor(t, "calc online through mcp_pipe.py", isOnline(true))

	// Listed: REST and /mcp.
	st, list := h.call("GET", "/api/services", nil)
	if st != 200 || !strings.Contains(toJSON(list), `"name":"calculator"`) || !strings.Contains(toJSON(list), "python_expression") {
		t.Fatalf("GET /api/services: %d %s", st, toJSON(list))
	}
	cs := mcpAs(t, h, h.Token)
	if !slices.Contains(mcpTools(t, cs), name) {
		t.Fatalf("/mcp tools: %v", mcpTools(t, cs))
	}

	// Called over REST, over /mcp and by the agent.
	restCall := func(expr string) (int, map[string]any) {
		return h.call("POST", "/api/services/calc/tools/calculator/call", map[string]any{"arguments": map[string]string{"python_expression": expr}})
	}
	if st, r := restCall("(1+2)*3"); st != 200 || !strings.Contains(toJSON(r), `\"result\":9`) {
		t.Fatalf("REST call: %d %s", st, toJSON(r))
	}
	if text, failed := mcpCall(cs, name, map[string]any{"python_expression": "2**5"}); failed || !strings.Contains(text, `"result":32`) {
		t.Fatalf("/mcp call %s: %s", name, text)
	}
	agentAsks := func() string {
		t.Helper()
		if st, body := h.call("POST", "/api/agent/chat", map[string]any{"message": "what is six times seven?"}); st != 200 {
			t.Fatalf("POST /api/agent/chat: %d %v", st, body)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if !slices.Contains(p.tools, name) || len(p.results) == 0 {
			t.Fatalf("the model was offered %v and sent %q", p.tools, p.results)
		}
		return p.results[len(p.results)-1]
	}
	if got := agentAsks(); !strings.Contains(got, `"result":42`) {
		t.Fatalf("the agent's call gave the model %q", got)
	}
	_, calls := h.call("GET", "/api/calls?device=service:calc", nil)
	for _, caller := range []string{`"caller":"api"`, `"caller":"mcp"`, `"caller":"agent"`} {
		if !strings.Contains(toJSON(calls), caller) {
			t.Errorf("no call with %s in the history: %s", caller, toJSON(calls))
		}
	}

	// The pipe dies: offline everywhere.
	servicestest.Stop(pipe)
	waitFor(t, "calc offline", isOnline(false))
	if st, r := restCall("1"); st != 409 || !strings.Contains(toJSON(r), `"device_offline"`) {
		t.Fatalf("REST call while offline: %d %s", st, toJSON(r))
	}
	waitFor(t, "the tool withdrawn from /mcp", func() bool { return !slices.Contains(mcpTools(t, cs), name) })

	// It runs again: every door works again.
	servicestest.Pipe(t, py, url, calc)
	waitFor(t, "calc online again", isOnline(true))
	if st, r := restCall("2**10"); st != 200 || !strings.Contains(toJSON(r), `\"result\":1024`) {
		t.Fatalf("REST call after reconnecting: %d %s", st, toJSON(r))
	}
	waitFor(t, "the tool back on /mcp", func() bool { return slices.Contains(mcpTools(t, cs), name) })
	if text, failed := mcpCall(cs, name, map[string]any{"python_expression": "7*8"}); failed || !strings.Contains(text, `"result":56`) {
		t.Fatalf("/mcp call after reconnecting: %s", text)
	}
	if got := agentAsks(); !strings.Contains(got, `"result":42`) {
		t.Fatalf("the agent's call after reconnecting gave the model %q", got)
	}
}
