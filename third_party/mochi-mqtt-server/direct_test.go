package mqtt

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/stretchr/testify/require"
)

// allowAll lets every client connect and publish or subscribe anywhere.
type allowAll struct{ HookBase }

func (h *allowAll) ID() string { return "allow-all" }
func (h *allowAll) Provides(b byte) bool {
	return b == OnConnectAuthenticate || b == OnACLCheck
}
func (h *allowAll) OnConnectAuthenticate(*Client, packets.Packet) bool { return true }
func (h *allowAll) OnACLCheck(*Client, string, bool) bool              { return true }

// startDirectServer serves a broker with DirectClientWrites and
// PooledClientReadBuffers on a TCP port of 127.0.0.1.
func startDirectServer(t *testing.T) (*Server, string) {
	t.Helper()
	s := New(&Options{
		DirectClientWrites:      true,
		PooledClientReadBuffers: true,
		ClientNetReadBufferSize: 64, // a packet larger than the buffer is read in parts
		Logger:                  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, s.AddHook(new(allowAll), nil))
	l := listeners.NewTCP(listeners.Config{ID: "t", Address: "127.0.0.1:0"})
	require.NoError(t, s.AddListener(l))
	require.NoError(t, s.Serve())
	t.Cleanup(func() { _ = s.Close() })
	return s, l.Address()
}

// wireClient is an MQTT 3.1.1 client on a real socket.
type wireClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialWire(t *testing.T, addr, id string, will *packets.ConnectParams) *wireClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	c := &wireClient{t: t, conn: conn, r: bufio.NewReader(conn)}
	params := packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 60, ClientIdentifier: id}
	if will != nil {
		params.WillFlag, params.WillTopic, params.WillPayload, params.WillQos = true, will.WillTopic, will.WillPayload, will.WillQos
	}
	c.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}, Connect: params})
	ack := c.next()
	require.Equal(t, packets.Connack, ack.FixedHeader.Type)
	require.Equal(t, uint8(0), ack.ReasonCode)
	return c
}

func (c *wireClient) encode(pk packets.Packet) []byte {
	c.t.Helper()
	pk.ProtocolVersion = 4
	var buf bytes.Buffer
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Publish:
		err = pk.PublishEncode(&buf)
	case packets.Puback:
		err = pk.PubackEncode(&buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(&buf)
	case packets.Pingreq:
		err = pk.PingreqEncode(&buf)
	}
	require.NoError(c.t, err)
	return buf.Bytes()
}

func (c *wireClient) send(pk packets.Packet) {
	c.t.Helper()
	_, err := c.conn.Write(c.encode(pk))
	require.NoError(c.t, err)
}

// next reads the next packet the broker sends.
func (c *wireClient) next() packets.Packet {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	first, err := c.r.ReadByte()
	require.NoError(c.t, err)
	pk := packets.Packet{ProtocolVersion: 4}
	require.NoError(c.t, pk.FixedHeader.Decode(first))
	n, _, err := packets.DecodeLength(c.r)
	require.NoError(c.t, err)
	pk.FixedHeader.Remaining = n
	body := make([]byte, n)
	_, err = io.ReadFull(c.r, body)
	require.NoError(c.t, err)
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackDecode(body)
	case packets.Publish:
		err = pk.PublishDecode(body)
	case packets.Puback:
		err = pk.PubackDecode(body)
	case packets.Suback:
		err = pk.SubackDecode(body)
	}
	require.NoError(c.t, err)
	return pk
}

func (c *wireClient) expect(typ byte, what string) packets.Packet {
	c.t.Helper()
	pk := c.next()
	require.Equal(c.t, typ, pk.FixedHeader.Type, what)
	return pk
}

// runsWriteLoop reports whether a goroutine runs cl's WriteLoop.
func runsWriteLoop(cl *Client) bool {
	stacks := make([]byte, 1<<20)
	for {
		n := runtime.Stack(stacks, true)
		if n < len(stacks) {
			return strings.Contains(string(stacks[:n]), fmt.Sprintf(").WriteLoop(%p", cl))
		}
		stacks = make([]byte, 2*len(stacks))
	}
}

func publishPacket(topic, payload string, qos byte, id uint16, retain bool) packets.Packet {
	return packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos, Retain: retain},
		TopicName: topic, Payload: []byte(payload), PacketID: id}
}

// With DirectClientWrites a broker runs no writer goroutine per client,
// yet everything it sends to its clients still goes out: a retained
// message on subscribing, a QoS 1 message routed to a subscriber and the
// publisher's PUBACK, a will, PINGRESPs. With PooledClientReadBuffers the
// broker reads packets that arrive split across writes, several in one
// write, and larger than its read buffer.
func TestDirectClientWritesAndPooledReadBuffers(t *testing.T) {
	s, addr := startDirectServer(t)
	pub := dialWire(t, addr, "pub", nil)
	pub.send(publishPacket("t/retained", "kept", 0, 0, true))
	pub.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
	pub.expect(packets.Pingresp, "PINGRESP after the retained publish") // the broker has read the publish

	sub := dialWire(t, addr, "sub", nil)
	sub.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, PacketID: 1,
		Filters: packets.Subscriptions{{Filter: "t/#", Qos: 1}}})
	sub.expect(packets.Suback, "SUBACK")
	got := sub.expect(packets.Publish, "the retained message")
	require.Equal(t, "kept", string(got.Payload))
	require.True(t, got.FixedHeader.Retain)

	// A QoS 1 publish written a byte at a time, then one larger than the
	// broker's read buffer together with two PINGREQs in one write.
	for _, b := range pub.encode(publishPacket("t/q1", "one", 1, 7, false)) {
		_, err := pub.conn.Write([]byte{b})
		require.NoError(t, err)
	}
	require.Equal(t, uint16(7), pub.expect(packets.Puback, "PUBACK of the QoS 1 publish").PacketID)
	got = sub.expect(packets.Publish, "the QoS 1 message")
	require.Equal(t, "one", string(got.Payload))
	require.Equal(t, byte(1), got.FixedHeader.Qos)
	sub.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: got.PacketID})

	large := strings.Repeat("x", 300)
	ping := pub.encode(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
	batch := append(append(pub.encode(publishPacket("t/large", large, 0, 0, false)), ping...), ping...)
	_, err := pub.conn.Write(batch)
	require.NoError(t, err)
	pub.expect(packets.Pingresp, "the first PINGRESP")
	pub.expect(packets.Pingresp, "the second PINGRESP")
	require.Equal(t, large, string(sub.expect(packets.Publish, "the large message").Payload))

	// Neither client has a writer goroutine.
	for _, id := range []string{"pub", "sub"} {
		cl, ok := s.Clients.Get(id)
		require.True(t, ok)
		require.False(t, runsWriteLoop(cl), id)
	}

	// A client that goes away without DISCONNECT leaves its will.
	gone := dialWire(t, addr, "gone", &packets.ConnectParams{WillTopic: "t/will", WillPayload: []byte("bye")})
	require.NoError(t, gone.conn.Close())
	require.Equal(t, "bye", string(sub.expect(packets.Publish, "the will").Payload))
}

// recordPublishes records each publish when its hook runs and when the
// function it gives to Client.AfterPacket runs.
type recordPublishes struct {
	HookBase
	mu  sync.Mutex
	log []string
}

func (h *recordPublishes) ID() string           { return "record" }
func (h *recordPublishes) Provides(b byte) bool { return b == OnPublish }
func (h *recordPublishes) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, s)
}
func (h *recordPublishes) OnPublish(cl *Client, pk packets.Packet) (packets.Packet, error) {
	payload := string(pk.Payload)
	h.add("hook " + payload)
	cl.AfterPacket(func() { h.add("after " + payload) })
	cl.AfterPacket(func() { h.add("after again " + payload) })
	return pk, nil
}

// Functions given to Client.AfterPacket run on the client's reader once
// the packet is processed, in order, before the next packet.
func TestClientAfterPacket(t *testing.T) {
	s, addr := startDirectServer(t)
	rec := new(recordPublishes)
	require.NoError(t, s.AddHook(rec, nil))
	c := dialWire(t, addr, "c", nil)
	ping := c.encode(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
	batch := append(append(c.encode(publishPacket("t/a", "a", 0, 0, false)), c.encode(publishPacket("t/b", "b", 0, 0, false))...), ping...)
	_, err := c.conn.Write(batch)
	require.NoError(t, err)
	c.expect(packets.Pingresp, "PINGRESP after the publishes")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, []string{"hook a", "after a", "after again a", "hook b", "after b", "after again b"}, rec.log)
}
