package mqttlink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mqttbroker"
	"github.com/xiaozhi-hub/hub/mqttlink"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// maxGoroutinesPerIdleDevice is what an idle MQTT device may cost the hub:
// the embedded broker's reader of its connection (the broker runs mochi
// with DirectClientWrites: no writer per client). The device session adds
// none.
const maxGoroutinesPerIdleDevice = 1

// N devices log in to the embedded broker, answer the hub's MCP discovery
// and stay idle: each costs the hub at most maxGoroutinesPerIdleDevice
// goroutines (the device session used to read from a goroutine of its own,
// three in all, then two while mochi ran a writer per client). Counted with runtime.NumGoroutine, less the simulated
// devices' own read loops (one each, in this process).
func TestIdleDeviceGoroutines(t *testing.T) {
	const n = 40
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := registrytest.NewRegistry(t)
	srv := session.New(session.Options{Registry: reg})
	defer srv.Close()
	audio, err := udpaudio.Listen("127.0.0.1:0", udpaudio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var link *mqttlink.Link
	b, err := mqttbroker.New(mqttbroker.Config{
		Addr:         "127.0.0.1:0",
		Authenticate: func(_, username, _, _ string) (string, error) { return username, nil },
		OnConnect: func(c mqttbroker.Client) {
			link.Connected(protocol.Identity{DeviceID: c.DeviceID, ClientID: c.ClientID, ProtocolVersion: 3}, "mqtt "+c.Remote, c.Local)
		},
		OnMessage:    func(id string, p []byte) { link.Message(id, p) },
		OnDisconnect: func(id string, r mqttbroker.Reason) { link.Disconnected(id, string(r)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	link, err = mqttlink.New(mqttlink.Options{Bus: b, Sessions: srv, Audio: audio, UDPPort: int(audio.Addr().Port())})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	go func() { _ = b.Run(ctx); done <- struct{}{} }()
	go func() { _ = audio.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()
	tools, stop := reg.Subscribe(hub.EventToolsChanged)
	defer stop()

	base := runtime.NumGoroutine()
	var devices []*mqttdevice.Device
	for i := range n {
		devices = append(devices, connect(ctx, t, b.Addr(), fmt.Sprintf("aa:00:00:00:00:%02x", i)))
	}
	waitTools(t, tools, n)
	// Discovery's goroutines end once the tools are stored; so do the
	// broker's connect-time ones. Wait for that, then count. The simulated
	// devices' read loops (one each) are theirs, not the hub's; what starts
	// with the first session (the keepalive, the registry's writer) is at
	// most fixed.
	const fixed = 10
	hubs := goroutinesAtMost(base+n*(maxGoroutinesPerIdleDevice+1)+fixed) - base - n
	if hubs > n*maxGoroutinesPerIdleDevice+fixed {
		t.Fatalf("%d idle MQTT devices cost the hub %d goroutines (%.2f each), want at most %d each", n, hubs, float64(hubs)/n, maxGoroutinesPerIdleDevice)
	}
	t.Logf("%d idle MQTT devices: %d goroutines of the hub (%.2f each)", n, hubs, float64(hubs)/n)
	for _, d := range devices {
		d.Close()
	}
}

// connect logs a simulated device in and answers the hub's discovery
// (initialize, tools/list) with one tool, as firmware 2.x does.
func connect(ctx context.Context, t *testing.T, addr, id string) *mqttdevice.Device {
	t.Helper()
	d, err := mqttdevice.Connect(ctx, mqttdevice.Config{Endpoint: addr, ClientID: "GID_test@@@" + id, Username: id, Password: "x", PublishTopic: mqttbroker.UplinkTopic(id)})
	if err != nil {
		t.Fatal(err)
	}
	for listed := false; !listed; {
		var m mqttdevice.Message
		select {
		case m = <-d.Messages():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the hub asked nothing", id)
		}
		var env struct {
			SessionID string `json:"session_id"`
			Payload   struct {
				ID     *int64 `json:"id"`
				Method string `json:"method"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(m.Payload, &env); err != nil || env.Payload.ID == nil {
			continue // a notification
		}
		var result string
		switch env.Payload.Method {
		case "initialize":
			result = `{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"sim","version":"2.4.2"}}`
		case "tools/list":
			result = `{"tools":[{"name":"self.get_device_status","description":"status","inputSchema":{"type":"object","properties":{}}}]}`
			listed = true
		default:
			continue
		}
		reply := fmt.Sprintf(`{"session_id":%q,"type":"mcp","payload":{"jsonrpc":"2.0","id":%d,"result":%s}}`, env.SessionID, *env.Payload.ID, result)
		if err := d.Publish([]byte(reply)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func waitTools(t *testing.T, events <-chan hub.Event, n int) {
	t.Helper()
	for range n {
		select {
		case <-events:
		case <-time.After(30 * time.Second):
			t.Fatal("devices' tools were not cached")
		}
	}
}

// goroutinesAtMost waits up to 30 s until at most limit goroutines run,
// and returns how many run.
func goroutinesAtMost(limit int) int {
	deadline := time.Now().Add(30 * time.Second)
	for {
		g := runtime.NumGoroutine()
		if g <= limit || time.Now().After(deadline) {
			return g
		}
		time.Sleep(10 * time.Millisecond)
	}
}
