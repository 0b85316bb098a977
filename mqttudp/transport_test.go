package mqttudp_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/internal/refusals"
	"github.com/xiaozhi-hub/hub/mqttudp"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

const (
	deviceID = "aa:bb:cc:dd:ee:ff"
	token    = "the-device-token"
)

// trust accepts the device's own login with its token.
type trust struct{}

func (trust) AuthorizeMQTT(_ context.Context, clientID, username, password, _ string) (protocol.Identity, error) {
	id, err := protocol.ParseMQTTLogin(clientID, username, password)
	if err == nil && password != token {
		err = hub.Errorf(hub.EUNAUTHORIZED, "the token is not this device's")
	}
	return id, err
}

// metricsRec keeps what the transport exports.
type metricsRec struct {
	mu         sync.Mutex
	gauges     map[string]func() float64
	families   map[string]func() map[string]uint64
	handshakes map[string]int
}

func newMetrics() *metricsRec {
	return &metricsRec{gauges: map[string]func() float64{}, families: map[string]func() map[string]uint64{}, handshakes: map[string]int{}}
}

func (m *metricsRec) Gauge(name, _ string, f func() float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gauges[name] = f
}

func (m *metricsRec) CounterFunc(name, help string, f func() float64) { m.Gauge(name, help, f) }

func (m *metricsRec) CountersFunc(name, _, _ string, f func() map[string]uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.families[name] = f
}

func (m *metricsRec) Handshake(outcome string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handshakes[outcome]++
}

func (m *metricsRec) handshake(outcome string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.handshakes[outcome]
}

func (m *metricsRec) gauge(name string) float64 {
	m.mu.Lock()
	f := m.gauges[name]
	m.mu.Unlock()
	return f()
}

func (m *metricsRec) family(name string) map[string]uint64 {
	m.mu.Lock()
	f := m.families[name]
	m.mu.Unlock()
	if f == nil {
		return nil
	}
	return f()
}

// devices knows the one device and passes on the events recorded for it.
type devices struct{ events chan string }

func (devices) Device(id string) (hub.Device, error) {
	if id != deviceID {
		return hub.Device{}, hub.Errorf(hub.ENOTFOUND, "unknown device")
	}
	return hub.Device{ID: id}, nil
}

func (d devices) Record(typ, id string, _ any) { d.events <- typ + " " + id }

// sessions serves each device with an inbox that passes its messages on.
type sessions struct{ served chan served }

type served struct {
	id    protocol.Identity
	conn  session.Idle
	inbox *inbox
}

type inbox struct {
	texts chan string
	ended chan string
}

func (in *inbox) Receive(m session.Message) { in.texts <- string(m.Text) }
func (in *inbox) End(reason string) {
	select {
	case in.ended <- reason:
	default: // ended already
	}
}

func (s sessions) ServeIdle(c session.Idle, id protocol.Identity, _ string) session.Inbox {
	in := &inbox{texts: make(chan string, 8), ended: make(chan string, 1)}
	s.served <- served{id, c, in}
	return in
}

type rig struct {
	*mqttudp.Transport
	metrics  *metricsRec
	events   chan string
	sessions sessions
}

// bind binds a transport with settings s and the rig's fakes.
func bind(t *testing.T, s config.MQTT) (*rig, error) {
	t.Helper()
	r := &rig{metrics: newMetrics(), events: make(chan string, 8), sessions: sessions{make(chan served, 4)}}
	tr, err := mqttudp.Bind(mqttudp.Options{Settings: s, Refusals: &refusals.Reports{}, Devices: devices{r.events}, Metrics: r.metrics})
	r.Transport = tr
	return r, err
}

// serve binds, wires and starts an embedded broker on loopback.
func serve(t *testing.T) *rig {
	t.Helper()
	r, err := bind(t, config.MQTT{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if err := r.Wire(trust{}, r.sessions); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

func login(ctx context.Context, addr, password string) (*mqttdevice.Device, error) {
	return mqttdevice.Connect(ctx, mqttdevice.Config{
		Endpoint: addr, ClientID: protocol.MQTTClientID(deviceID, "client-1"), Username: deviceID, Password: password,
		PublishTopic: protocol.UplinkTopic(deviceID),
	})
}

// A device that logs in to the embedded broker becomes a session of the
// device endpoint: its messages reach the session, the session's reach
// the device, it counts as an MQTT device, and Stop ends the session and
// the device's connection and releases the broker's port.
func TestDeviceOnTheEmbeddedBrokerBecomesASession(t *testing.T) {
	r := serve(t)
	ctx := t.Context()
	d, err := login(ctx, r.MQTTAddr(), token)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := <-r.sessions.served
	if s.id.DeviceID != deviceID || s.id.ClientID != "client-1" {
		t.Fatalf("served %+v, want device %s with Client-Id client-1", s.id, deviceID)
	}
	if err := d.Publish([]byte(`{"type":"mcp","payload":{}}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-s.inbox.texts; got != `{"type":"mcp","payload":{}}` {
		t.Fatalf("the session received %q", got)
	}
	if err := s.conn.WriteText(ctx, []byte(`{"type":"mcp","payload":{"id":1}}`)); err != nil {
		t.Fatal(err)
	}
	if m := <-d.Messages(); m.Topic != protocol.DownlinkTopic(deviceID) || string(m.Payload) != `{"type":"mcp","payload":{"id":1}}` {
		t.Fatalf("the device received %q on %s", m.Payload, m.Topic)
	}
	if n := r.metrics.gauge("xiaozhi_hub_mqtt_devices"); n != 1 {
		t.Fatalf("xiaozhi_hub_mqtt_devices = %v, want 1", n)
	}

	addr := r.MQTTAddr()
	r.Stop()
	if reason := <-s.inbox.ended; reason == "" {
		t.Fatal("the session ended without a reason")
	}
	<-d.Done()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the broker's port is still held after Stop: %v", err)
	}
	ln.Close()
}

// A refused login is counted as a refused MQTT handshake and recorded as
// the named device's connection_refused event.
func TestRefusedLoginIsCountedAndReported(t *testing.T) {
	r := serve(t)
	if d, err := login(t.Context(), r.MQTTAddr(), "not-the-token"); err == nil {
		d.Close()
		t.Fatal("a wrong token logged in")
	}
	if ev := <-r.events; ev != hub.EventConnectionRefused+" "+deviceID {
		t.Fatalf("recorded %q", ev)
	}
	if n := r.metrics.handshake("mqtt_refused"); n != 1 {
		t.Fatalf("mqtt_refused handshakes = %d, want 1", n)
	}
	dropped := r.metrics.family("xiaozhi_hub_mqtt_dropped_total")
	if _, ok := dropped["write_failed"]; !ok {
		t.Errorf("xiaozhi_hub_mqtt_dropped_total has no reason write_failed: %v", dropped)
	}
	if _, ok := dropped["send_queue_full"]; ok {
		t.Errorf("xiaozhi_hub_mqtt_dropped_total still has the old reason send_queue_full")
	}
}

// Without udp-listen, UDP audio is on mqtt-listen's host and port; the
// OTA answer offers the broker's bound port unless mqtt-public names one;
// a hub whose Open fails before serving releases both sockets.
func TestBindBeforeServing(t *testing.T) {
	r, err := bind(t, config.MQTT{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	mqttAddr, udpAddr := r.MQTTAddr(), r.UDPAddr()
	if udpAddr != mqttAddr {
		t.Errorf("UDP audio on %s, want the broker's address %s", udpAddr, mqttAddr)
	}
	_, port, _ := net.SplitHostPort(mqttAddr)
	if host, p := r.Offer(); host != "" || port != strconv.Itoa(p) {
		t.Errorf("Offer = %q, %d; want the broker's port %s", host, p, port)
	}
	if r.AuthHandler() != nil {
		t.Error("the embedded broker has an authenticator for an external one")
	}
	r.Stop()
	again, err := bind(t, config.MQTT{Listen: mqttAddr, PublicHost: "hub.example", PublicPort: 8883})
	if err != nil {
		t.Fatalf("the sockets are still held after Stop: %v", err)
	}
	defer again.Stop()
	if host, p := again.Offer(); host != "hub.example" || p != 8883 {
		t.Errorf("Offer = %q, %d; want mqtt-public's hub.example, 8883", host, p)
	}
}

// With an external broker, the hub answers the broker's login checks
// (POST /mqtt/auth) and reports the refused ones like the embedded
// broker's.
func TestExternalBrokersLoginsAreChecked(t *testing.T) {
	broker, _ := url.Parse("mqtt://127.0.0.1:1") // never dialled: the transport is not started
	r, err := bind(t, config.MQTT{Broker: broker, UDPListen: "127.0.0.1:0", PublicPort: 1883, BrokerSecret: "broker-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if err := r.Wire(trust{}, r.sessions); err != nil {
		t.Fatal(err)
	}
	auth := httptest.NewServer(r.AuthHandler())
	defer auth.Close()
	ask := func(password string) string {
		body := `{"clientid":"` + protocol.MQTTClientID(deviceID, "client-1") + `","username":"` + deviceID + `","password":"` + password + `","peerhost":"192.0.2.7"}`
		req, _ := http.NewRequestWithContext(t.Context(), "POST", auth.URL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer broker-secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := ask(token); !strings.Contains(got, `"allow"`) {
		t.Errorf("the device's own login: %s", got)
	}
	if got := ask("not-the-token"); !strings.Contains(got, `"deny"`) {
		t.Errorf("a wrong token: %s", got)
	}
	select { // reported before the answer
	case ev := <-r.events:
		if ev != hub.EventConnectionRefused+" "+deviceID {
			t.Fatalf("recorded %q", ev)
		}
	default:
		t.Fatal("the refused login was not recorded")
	}
	if n := r.metrics.handshake("mqtt_refused"); n != 1 {
		t.Fatalf("mqtt_refused handshakes = %d, want 1", n)
	}
	if host, p := r.Offer(); host != "" || p != 1883 {
		t.Errorf("Offer = %q, %d; want mqtt-public's port 1883", host, p)
	}
}
