package mqttbroker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	hub "github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type message struct {
	device  string
	payload string
}

// hubSide records what the broker reports, as the hub would see it.
type hubSide struct {
	events   chan string // "connect <id>" or "disconnect <id>: <reason>"
	messages chan message
	refusals chan Refusal
}

func startBroker(t testing.TB, mod func(*Config)) (*Broker, *hubSide) {
	t.Helper()
	h := &hubSide{events: make(chan string, 100), messages: make(chan message, 100), refusals: make(chan Refusal, 100)}
	cfg := Config{
		Addr:         "127.0.0.1:0",
		Authenticate: testAuth,
		OnConnect:    func(c Client) { h.events <- "connect " + c.DeviceID },
		OnDisconnect: func(id string, r Reason) { h.events <- "disconnect " + id + ": " + string(r) },
		OnMessage:    func(id string, p []byte) { h.messages <- message{id, string(p)} },
		OnRefused:    func(r Refusal) { h.refusals <- r },
	}
	if mod != nil {
		mod(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := b.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return b, h
}

// deviceConfig is what the device stores from the OTA answer.
func deviceConfig(t testing.TB, b *Broker, deviceID string) mqttdevice.Config {
	t.Helper()
	return loginOf(b, deviceID, "c1")
}

// loginOf is a device's MQTT login as the hub issues it: the client id
// carries the device's Client-Id, the password is its device token (here
// the test's own, which testAuth checks).
func loginOf(b *Broker, deviceID, clientID string) mqttdevice.Config {
	return mqttdevice.Config{Endpoint: b.Addr(), ClientID: protocol.MQTTClientID(deviceID, clientID), Username: deviceID,
		Password: testPassword(deviceID), PublishTopic: UplinkTopic(deviceID), Keepalive: 240}
}

func testPassword(deviceID string) string { return "token of " + deviceID }

func testAuth(clientID, username, password, remote string) (string, error) {
	id, err := protocol.ParseMQTTLogin(clientID, username, password)
	if err != nil {
		return "", err
	}
	if password != testPassword(id.DeviceID) {
		return "", hub.Errorf(hub.EUNAUTHORIZED, "wrong password")
	}
	return id.DeviceID, nil
}

func connect(t *testing.T, cfg mqttdevice.Config) *mqttdevice.Device {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := mqttdevice.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Drop() })
	return d
}

func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func expectEvent(t *testing.T, h *hubSide, want string) {
	t.Helper()
	if got := next(t, h.events, want); got != want {
		t.Fatalf("event %q, want %q", got, want)
	}
}

const mcpInit = `{"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}}`

func TestIdleDeviceReachableOverMQTT(t *testing.T) {
	b, h := startBroker(t, nil)
	a := connect(t, deviceConfig(t, b, "aa:bb:cc:dd:ee:01"))
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:01")
	other := connect(t, deviceConfig(t, b, "aa:bb:cc:dd:ee:02"))
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:02")

	// The device never subscribed, yet the hub's request reaches it.
	if err := b.Publish("aa:bb:cc:dd:ee:01", []byte(mcpInit)); err != nil {
		t.Fatal(err)
	}
	m := next(t, a.Messages(), "the MCP request")
	if string(m.Payload) != mcpInit || m.Topic != DownlinkTopic("aa:bb:cc:dd:ee:01") {
		t.Fatalf("device got %q on %q", m.Payload, m.Topic)
	}
	reply := `{"session_id":"","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{}}}`
	if err := a.Publish([]byte(reply)); err != nil {
		t.Fatal(err)
	}
	if got := next(t, h.messages, "the reply"); got != (message{"aa:bb:cc:dd:ee:01", reply}) {
		t.Fatalf("hub got %+v", got)
	}
	// The other device saw none of it.
	if err := b.Publish("aa:bb:cc:dd:ee:02", []byte(`{"type":"mcp","n":2}`)); err != nil {
		t.Fatal(err)
	}
	if m := next(t, other.Messages(), "the second device's message"); string(m.Payload) != `{"type":"mcp","n":2}` {
		t.Fatalf("second device got %q first", m.Payload)
	}
	if err := b.Publish("aa:bb:cc:dd:ee:03", []byte(mcpInit)); hub.ErrorCode(err) != hub.EOFFLINE {
		t.Fatalf("Publish to an unknown device: %v", err)
	}
}

func TestWrongCredentialsRefused(t *testing.T) {
	b, h := startBroker(t, nil)
	cfg := deviceConfig(t, b, "aa:bb:cc:dd:ee:01")
	cfg.Password = strings.ToUpper(cfg.Password)
	_, err := mqttdevice.Connect(context.Background(), cfg)
	if !errors.Is(err, mqttdevice.ErrRefused) {
		t.Fatalf("Connect with a wrong password: %v", err)
	}
	r := next(t, h.refusals, "the refusal")
	if r.ClientID != cfg.ClientID || r.DeviceID != "" || r.Reason != "wrong password" {
		t.Fatalf("refusal %+v", r)
	}
	select {
	case e := <-h.events:
		t.Fatalf("event %q for a refused device", e)
	default:
	}
}

func TestClientIDOfAnotherDeviceRefused(t *testing.T) {
	b, h := startBroker(t, nil)
	mine := deviceConfig(t, b, "aa:bb:cc:dd:ee:01")
	mine.ClientID = deviceConfig(t, b, "aa:bb:cc:dd:ee:02").ClientID
	if _, err := mqttdevice.Connect(context.Background(), mine); !errors.Is(err, mqttdevice.ErrRefused) {
		t.Fatalf("Connect with another device's client id: %v", err)
	}
	next(t, h.refusals, "the refusal")
	// Nor can the other device's client id be used to take over its session.
	victim := connect(t, deviceConfig(t, b, "aa:bb:cc:dd:ee:02"))
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:02")
	if _, err := mqttdevice.Connect(context.Background(), mine); !errors.Is(err, mqttdevice.ErrRefused) {
		t.Fatalf("second attempt: %v", err)
	}
	if err := b.Publish("aa:bb:cc:dd:ee:02", []byte(`{"type":"x"}`)); err != nil {
		t.Fatal(err)
	}
	next(t, victim.Messages(), "the victim's message")
}

func TestForeignTopicsRefused(t *testing.T) {
	b, h := startBroker(t, nil)
	a := connect(t, deviceConfig(t, b, "aa:bb:cc:dd:ee:01"))
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:01")
	victim := connect(t, deviceConfig(t, b, "aa:bb:cc:dd:ee:02"))
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:02")

	_ = a.PublishTo(UplinkTopic("aa:bb:cc:dd:ee:02"), []byte(`{"type":"goodbye"}`)) // speak as the victim
	_ = a.PublishTo(DownlinkTopic("aa:bb:cc:dd:ee:02"), []byte(`{"type":"hello"}`)) // talk to the victim
	_ = a.Subscribe("#")                                                            // listen to everyone
	for _, want := range []string{"publish to foreign topic " + UplinkTopic("aa:bb:cc:dd:ee:02"),
		"publish to foreign topic " + DownlinkTopic("aa:bb:cc:dd:ee:02"), "subscribe to foreign topic #"} {
		r := next(t, h.refusals, want)
		if r.DeviceID != "aa:bb:cc:dd:ee:01" || r.Reason != want {
			t.Fatalf("refusal %+v, want %q", r, want)
		}
	}
	// The offender stays connected and its own topic still works; nothing
	// reached the victim or the hub on the victim's behalf.
	_ = a.Publish([]byte(`{"type":"ok"}`))
	if got := next(t, h.messages, "the offender's own message"); got != (message{"aa:bb:cc:dd:ee:01", `{"type":"ok"}`}) {
		t.Fatalf("hub got %+v", got)
	}
	_ = b.Publish("aa:bb:cc:dd:ee:02", []byte(`{"type":"for victim"}`))
	if m := next(t, victim.Messages(), "the victim's message"); string(m.Payload) != `{"type":"for victim"}` {
		t.Fatalf("victim got %q", m.Payload)
	}
	_ = b.Publish("aa:bb:cc:dd:ee:01", []byte(`{"type":"for a"}`))
	if m := next(t, a.Messages(), "a's message"); string(m.Payload) != `{"type":"for a"}` {
		t.Fatalf("the '#' subscriber got %q (another device's traffic)", m.Payload)
	}
}

func TestDisconnectsReportedWithReason(t *testing.T) {
	b, h := startBroker(t, func(c *Config) { c.MaxKeepalive = 600 })
	id := "aa:bb:cc:dd:ee:01"

	clean := connect(t, deviceConfig(t, b, id))
	expectEvent(t, h, "connect "+id)
	clean.Close()
	expectEvent(t, h, "disconnect "+id+": "+string(ReasonDisconnect))

	dropped := connect(t, deviceConfig(t, b, id))
	expectEvent(t, h, "connect "+id)
	dropped.Drop() // no DISCONNECT
	expectEvent(t, h, "disconnect "+id+": "+string(ReasonClosed))

	cfg := deviceConfig(t, b, id)
	cfg.Keepalive = 1 // and never pings: the broker gives up after 1.5 s
	silent := connect(t, cfg)
	expectEvent(t, h, "connect "+id)
	expectEvent(t, h, "disconnect "+id+": "+string(ReasonKeepalive))
	next(t, silent.Done(), "the device to see its connection closed")
	if b.Connected(id) {
		t.Fatal("still connected after the keepalive expired")
	}
}

func TestKeepaliveZeroIsCapped(t *testing.T) {
	b, h := startBroker(t, func(c *Config) { c.MaxKeepalive = 1 })
	cfg := deviceConfig(t, b, "aa:bb:cc:dd:ee:01")
	cfg.NoKeepalive = true // asks never to be timed out, then goes silent
	connect(t, cfg)
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:01")
	expectEvent(t, h, "disconnect aa:bb:cc:dd:ee:01: "+string(ReasonKeepalive))
}

func TestNewConnectionReplacesOld(t *testing.T) {
	b, h := startBroker(t, nil)
	id := "aa:bb:cc:dd:ee:01"
	old := connect(t, deviceConfig(t, b, id))
	expectEvent(t, h, "connect "+id)
	fresh := connect(t, deviceConfig(t, b, id)) // reboot: same client id
	expectEvent(t, h, "disconnect "+id+": "+string(ReasonReplaced))
	expectEvent(t, h, "connect "+id)
	next(t, old.Done(), "the old connection to close")

	newer := connect(t, loginOf(b, id, "c2")) // re-flashed: another client id

	expectEvent(t, h, "disconnect "+id+": "+string(ReasonReplaced))
	expectEvent(t, h, "connect "+id)
	next(t, fresh.Done(), "the previous connection to close")

	_ = b.Publish(id, []byte(`{"type":"x"}`))
	next(t, newer.Messages(), "the message on the newest connection")
	select {
	case e := <-h.events:
		t.Fatalf("unexpected event %q (the replaced connections must not report again)", e)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestBadPayloadsDroppedAndCounted(t *testing.T) {
	b, h := startBroker(t, func(c *Config) { c.MaxMessage = 1024 })
	d := connect(t, deviceConfig(t, b, "aa:bb:cc:dd:ee:01"))
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:01")
	_ = d.Publish([]byte(`{"x":"` + strings.Repeat("a", 2000) + `"}`))
	_ = d.Publish([]byte("not json"))
	_ = d.Publish([]byte{0x7b, 0xff, 0xfe})
	// The firmware's unescaped MCP error is passed on: the session recovers its id.
	broken := `{"session_id":"","type":"mcp","payload":{"jsonrpc":"2.0","id":9,"error":{"message":"Invalid mode: a"b"}}}`
	_ = d.Publish([]byte(broken))
	if got := next(t, h.messages, "the broken-JSON reply"); got.payload != broken {
		t.Fatalf("hub got %q", got.payload)
	}
	if st := b.Stats(); st.Oversized != 1 || st.NotJSON != 2 {
		t.Fatalf("stats %+v", st)
	}
	// A packet far over the limit ends the connection instead of being read.
	_ = d.Publish([]byte(`{"x":"` + strings.Repeat("a", 8000) + `"}`))
	expectEvent(t, h, "disconnect aa:bb:cc:dd:ee:01: "+string(ReasonProtocol)+": packet too large")
}

func TestConnectionBounds(t *testing.T) {
	b, _ := startBroker(t, func(c *Config) { c.MaxConnections = 2; c.ConnectTimeout = 300 * time.Millisecond })
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	// A third connection is closed at once; the two idle ones (never sending
	// CONNECT) are closed after ConnectTimeout.
	waitClosed := func(c net.Conn, what string) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s still open: %v", what, err)
		}
	}
	third, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	waitClosed(third, "a connection over MaxConnections")
	for _, c := range idle {
		waitClosed(c, "a connection that never sent CONNECT")
	}
	if st := b.Stats(); st.OverLimit < 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestMessageFloodBounded(t *testing.T) {
	b, h := startBroker(t, func(c *Config) { c.MessageRate = 0.001; c.MessageBurst = 10 })
	d := connect(t, deviceConfig(t, b, "aa:bb:cc:dd:ee:01"))
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:01")
	for i := range 30 {
		_ = d.Publish([]byte(fmt.Sprintf(`{"type":"mcp","n":%d}`, i)))
	}
	for i := range 10 {
		if m := next(t, h.messages, "a message within the burst"); m.payload != fmt.Sprintf(`{"type":"mcp","n":%d}`, i) {
			t.Fatalf("message %d: %q", i, m.payload)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.Stats().RateLimited != 20 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want 20 rate-limited", b.Stats())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if len(h.messages) != 0 {
		t.Fatalf("%d messages over the rate reached the hub", len(h.messages))
	}
	// Another device is unaffected.
	other := connect(t, deviceConfig(t, b, "aa:bb:cc:dd:ee:02"))
	expectEvent(t, h, "connect aa:bb:cc:dd:ee:02")
	_ = other.Publish([]byte(`{"type":"x"}`))
	if m := next(t, h.messages, "the other device's message"); m.device != "aa:bb:cc:dd:ee:02" {
		t.Fatalf("got %+v", m)
	}
}

// The hub's messages are written on the caller's goroutine: a device that
// stops reading holds its caller up no longer than WriteTimeout, after
// which Publish fails and the device is disconnected (its next messages
// could not follow a packet cut in half).
func TestDeviceThatStopsReadingIsCutOff(t *testing.T) {
	b, h := startBroker(t, func(c *Config) { c.WriteTimeout = 100 * time.Millisecond })
	const id = "aa:bb:cc:dd:ee:77"
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := conn.Write(connect311(protocol.MQTTClientID(id, "c1"), id, testPassword(id))); err != nil {
		t.Fatal(err)
	}
	connack := make([]byte, 4)
	if _, err := io.ReadFull(conn, connack); err != nil || connack[0] != 0x20 || connack[3] != 0 {
		t.Fatalf("CONNACK %x, %v", connack, err)
	}
	expectEvent(t, h, "connect "+id)
	payload := []byte(`{"type":"x","pad":"` + strings.Repeat("a", 60_000) + `"}`)
	for i := 0; ; i++ { // the device reads nothing from here on
		if err := b.Publish(id, payload); err != nil {
			break
		}
		if i == 10_000 {
			t.Fatal("600 MB written to a device that reads nothing")
		}
	}
	expectEvent(t, h, "disconnect "+id+": "+string(ReasonClosed))
	if s := b.Stats(); s.SendDropped != 1 {
		t.Fatalf("SendDropped = %d, want 1", s.SendDropped)
	}
}

// connect311 is an MQTT 3.1.1 CONNECT with a clean session, keepalive 240
// and a username and password, as the firmware sends it.
func connect311(clientID, username, password string) []byte {
	str := func(b []byte, s string) []byte { return append(append(b, byte(len(s)>>8), byte(len(s))), s...) }
	body := str(nil, "MQTT")
	body = append(body, 4, 0xC2, 0, 240)
	body = str(str(str(body, clientID), username), password)
	pk := []byte{0x10}
	for n := len(body); ; {
		d := byte(n % 128)
		if n /= 128; n > 0 {
			pk = append(pk, d|0x80)
			continue
		}
		pk = append(pk, d)
		break
	}
	return append(pk, body...)
}
