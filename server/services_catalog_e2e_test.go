package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/server"
)

// calcTool is the calculator of 78/mcp-calculator: one tool, calculator,
// with a python_expression.
const calcTool = `[{"name":"calculator","description":"For mathamatical calculation, always use this tool to calculate the result of a python expression.",` +
	`"inputSchema":{"type":"object","properties":{"python_expression":{"type":"string"}},"required":["python_expression"]}}]`

// program connects to a service's endpoint URL as a program written for
// xiaozhi.me would, and serves tools (the raw JSON array of tools/list):
// the calculator (Go constant expressions stand in for Python's), and any
// other tool answers "ran <name>". It returns a function that ends the
// connection.
func program(t *testing.T, url, tools string) (stop func()) {
	t.Helper()
	stop, _ = programConn(t, url, tools)
	return stop
}

// programConn is program, with a channel closed when the connection ends
// (the hub closed it, or stop).
func programConn(t *testing.T, url, tools string) (stop func(), ended <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name      string `json:"name"`
					Arguments struct {
						Expr string `json:"python_expression"`
					} `json:"arguments"`
				} `json:"params"`
			}
			if json.Unmarshal(data, &req) != nil || len(req.ID) == 0 {
				continue
			}
			var result string
			switch req.Method {
			case "initialize":
				result = `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"Calculator","version":"1"}}`
			case "tools/list":
				result = `{"tools":` + tools + `}`
			case "tools/call":
				text := []byte("ran " + req.Params.Name)
				if req.Params.Name == "calculator" {
					v, err := types.Eval(token.NewFileSet(), nil, token.NoPos, req.Params.Arguments.Expr)
					text, _ = json.Marshal(map[string]any{"success": err == nil, "result": v.Value.String()})
				}
				b, _ := json.Marshal(string(text))
				result = `{"content":[{"type":"text","text":` + string(b) + `}]}`
			default:
				result = `{}`
			}
			if ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+`}`)) != nil {
				return
			}
		}
	}()
	stop = func() { cancel(); _ = ws.CloseNow(); <-done }
	t.Cleanup(stop)
	return stop, done
}

// newService creates an endpoint service (for a home, if given) with the
// admin token, connects the calculator to it and waits until it is online.
func (h *testHub) newService(name, home string) (stop func()) {
	h.t.Helper()
	return h.newServiceWith(name, home, calcTool)
}

// newServiceWith is newService with tools of one's own.
func (h *testHub) newServiceWith(name, home, tools string) (stop func()) {
	h.t.Helper()
	st, body := h.call("POST", "/api/services", map[string]any{"name": name, "home": home})
	if st != 201 {
		h.t.Fatalf("POST /api/services: %d %v", st, body)
	}
	stop = program(h.t.(*testing.T), body["url"].(string), tools)
	waitFor(h.t, name+" online", func() bool {
		v, err := server.ServicesOf(h.Hub).Service(nil, name)
		return err == nil && v.Online && len(v.Tools) > 0
	})
	return stop
}

// The calculator service's tool is offered beside the devices' over /mcp
// under its own name (scalc_calculator), found by search_devices and
// called both ways; when its program goes, the session is told its list
// changed and the tool is gone.
func TestServiceToolOverMCP(t *testing.T) {
	h := startHub(t, "", nil)
	stop := h.newService("calc", "")
	changed := make(chan struct{}, 16)
	cs := mcpAs(t, h, h.Token, func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} })
	name := catalog.ServiceKey("calc") + "_calculator"
	if name != "scalc_calculator" || !slices.Contains(mcpTools(t, cs), name) {
		t.Fatalf("/mcp tools: %v", mcpTools(t, cs))
	}
	if text, failed := mcpCall(cs, name, map[string]any{"python_expression": "6*7"}); failed || !strings.Contains(text, `"result":"42"`) {
		t.Fatalf("%s: %s", name, text)
	}
	text, _ := mcpCall(cs, catalog.ToolSearchDevices, map[string]any{"query": "calculation"})
	if !strings.Contains(text, `"device_id":"service:calc"`) || !strings.Contains(text, `"agent_tool":"scalc_calculator"`) {
		t.Fatalf("search_devices does not find the calculator: %s", text)
	}
	// The calls are in the history under the service, made over /mcp.
	st, calls := h.call("GET", "/api/calls?device=service:calc", nil)
	if st != 200 || !strings.Contains(toJSON(calls), `"deviceId":"service:calc"`) || !strings.Contains(toJSON(calls), `"caller":"mcp"`) {
		t.Fatalf("GET /api/calls: %d %s", st, toJSON(calls))
	}

	stop() // the program goes: the service is offline
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the service went offline")
	}
	waitFor(t, "the tool withdrawn", func() bool { return !slices.Contains(mcpTools(t, cs), name) })
}

// A home's service is its people's only: to a person of another home it
// is absent from /mcp and search, and calling it fails exactly as calling
// a service that does not exist; the home's own people call it.
func TestServiceOfAHomeIsItsPeoplesOnly(t *testing.T) {
	h := startHub(t, "", nil)
	w := startTwoHomes(t, h)
	h.newService("bcalc", w.homeB) // bob's home; alice is not in it
	name := catalog.ServiceKey("bcalc") + "_calculator"

	bob := mcpAs(t, h, w.bob)
	if text, failed := mcpCall(bob, name, map[string]any{"python_expression": "6*7"}); failed || !strings.Contains(text, `"result":"42"`) {
		t.Fatalf("bob calls his home's calculator: %s", text)
	}
	alice := mcpAs(t, h, w.alice)
	if slices.Contains(mcpTools(t, alice), name) {
		t.Fatalf("alice is offered home B's service: %v", mcpTools(t, alice))
	}
	if text, _ := mcpCall(alice, catalog.ToolSearchDevices, map[string]any{"query": "calculator"}); strings.Contains(text, "bcalc") {
		t.Fatalf("alice's search finds home B's service: %s", text)
	}
	args := map[string]any{"python_expression": "6*7"}
	foreign, failed := mcpCall(alice, catalog.ToolCallDeviceTool, map[string]any{"device_id": "service:bcalc", "tool": "calculator", "arguments": args})
	unknown, _ := mcpCall(alice, catalog.ToolCallDeviceTool, map[string]any{"device_id": "service:nope1", "tool": "calculator", "arguments": args})
	if !failed || strings.ReplaceAll(foreign, "bcalc", "X") != strings.ReplaceAll(unknown, "nope1", "X") {
		t.Fatalf("alice calls home B's service: %q; an unknown one: %q", foreign, unknown)
	}
	// The call history: bob sees his call, by the service's id too; to
	// alice the service's calls are an unknown service's.
	if st, body := h.callWith(w.bob, "GET", "/api/calls?device=service:bcalc", nil); st != 200 || !strings.Contains(toJSON(body), `"tool":"calculator"`) {
		t.Fatalf("bob's calls of his service: %d %s", st, toJSON(body))
	}
	if _, body := h.callWith(w.bob, "GET", "/api/calls", nil); !strings.Contains(toJSON(body), `"deviceId":"service:bcalc"`) {
		t.Fatalf("bob's calls: %s", toJSON(body))
	}
	if _, body := h.callWith(w.alice, "GET", "/api/calls", nil); strings.Contains(toJSON(body), "bcalc") {
		t.Fatalf("alice's calls: %s", toJSON(body))
	}
	stF, bodyF := h.callWith(w.alice, "GET", "/api/calls?device=service:bcalc", nil)
	stU, bodyU := h.callWith(w.alice, "GET", "/api/calls?device=service:nope1", nil)
	if stF != 404 || stF != stU || strings.ReplaceAll(errMessage(bodyF), "bcalc", "X") != strings.ReplaceAll(errMessage(bodyU), "nope1", "X") {
		t.Fatalf("alice asks for home B's service's calls: %d %v; an unknown one's: %d %v", stF, bodyF, stU, bodyU)
	}
	foreign, _ = mcpCall(alice, catalog.ToolGetDevice, map[string]any{"device_id": "service:bcalc"})
	unknown, _ = mcpCall(alice, catalog.ToolGetDevice, map[string]any{"device_id": "service:nope1"})
	if strings.ReplaceAll(foreign, "bcalc", "X") != strings.ReplaceAll(unknown, "nope1", "X") {
		t.Fatalf("alice describes home B's service: %q; an unknown one: %q", foreign, unknown)
	}
}

// A device is asked a sum aloud: the model (a stand-in speaking OpenAI's
// wire format) calls the calculator service's tool through the device's
// voice agent, reads its result, and the answer is spoken to the device.
func TestVoiceAnswersWithAService(t *testing.T) {
	const talkerID = "aa:00:00:00:7b:01"
	p := newProviders(t, "scalc_calculator")
	p.args = `{"python_expression":"6*7"}`
	h := talkingHub(t, p, nil)
	h.newService("calc", "")
	c := h.rawDevice(talkerID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send(t, c, `{"session_id":"s","type":"listen","state":"start","mode":"manual"}`)
	for _, f := range speech(t) {
		if err := c.Write(ctx, websocket.MessageBinary, f); err != nil {
			t.Fatal(err)
		}
	}
	send(t, c, `{"session_id":"s","type":"listen","state":"stop"}`)
	var texts []string
	dec, _ := opus.NewDecoder(24000)
	audio := 0
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (so far %v)", err, texts)
		}
		if typ == websocket.MessageBinary {
			if _, err := dec.Decode(data); err == nil {
				audio++
			}
			continue
		}
		texts = append(texts, string(data))
		if strings.Contains(string(data), `"state":"stop"`) {
			break
		}
	}
	if got := strings.Join(texts, "\n"); !strings.Contains(got, `"state":"sentence_start","text":"`+answer+`"`) || audio == 0 {
		t.Fatalf("the device did not hear the answer (%d audio frames):\n%s", audio, got)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.results) != 1 || !strings.Contains(p.results[0], `\"result\":\"42\"`) && !strings.Contains(p.results[0], `"result":"42"`) {
		t.Fatalf("the model was sent %q", p.results)
	}
	if !slices.Contains(p.tools, "scalc_calculator") {
		t.Fatalf("the model was offered %v", p.tools)
	}
	if !strings.Contains(p.system, "- calc (1 tools, online)") {
		t.Fatalf("the system prompt does not name the service:\n%s", p.system)
	}
}

// With 20 services of 20 tools each online, the agent is offered the four
// hub tools per turn (not 400): the stand-in model finds a service's tool
// through them and calls it with call_device_tool.
func TestAgentToolsPerTurnWith20Services(t *testing.T) {
	p := newProviders(t, catalog.ToolCallDeviceTool)
	p.args = `{"device_id":"service:svc07","tool":"tool_13","arguments":{}}`
	h := talkingHub(t, p, nil)
	for i := range 20 {
		var tools []string
		for j := range 20 {
			tools = append(tools, fmt.Sprintf(`{"name":"tool_%02d","description":"thing %d of service %d","inputSchema":{"type":"object","properties":{}}}`, j, j, i))
		}
		h.newServiceWith(fmt.Sprintf("svc%02d", i), "", "["+strings.Join(tools, ",")+"]")
	}
	if st, _ := h.call("POST", "/api/agent/chat", map[string]any{"message": "run tool 13 of service 7"}); st != 200 {
		t.Fatalf("chat: %d", st)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("20 services × 20 tools online: the model was offered %d tools per turn: %v", len(p.tools), p.tools)
	if len(p.tools) != 4 || len(p.results) != 1 || !strings.Contains(p.results[0], "ran tool_13") {
		t.Fatalf("offered %v; results %q", p.tools, p.results)
	}
}
