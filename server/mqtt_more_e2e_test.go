package server_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

// A conversation over MQTT+UDP: the device's hello (version 3, udp) gets a
// server hello the firmware accepts, with a fresh key per hello; its audio
// reaches the hub over UDP; its goodbye closes the UDP channel but not the
// MQTT session (the device stays online and controllable).
func TestConversationOverMQTTAndUDP(t *testing.T) {
	h := mqttHub(t, "", nil)
	const id = "aa:00:00:00:4d:11"
	d := connectMQTT(t, mqttLogin(t, otaCheck(t, h, id, "uuid-4d-11")))
	dev := serveMCP(t, d)
	h.readyTools(id)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	ch, err := d.OpenAudio(ctx)
	if err != nil {
		t.Fatalf("the hub's server hello was not accepted by the firmware's rules: %v", err)
	}
	first := d.SessionID()
	if first == "" || h.metric(t, "xiaozhi_hub_udp_sessions") != 1 {
		t.Fatalf("session %q, udp sessions %v", first, h.metric(t, "xiaozhi_hub_udp_sessions"))
	}
	for i := range 5 {
		if err := ch.SendAudio([]byte{0xf8, 0xff, 0xfe, byte(i)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the audio datagrams to be accepted", func() bool {
		return h.metric(t, `xiaozhi_hub_udp_datagrams_total{outcome="accepted"}`) == 5
	})
	waitFor(t, "the audio frames to reach the session", func() bool {
		return h.metric(t, `xiaozhi_hub_device_messages_total{direction="in",type="audio"}`) == 5
	})
	if err := ch.Close(true); err != nil { // the device's goodbye
		t.Fatal(err)
	}
	waitFor(t, "the UDP channel to close", func() bool { return h.metric(t, "xiaozhi_hub_udp_sessions") == 0 })
	if st, body := h.call("POST", "/api/devices/"+id+"/tools/self.light.set/call", map[string]any{"arguments": map[string]any{"on": true}}); st != 200 || !dev.lightOn() {
		t.Fatalf("after the goodbye the device must stay controllable: %d %v", st, body)
	}

	// The next conversation gets a new session and fresh keys.
	ch2, err := d.OpenAudio(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.SessionID() == "" || ch2 == ch {
		t.Fatal("no second conversation")
	}
	if err := ch2.SendAudio([]byte{1}, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "audio of the second conversation", func() bool {
		return h.metric(t, `xiaozhi_hub_udp_datagrams_total{outcome="accepted"}`) == 6
	})
	// Datagrams of the first conversation's channel are unknown now.
	if err := ch.SendRaw(make([]byte, 20)); err == nil {
		t.Log("sent a datagram on the closed channel") // the socket is closed: nothing to count
	}
}

// Hub restart: the MQTT device reconnects by itself (the firmware retries)
// and its cached tools are served at once, before it answers anything.
func TestMQTTDeviceCacheServedAfterRestart(t *testing.T) {
	dir := t.TempDir()
	h := mqttHub(t, dir, nil)
	const id = "aa:00:00:00:4d:21"
	login := mqttLogin(t, otaCheck(t, h, id, "uuid-4d-21"))
	d := connectMQTT(t, login)
	serveMCP(t, d)
	h.readyTools(id)
	h.stop()
	select {
	case <-d.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the device's MQTT connection outlived the hub")
	}

	h2 := mqttHub(t, dir, nil)
	login.Endpoint = h2.MQTTAddr() // a new port on loopback; a real hub keeps its port
	d2 := connectMQTT(t, login)    // same login: it survives the restart
	defer d2.Drop()
	// The device answers nothing: its tools come from the cache.
	waitFor(t, "online", func() bool {
		_, dev := h2.call("GET", "/api/devices/"+id, nil)
		return dev["online"] == true
	})
	_, body := h2.call("GET", "/api/devices/"+id+"/tools", nil)
	if tools, _ := body["tools"].([]any); len(tools) != 2 {
		t.Fatalf("tools served from the cache after the restart: %v", body)
	}
}

// Hostile MQTT input: wrong passwords, another device's client id, foreign
// topics, oversized and non-JSON payloads, bad UDP datagrams. Each is
// refused or dropped and counted, refusals naming a known device become its
// events, and the well-behaved device beside them is unaffected.
func TestHostileMQTTInput(t *testing.T) {
	h := mqttHub(t, "", nil)
	const good, bad = "aa:00:00:00:4d:31", "aa:00:00:00:4d:32"
	goodLogin := mqttLogin(t, otaCheck(t, h, good, "uuid-good"))
	g := connectMQTT(t, goodLogin)
	dev := serveMCP(t, g)
	h.readyTools(good)
	badLogin := mqttLogin(t, otaCheck(t, h, bad, "uuid-bad"))
	b := connectMQTT(t, badLogin)
	serveMCP(t, b)
	h.readyTools(bad)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	wrong := goodLogin
	wrong.Password = badLogin.Password
	if _, err := mqttdevice.Connect(ctx, wrong); !errors.Is(err, mqttdevice.ErrRefused) {
		t.Fatalf("another device's password: %v", err)
	}
	h.waitEvent(good, "connection_refused")
	stolen := badLogin
	stolen.ClientID = goodLogin.ClientID
	if _, err := mqttdevice.Connect(ctx, stolen); !errors.Is(err, mqttdevice.ErrRefused) {
		t.Fatalf("another device's client id: %v", err)
	}
	if err := b.PublishTo(goodLogin.PublishTopic, []byte(`{"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{}}}`)); err != nil {
		t.Fatal(err)
	}
	h.waitEvent(bad, "foreign topic")
	_ = b.Publish([]byte(strings.Repeat("x", 100)))
	_ = b.Publish([]byte(`{"type":"listen","pad":"` + strings.Repeat("y", 70<<10) + `"}`))
	waitFor(t, "the bad payloads to be counted", func() bool {
		return h.metric(t, `xiaozhi_hub_mqtt_dropped_total{reason="not_json"}`) >= 1 &&
			h.metric(t, `xiaozhi_hub_mqtt_dropped_total{reason="oversized"}`) >= 1
	})

	// UDP garbage at the audio port: short, wrong type, unknown session.
	if _, err := g.OpenAudio(ctx); err != nil {
		t.Fatal(err)
	}
	udp, err := net.Dial("udp", h.UDPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	for _, p := range [][]byte{{1, 2, 3}, append([]byte{9}, make([]byte, 30)...), append([]byte{1, 0, 0, 4, 0xde, 0xad, 0xbe, 0xef}, make([]byte, 12)...)} {
		_, _ = udp.Write(p)
	}
	waitFor(t, "the bad datagrams to be counted", func() bool {
		return h.metric(t, `xiaozhi_hub_udp_datagrams_total{outcome="dropped_shape"}`) >= 2 &&
			h.metric(t, `xiaozhi_hub_udp_datagrams_total{outcome="dropped_unknown_session"}`) >= 1
	})

	// A flood of unsolicited messages disconnects the device, as on WebSocket.
	for range 1000 {
		if b.Publish([]byte(`{"type":"listen","state":"detect","text":"hi"}`)) != nil {
			break
		}
	}
	select {
	case <-b.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the flooding device is still connected")
	}
	h.waitEvent(bad, "too many messages")

	if st, body := h.call("POST", "/api/devices/"+good+"/tools/self.light.set/call", map[string]any{"arguments": map[string]any{"on": true}}); st != 200 || !dev.lightOn() {
		t.Fatalf("the good device after the attacks: %d %v", st, body)
	}
}

// A person keeps a device on WebSocket: its next OTA check carries no mqtt
// object (the firmware then uses the websocket one), and "auto" brings
// MQTT back.
func TestKeepADeviceOnWebSocket(t *testing.T) {
	dir := t.TempDir()
	h := mqttHub(t, dir, nil)
	const id = "aa:00:00:00:4d:41"
	serveMCP(t, connectMQTT(t, mqttLogin(t, otaCheck(t, h, id, "uuid-4d-41"))))
	h.readyTools(id)
	if st, _ := h.callWith("", "PUT", "/api/devices/"+id+"/transport", map[string]any{"transport": "websocket"}); st != 401 {
		t.Fatalf("without a token = %d", st)
	}
	if st, body := h.call("PUT", "/api/devices/"+id+"/transport", map[string]any{"transport": "websocket"}); st != 200 || body["transport"] != "websocket" {
		t.Fatalf("keep on WebSocket = %d %v", st, body)
	}
	if ans := otaCheck(t, h, id, "uuid-4d-41"); ans["mqtt"] != nil || tokenOf(ans) == "" {
		t.Fatalf("OTA answer for a device kept on WebSocket: %v", ans)
	}
	h.stop() // the choice is stored
	h = mqttHub(t, dir, nil)
	if ans := otaCheck(t, h, id, "uuid-4d-41"); ans["mqtt"] != nil {
		t.Fatalf("after a restart, OTA answer for a device kept on WebSocket: %v", ans)
	}
	if st, body := h.call("PUT", "/api/devices/"+id+"/transport", map[string]any{"transport": "pigeon"}); st != 400 && st != 422 {
		t.Fatalf("unknown transport = %d %v", st, body)
	}
	if st, _ := h.call("PUT", "/api/devices/"+id+"/transport", map[string]any{"transport": "auto"}); st != 200 {
		t.Fatal(st)
	}
	mqttLogin(t, otaCheck(t, h, id, "uuid-4d-41"))
}

// The simulated firmware follows the OTA answer to MQTT like the real one,
// and is served while idle: its tools are discovered and called; a legacy
// IoT device on MQTT sends its things when a conversation opens, and takes
// commands.
func TestSimDevicesOverMQTT(t *testing.T) {
	h := mqttHub(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	boot := func(cfg sim.Config) *sim.Device {
		cfg.OTAURL = h.OTAURL()
		d := sim.New(cfg)
		if _, err := d.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		if err := d.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	d := boot(sim.Config{DeviceID: "aa:00:00:00:4d:51"})
	if d.MQTTSession() == nil {
		t.Fatal("the simulated device did not switch to MQTT")
	}
	h.readyTools(d.ID())
	if st, body := h.call("POST", "/api/devices/"+d.ID()+"/tools/self.audio_speaker.set_volume/call", map[string]any{"arguments": map[string]any{"volume": 42}}); st != 200 || d.Volume() != 42 {
		t.Fatalf("call = %d %v, volume %d", st, body, d.Volume())
	}

	iot := boot(sim.Config{DeviceID: "aa:00:00:00:4d:52", Mode: sim.ModeIoT})
	if _, err := iot.OpenConversation(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the IoT lamp", func() bool { return h.thing(iot.ID(), "Lamp") != nil })
	if st, body := h.call("POST", "/api/devices/"+iot.ID()+"/iot/commands", map[string]any{
		"commands": []map[string]any{{"name": "Lamp", "method": "TurnOn", "parameters": map[string]any{}}}}); st != 202 {
		t.Fatalf("IoT command = %d %v", st, body)
	}
	waitFor(t, "the IoT lamp on", iot.LampOn)
}
