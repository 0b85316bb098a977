package server_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// The attack of a device's Last Will, against the whole hub: a stranger
// gets a login from one OTA check (device-auth token), connects with a will
// on another device's downlink topic carrying an MCP call, and drops its
// connection or has it revoked. The CONNECT is refused (MQTT 5: 0x87 not
// authorized, 3.1.1: return code 5), and the victim runs only what the hub
// asks of it.
func TestMQTTLastWillCannotReachAnotherDevice(t *testing.T) {
	for _, v := range []byte{4, 5} {
		name := map[byte]string{4: "MQTT3.1.1", 5: "MQTT5"}[v]
		t.Run(name, func(t *testing.T) {
			h := mqttHub(t, "", nil)
			const victim, attacker = "aa:00:00:00:4d:81", "aa:00:00:00:4d:82"
			dev := serveMCP(t, connectMQTT(t, mqttLogin(t, otaCheck(t, h, victim, "uuid-4d-81"))))
			h.readyTools(victim)
			login := mqttLogin(t, otaCheck(t, h, attacker, "uuid-4d-82"))

			conn, err := net.DialTimeout("tcp", login.Endpoint, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: v,
				Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 60, ClientIdentifier: login.ClientID,
					UsernameFlag: true, Username: []byte(login.Username), PasswordFlag: true, Password: []byte(login.Password),
					WillFlag: true, WillTopic: "xz/down/" + victim,
					WillPayload: []byte(`{"type":"mcp","payload":{"jsonrpc":"2.0","id":424242,"method":"tools/call","params":{"name":"self.light.set","arguments":{"on":true}}}}`)}}
			var buf bytes.Buffer
			if err := pk.ConnectEncode(&buf); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Write(buf.Bytes()); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			r := bufio.NewReader(conn)
			head, err := r.ReadByte()
			if err != nil {
				t.Fatalf("no CONNACK: %v", err)
			}
			n, _, err := packets.DecodeLength(r)
			body := make([]byte, n)
			if _, rerr := io.ReadFull(r, body); err != nil || rerr != nil || head>>4 != packets.Connack || n < 2 {
				t.Fatalf("no CONNACK: %#x %v %v", head, err, rerr)
			}
			code := body[1]
			if code == 0 {
				waitFor(t, "the attacker online", func() bool {
					_, d := h.call("GET", "/api/devices/"+attacker, nil)
					return d["online"] == true
				})
			}

			// Whatever the answer, the attacker is revoked (404: it never
			// connected) and drops its connection: both fire a will the
			// broker holds.
			if st, body := h.call("POST", "/api/devices/"+attacker+"/token/revoke", nil); st != 200 && st != 404 {
				t.Fatalf("revoke = %d %v", st, body)
			}
			conn.Close()
			waitFor(t, "the attacker offline", func() bool {
				_, d := h.call("GET", "/api/devices/"+attacker, nil)
				return d["online"] != true
			})
			// The victim's next call is the hub's: had a will come, it was
			// delivered before (the broker publishes it before the
			// disconnection is reported).
			if st, body := h.call("POST", "/api/devices/"+victim+"/tools/self.light.set/call", map[string]any{"arguments": map[string]any{"on": false}}); st != 200 {
				t.Fatalf("call = %d %v", st, body)
			}
			if n := dev.received(); n != 1 || dev.lightOn() {
				t.Fatalf("the victim ran %d calls (light on: %v); the hub sent it one", n, dev.lightOn())
			}
			want := byte(0x87)
			if v < 5 {
				want = 5
			}
			if code != want {
				t.Fatalf("CONNACK code %#x to a CONNECT with a will, want %#x", code, want)
			}
		})
	}
}
