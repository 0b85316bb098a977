package mqttbroker

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// rawClient speaks MQTT 3.1.1 or 5 packet by packet (mochi's encoder), to
// send what the firmware never does.
type rawClient struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
	v    byte // protocol version: 4 (3.1.1) or 5
}

func dialRaw(t testing.TB, addr string, version byte) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, conn: c, r: bufio.NewReader(c), v: version}
}

// connectPacket is a device's CONNECT with its login.
func (rc *rawClient) connectPacket(login loginConfig) packets.Packet {
	name := "MQTT"
	return packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: rc.v,
		Connect: packets.ConnectParams{
			ProtocolName: []byte(name), Clean: true, Keepalive: 60,
			ClientIdentifier: login.ClientID,
			UsernameFlag:     true, Username: []byte(login.Username),
			PasswordFlag: true, Password: []byte(login.Password),
		},
	}
}

type loginConfig struct{ ClientID, Username, Password string }

func rawLogin(b *Broker, deviceID string) loginConfig {
	l := loginOf(b, deviceID, "c1")
	return loginConfig{l.ClientID, l.Username, l.Password}
}

func (rc *rawClient) send(pk packets.Packet) {
	rc.t.Helper()
	pk.ProtocolVersion = rc.v
	var buf bytes.Buffer
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Publish:
		err = pk.PublishEncode(&buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(&buf)
	case packets.Disconnect:
		err = pk.DisconnectEncode(&buf)
	default:
		err = fmt.Errorf("cannot encode packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		rc.t.Fatal(err)
	}
	if _, err := rc.conn.Write(buf.Bytes()); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// read returns the next packet from the broker; an error when the
// connection ends (or nothing comes for 10 s).
func (rc *rawClient) read() (packets.Packet, error) {
	_ = rc.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	first, err := rc.r.ReadByte()
	if err != nil {
		return packets.Packet{}, err
	}
	pk := packets.Packet{ProtocolVersion: rc.v}
	if err := pk.FixedHeader.Decode(first); err != nil {
		return pk, err
	}
	n, _, err := packets.DecodeLength(rc.r)
	if err != nil {
		return pk, err
	}
	pk.FixedHeader.Remaining = n
	body := make([]byte, n)
	if _, err := io.ReadFull(rc.r, body); err != nil {
		return pk, err
	}
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackDecode(body)
	case packets.Publish:
		err = pk.PublishDecode(body)
	case packets.Suback:
		err = pk.SubackDecode(body)
	case packets.Disconnect:
		err = pk.DisconnectDecode(body)
	}
	return pk, err
}

func (rc *rawClient) mustRead(what string) packets.Packet {
	rc.t.Helper()
	pk, err := rc.read()
	if err != nil {
		rc.t.Fatalf("%s: %v", what, err)
	}
	return pk
}

// login connects with the device's login and expects CONNACK success.
func (rc *rawClient) login(l loginConfig) {
	rc.t.Helper()
	rc.send(rc.connectPacket(l))
	if ack := rc.mustRead("CONNACK"); ack.FixedHeader.Type != packets.Connack || ack.ReasonCode != 0 {
		rc.t.Fatalf("CONNACK %+v", ack)
	}
}

func protocolName(v byte) string {
	if v == 5 {
		return "MQTT5"
	}
	return "MQTT3.1.1"
}

// A logged-in device cannot make the broker publish on its behalf where
// the topic ACL does not let it publish itself: a CONNECT with a Last
// Will (on another device's downlink topic, with an MCP call the victim
// would run) is refused as not authorized, over MQTT 3.1.1 and 5, and
// nothing reaches the victim when the attacker's connection drops.
func TestLastWillRefused(t *testing.T) {
	for _, v := range []byte{4, 5} {
		t.Run(protocolName(v), func(t *testing.T) {
			b, h := startBroker(t, nil)
			const attacker, victim = "aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"
			vd := connect(t, deviceConfig(t, b, victim))
			expectEvent(t, h, "connect "+victim)

			for _, retain := range []bool{false, true} {
				rc := dialRaw(t, b.Addr(), v)
				pk := rc.connectPacket(rawLogin(b, attacker))
				pk.Connect.WillFlag, pk.Connect.WillRetain = true, retain
				pk.Connect.WillTopic = DownlinkTopic(victim)
				pk.Connect.WillPayload = []byte(`{"type":"mcp","payload":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"self.reboot","arguments":{}}}}`)
				rc.send(pk)
				ack := rc.mustRead("CONNACK")
				want := byte(0x87) // MQTT 5: not authorized
				if v < 5 {
					want = 5 // 3.1.1: connection refused, not authorized
				}
				if retain { // refused before the login is checked: retain is not available
					want = packets.ErrRetainNotSupported.Code
					if v < 5 {
						want = ack.ReasonCode // any refusal
					}
				}
				if ack.FixedHeader.Type != packets.Connack || ack.ReasonCode != want || ack.ReasonCode == 0 {
					t.Fatalf("answer to a CONNECT with a will (retain %v): packet type %d code %#x, want CONNACK code %#x", retain, ack.FixedHeader.Type, ack.ReasonCode, want)
				}
				if !retain {
					r := next(t, h.refusals, "the refusal")
					if r.DeviceID != attacker || r.Reason != ReasonWill {
						t.Fatalf("refusal %+v", r)
					}
				}
				if _, err := rc.read(); err == nil {
					t.Fatal("the refused connection stays open")
				}
				rc.conn.Close() // drop, as the attack does
			}
			if b.Connected(attacker) {
				t.Fatal("the device with a will is connected")
			}
			// The victim's first message is the hub's, not a will.
			if err := b.Publish(victim, []byte(`{"type":"from the hub"}`)); err != nil {
				t.Fatal(err)
			}
			if m := next(t, vd.Messages(), "the hub's message"); string(m.Payload) != `{"type":"from the hub"}` {
				t.Fatalf("the victim received %q on %s", m.Payload, m.Topic)
			}
		})
	}
}

// Every other path by which a broker publishes for a client is closed:
// retained messages (on the victim's topic or the device's own), $SYS
// topics, shared subscriptions ($share/…) and wildcards.
func TestNoPublishingOnAnotherDevicesBehalf(t *testing.T) {
	for _, v := range []byte{4, 5} {
		t.Run(protocolName(v), func(t *testing.T) {
			b, h := startBroker(t, nil)
			const attacker, victim = "aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"
			rc := dialRaw(t, b.Addr(), v)
			rc.login(rawLogin(b, attacker))
			expectEvent(t, h, "connect "+attacker)

			pub := func(topic string, retain bool, payload string) {
				rc.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: retain},
					TopicName: topic, Payload: []byte(payload)})
			}
			pub(DownlinkTopic(victim), true, `{"type":"retained for the victim"}`)
			pub("$SYS/broker/version", true, `{"type":"sys"}`)
			pub(UplinkTopic(attacker), true, `{"type":"retained uplink"}`)
			if m := next(t, h.messages, "the device's own message"); m != (message{attacker, `{"type":"retained uplink"}`}) {
				t.Fatalf("hub got %+v", m)
			}
			filters := []string{"$share/g/" + DownlinkTopic(victim), "$share/g/" + DownlinkTopic(attacker), "$SYS/#", "$SYS/broker/version",
				DownlinkTopic(victim), "xz/down/+", "#", UplinkTopic(victim)}
			var subs packets.Subscriptions
			for _, f := range filters {
				subs = append(subs, packets.Subscription{Filter: f})
			}
			rc.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, PacketID: 1, Filters: subs})
			ack := rc.mustRead("SUBACK")
			if ack.FixedHeader.Type != packets.Suback || len(ack.ReasonCodes) != len(filters) {
				t.Fatalf("SUBACK %+v", ack)
			}
			for i, c := range ack.ReasonCodes {
				if c < 0x80 {
					t.Errorf("subscription to %s granted (%#x)", filters[i], c)
				}
			}
			// The attacker's next message is the hub's (no $SYS value, no
			// retained message, nothing of the victim's).
			if err := b.Publish(attacker, []byte(`{"type":"for the attacker"}`)); err != nil {
				t.Fatal(err)
			}
			if m := rc.mustRead("the hub's message"); m.FixedHeader.Type != packets.Publish || string(m.Payload) != `{"type":"for the attacker"}` {
				t.Fatalf("the attacker received %+v", m)
			}
			// A victim connecting now gets no retained message: its first is the hub's.
			vd := connect(t, deviceConfig(t, b, victim))
			expectEvent(t, h, "connect "+victim)
			if err := b.Publish(victim, []byte(`{"type":"from the hub"}`)); err != nil {
				t.Fatal(err)
			}
			if m := next(t, vd.Messages(), "the hub's message"); string(m.Payload) != `{"type":"from the hub"}` {
				t.Fatalf("the victim received %q on %s", m.Payload, m.Topic)
			}
			for _, m := range b.srv.Topics.Retained.GetAll() {
				if !strings.HasPrefix(m.TopicName, "$SYS/") || string(m.Payload) == `{"type":"sys"}` {
					t.Errorf("retained %q on %s", m.Payload, m.TopicName)
				}
			}
		})
	}
}

// A device whose packets keep being refused is disconnected after
// MaxRefusals within the window (MQTT 5: DISCONNECT with the reason),
// so a loop of refused publishes costs a bounded number of refusal
// reports; a few refusals leave the connection in place.
func TestRefusedPublishLoopDisconnects(t *testing.T) {
	for _, v := range []byte{4, 5} {
		t.Run(protocolName(v), func(t *testing.T) {
			var refusals atomic.Int64
			b, h := startBroker(t, func(c *Config) { // default limit: 10 refusals a minute
				c.OnRefused = func(Refusal) { refusals.Add(1) }
			})
			const attacker, victim = "aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"
			rc := dialRaw(t, b.Addr(), v)
			rc.login(rawLogin(b, attacker))
			expectEvent(t, h, "connect "+attacker)
			const sent = 5000
			for i := range sent {
				pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: DownlinkTopic(victim), Payload: []byte(`{"type":"x"}`)}
				if i%2 == 1 { // and bad payloads on its own topic
					pk.TopicName, pk.Payload = UplinkTopic(attacker), []byte("not json")
				}
				var buf bytes.Buffer
				pk.ProtocolVersion = v
				_ = pk.PublishEncode(&buf)
				if _, err := rc.conn.Write(buf.Bytes()); err != nil {
					break // closed by the broker
				}
			}
			want := "disconnect " + attacker + ": " + string(ReasonRefusals)
			if e := next(t, h.events, "the disconnection"); !strings.HasPrefix(e, want) {
				t.Fatalf("event %q, want %q…", e, want)
			}
			if v == 5 {
				for {
					pk, err := rc.read()
					if err != nil {
						t.Fatalf("no DISCONNECT before the connection closed: %v", err)
					}
					if pk.FixedHeader.Type == packets.Disconnect {
						if pk.ReasonCode < 0x80 {
							t.Fatalf("DISCONNECT code %#x", pk.ReasonCode)
						}
						break
					}
				}
			}
			if n := refusals.Load(); n > 11 {
				t.Fatalf("%d refusals reported for %d refused packets", n, sent)
			}
			if st := b.Stats(); st.StruckOut != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
