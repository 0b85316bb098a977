package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

// mqttHub runs a hub with the embedded MQTT broker on loopback.
func mqttHub(t testing.TB, dir string, edit func(*server.Config)) *testHub {
	t.Helper()
	return startHub(t, dir, func(c *server.Config) {
		c.MQTTListen = "127.0.0.1:0"
		c.DeviceAuth = "token"
		if edit != nil {
			edit(c)
		}
	})
}

// otaCheck makes the device's OTA check and returns the answer.
func otaCheck(t testing.TB, h *testHub, deviceID, clientID string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", h.OTAURL(), strings.NewReader(`{"application":{"version":"2.4.2"}}`))
	req.Header.Set("Device-Id", deviceID)
	req.Header.Set("Client-Id", clientID)
	req.Header.Set("User-Agent", "bread-compact-wifi/2.4.2")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ans map[string]any
	if err := json.NewDecoder(res.Body).Decode(&ans); err != nil || res.StatusCode != 200 {
		t.Fatalf("OTA check: %d %v", res.StatusCode, err)
	}
	return ans
}

// mqttLogin is what the firmware stores from the OTA answer's mqtt object.
func mqttLogin(t testing.TB, ans map[string]any) mqttdevice.Config {
	t.Helper()
	m, ok := ans["mqtt"].(map[string]any)
	if !ok {
		t.Fatalf("the OTA answer has no mqtt object: %v", ans)
	}
	return mqttdevice.Config{Endpoint: m["endpoint"].(string), ClientID: m["client_id"].(string), Username: m["username"].(string),
		Password: m["password"].(string), PublishTopic: m["publish_topic"].(string), Keepalive: uint16(m["keepalive"].(float64))}
}

// mcpResponder answers the hub's MCP requests on an MQTT device the way
// firmware 2.4.2 does while idle: replies published to the device's topic,
// with the session_id of the last hello ("" before the first). It serves
// one tool, self.light.set, and self.slow, which never answers.
type mcpResponder struct {
	d     *mqttdevice.Device
	mu    sync.Mutex
	light bool
	calls []string
	wg    sync.WaitGroup
	other chan string // messages that are not MCP requests
}

func serveMCP(t testing.TB, d *mqttdevice.Device) *mcpResponder {
	r := &mcpResponder{d: d, other: make(chan string, 64)}
	r.wg.Go(r.loop)
	t.Cleanup(func() { d.Drop(); r.wg.Wait() })
	return r
}

func (r *mcpResponder) loop() {
	for {
		select {
		case <-r.d.Done():
			return
		case m := <-r.d.Messages():
			var env struct {
				Type    string `json:"type"`
				Payload struct {
					ID     *int64          `json:"id"`
					Method string          `json:"method"`
					Params json.RawMessage `json:"params"`
				} `json:"payload"`
			}
			if json.Unmarshal(m.Payload, &env) != nil || env.Type != "mcp" || env.Payload.ID == nil {
				select {
				case r.other <- string(m.Payload):
				default:
				}
				continue
			}
			var result string
			switch env.Payload.Method {
			case "initialize":
				result = `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"bread-compact-wifi","version":"2.4.2"}}`
			case "tools/list":
				result = `{"tools":[{"name":"self.light.set","description":"Turn the light on or off","inputSchema":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}},` +
					`{"name":"self.slow","description":"Never answers","inputSchema":{"type":"object","properties":{}}}]}`
			case "tools/call":
				var p struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				}
				_ = json.Unmarshal(env.Payload.Params, &p)
				r.mu.Lock()
				r.calls = append(r.calls, p.Name)
				if p.Name == "self.light.set" {
					r.light = strings.Contains(string(p.Arguments), "true")
				}
				r.mu.Unlock()
				if p.Name == "self.slow" {
					continue
				}
				result = `{"content":[{"type":"text","text":"true"}],"isError":false}`
			default:
				continue
			}
			reply := `{"session_id":"` + r.d.SessionID() + `","type":"mcp","payload":{"jsonrpc":"2.0","id":` +
				jsonInt(*env.Payload.ID) + `,"result":` + result + `}}`
			_ = r.d.Publish([]byte(reply))
		}
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func (r *mcpResponder) lightOn() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.light }
func (r *mcpResponder) received() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.calls) }

func connectMQTT(t testing.TB, cfg mqttdevice.Config) *mqttdevice.Device {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := mqttdevice.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A device on MQTT is online and controllable while idle: after its OTA
// check it connects to the embedded broker, the hub discovers its tools
// with no conversation open, and a REST call and an /mcp call reach it.
// WebSocket devices are served beside it. When it drops off the network
// (no DISCONNECT), a call in flight fails at once and it is offline.
func TestIdleMQTTDeviceIsControllable(t *testing.T) {
	h := mqttHub(t, "", nil)
	const id = "aa:00:00:00:4d:01"
	d := connectMQTT(t, mqttLogin(t, otaCheck(t, h, id, "uuid-4d-01")))
	dev := serveMCP(t, d)
	tools := toolNames(h.readyTools(id))
	if strings.Join(tools, ",") != "self.light.set,self.slow" {
		t.Fatalf("tools of the idle MQTT device: %v", tools)
	}
	_, got := h.call("GET", "/api/devices/"+id, nil)
	if got["online"] != true || got["transport"] != "mqtt" {
		t.Fatalf("the idle MQTT device is not online over mqtt: %v", got)
	}

	// A WebSocket device side by side.
	const wsID = "aa:00:00:00:4d:02"
	ws := h.device(sim.Config{DeviceID: wsID, ClientID: "uuid-4d-02", Token: tokenOf(otaCheck(t, h, wsID, "uuid-4d-02"))})
	h.readyTools(ws.ID())
	if _, got := h.call("GET", "/api/devices/"+wsID, nil); got["transport"] != "websocket" {
		t.Fatalf("the WebSocket device's transport: %v", got)
	}

	st, body := h.call("POST", "/api/devices/"+id+"/tools/self.light.set/call", map[string]any{"arguments": map[string]any{"on": true}})
	if st != 200 || !dev.lightOn() {
		t.Fatalf("REST call to the idle MQTT device = %d %v (light %v)", st, body, dev.lightOn())
	}

	// Many calls in a row: the device's replies to the hub's requests are
	// not throttled (only what it sends unasked counts against its budget).
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 40 {
				if st, body := h.call("POST", "/api/devices/"+id+"/tools/self.light.set/call", map[string]any{"arguments": map[string]any{"on": true}, "timeoutMs": 5000}); st != 200 {
					t.Errorf("call in a burst = %d %v", st, body)
					return
				}
			}
		})
	}
	wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: h.URL() + "/mcp", HTTPClient: &http.Client{Transport: bearer{h.Token, http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: catalog.Name(id, "self.light.set"), Arguments: map[string]any{"on": false}})
	if err != nil || out.IsError || dev.lightOn() {
		t.Fatalf("/mcp call to the idle MQTT device: %+v %v (light %v)", out, err, dev.lightOn())
	}

	// The device drops with a call in flight.
	res := make(chan int, 1)
	go func() {
		st, _ := h.call("POST", "/api/devices/"+id+"/tools/self.slow/call", map[string]any{"timeoutMs": 60000})
		res <- st
	}()
	waitFor(t, "the slow call to reach the device", func() bool { return dev.received() == 3+8*40 })
	d.Drop()
	select {
	case st := <-res:
		if st != 502 {
			t.Fatalf("the call in flight when the device dropped = %d, want 502", st)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call in flight did not fail when the device dropped")
	}
	waitFor(t, "offline", func() bool {
		_, dev := h.call("GET", "/api/devices/"+id, nil)
		return dev["online"] == false
	})
	if _, got := h.call("GET", "/api/devices/"+ws.ID(), nil); got["online"] != true {
		t.Fatalf("the WebSocket device went offline with the MQTT one: %v", got)
	}
}

func tokenOf(ans map[string]any) string {
	ws, _ := ans["websocket"].(map[string]any)
	tok, _ := ws["token"].(string)
	return tok
}
