package server_test

// The golden conversations' MQTT+UDP device (docs/protocol.md §4): MQTT
// 3.1.1 as firmware 2.4.2 speaks it (CONNECT with a clean session, the
// OTA answer's login and keepalive, QoS 0 PUBLISH to its publish_topic,
// never a SUBSCRIBE), in its own few lines of encoding, and a UDP socket
// connected to the address of the hub's hello, sealing and opening
// datagrams with the hello's key and nonce (udpaudio's wire helpers).

import (
	"bufio"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub/udpaudio"
)

// mqttConnect connects with the login of the OTA answer and records the
// CONNACK's return code.
func (cv *conversation) mqttConnect() error {
	if cv.login.Endpoint == "" {
		return errors.New("no mqtt object: an OTA answer gives the login")
	}
	mq, rc, err := dialMQTT(cv.ctx, cv.login)
	if err != nil {
		return err
	}
	fmt.Fprintf(&cv.out, "mqtt connect -> CONNACK %d\n", rc)
	if rc != 0 {
		mq.close()
		return nil
	}
	cv.mq = mq
	return nil
}

// mqttClient is the device's MQTT connection. Its read loop runs until the
// connection closes; close waits for it.
type mqttClient struct {
	conn net.Conn
	wmu  sync.Mutex
	msgs chan []byte // PUBLISH payloads from the hub, in order
	done chan struct{}
}

func dialMQTT(ctx context.Context, l otaMQTT) (*mqttClient, byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", l.Endpoint)
	if err != nil {
		return nil, 0, err
	}
	b := mqttString(nil, "MQTT")
	// Level 4 (3.1.1); flags: user name, password, clean session.
	b = append(b, 4, 0xC2, byte(l.Keepalive>>8), byte(l.Keepalive))
	for _, s := range []string{l.ClientID, l.Username, l.Password} {
		b = mqttString(b, s)
	}
	m := &mqttClient{conn: conn, msgs: make(chan []byte, 256), done: make(chan struct{})}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if err := m.write(mqttPacket(0x10, b)); err != nil {
		conn.Close()
		return nil, 0, err
	}
	typ, body, err := readMQTT(r)
	if err != nil || typ != 2 || len(body) != 2 {
		conn.Close()
		return nil, 0, fmt.Errorf("no CONNACK (packet type %d, %v)", typ, err)
	}
	_ = conn.SetDeadline(time.Time{})
	go m.readLoop(r)
	return m, body[1], nil
}

func (m *mqttClient) readLoop(r *bufio.Reader) {
	defer close(m.done)
	for {
		typ, body, err := readMQTT(r)
		if err != nil {
			return
		}
		if typ != 3 || len(body) < 2 { // only PUBLISH matters
			continue
		}
		payload := body[2+int(binary.BigEndian.Uint16(body)):]
		select {
		case m.msgs <- payload:
		default: // the script stopped reading; the record will show it
		}
	}
}

// next returns the next message from the hub.
func (m *mqttClient) next(ctx context.Context) ([]byte, error) {
	select {
	case p := <-m.msgs:
		return p, nil
	case <-m.done:
		return nil, errors.New("the hub closed the MQTT connection")
	case <-ctx.Done():
		return nil, fmt.Errorf("no message from the hub: %w", ctx.Err())
	}
}

// publish sends payload QoS 0 to topic.
func (m *mqttClient) publish(topic string, payload []byte) error {
	return m.write(mqttPacket(0x30, append(mqttString(nil, topic), payload...)))
}

// close sends DISCONNECT and closes the connection.
func (m *mqttClient) close() {
	_ = m.write([]byte{0xE0, 0})
	_ = m.conn.Close()
	<-m.done
}

func (m *mqttClient) write(b []byte) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	_, err := m.conn.Write(b)
	return err
}

func mqttString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

// mqttPacket is a packet: its first byte, the remaining length, body.
func mqttPacket(first byte, body []byte) []byte {
	b := []byte{first}
	for n := len(body); ; {
		c := byte(n % 128)
		if n /= 128; n > 0 {
			c |= 0x80
		}
		if b = append(b, c); n == 0 {
			break
		}
	}
	return append(b, body...)
}

// readMQTT reads one packet; a PUBLISH of QoS > 0 loses its packet id.
func readMQTT(r *bufio.Reader) (typ byte, body []byte, err error) {
	first, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n := 0
	for shift := 0; ; shift += 7 {
		c, err := r.ReadByte()
		if err != nil {
			return 0, nil, err
		}
		if n |= int(c&0x7f) << shift; c&0x80 == 0 {
			break
		}
		if shift == 21 {
			return 0, nil, errors.New("bad remaining length")
		}
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	if first>>4 == 3 && first&0x06 != 0 && len(body) >= 2 {
		tl := 2 + int(binary.BigEndian.Uint16(body))
		if len(body) >= tl+2 {
			body = append(body[:tl], body[tl+2:]...)
		}
	}
	return first >> 4, body, nil
}

// udpChannel is the audio channel of one hello over MQTT.
type udpChannel struct {
	conn   *net.UDPConn
	block  cipher.Block
	nonce  [16]byte
	seq    uint32 // of the last datagram sent
	frames chan udpFrame
	done   chan struct{}
	once   sync.Once
}

// udpFrame is one datagram from the hub: its header and Opus payload, or
// why the firmware would drop it.
type udpFrame struct {
	h    udpaudio.Header
	opus []byte
	err  error
}

// openUDP connects the audio channel the hub's hello describes, as the
// firmware does on accepting the hello (docs/protocol.md §4.2).
func (cv *conversation) openUDP(raw json.RawMessage) {
	var u udpaudio.HelloUDP
	if err := json.Unmarshal(raw, &u); err != nil {
		cv.t.Fatalf("the hello's udp object: %v", err)
	}
	cv.name(u.Key, "key")
	cv.name(u.Nonce, "nonce")
	cv.names[`"port":`+strconv.Itoa(u.Port)] = `"port":<udp-port>`
	if cv.udp != nil {
		cv.udp.close()
		cv.udp = nil
	}
	key, err1 := hex.DecodeString(u.Key)
	nonce, err2 := hex.DecodeString(u.Nonce)
	if err := errors.Join(err1, err2); err != nil || len(key) != 16 || len(nonce) != 16 {
		cv.t.Fatalf("the hello's key and nonce are not 16 bytes of hex: %s %v", raw, err)
	}
	block, _ := aes.NewCipher(key)
	raddr, err := net.ResolveUDPAddr("udp", net.JoinHostPort(u.Server, strconv.Itoa(u.Port)))
	if err != nil {
		cv.t.Fatalf("the hello's UDP server: %v", err)
	}
	conn, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		cv.t.Fatalf("UDP: %v", err)
	}
	ch := &udpChannel{conn: conn, block: block, frames: make(chan udpFrame, 1024), done: make(chan struct{})}
	copy(ch.nonce[:], nonce)
	go ch.readLoop()
	cv.udp = ch
}

// send sends one uplink frame as the firmware does: the nonce, with the
// length, timestamp 0 and the next sequence in it, is the header and IV.
func (ch *udpChannel) send(opus []byte) error {
	ch.seq++
	h := udpaudio.Header{Type: ch.nonce[0], Flags: ch.nonce[1], SSRC: binary.BigEndian.Uint32(ch.nonce[4:8]), Sequence: ch.seq}
	_, err := ch.conn.Write(udpaudio.Seal(nil, ch.block, h, opus))
	return err
}

func (ch *udpChannel) readLoop() {
	defer close(ch.done)
	buf := make([]byte, udpaudio.MaxDatagram) // the firmware's receive buffer
	for {
		n, err := ch.conn.Read(buf)
		if err != nil {
			return
		}
		h, err := udpaudio.ParseHeader(buf[:n])
		f := udpFrame{h: h, err: err}
		if err == nil {
			f.opus = udpaudio.Open(nil, ch.block, buf[:n])
		}
		select {
		case ch.frames <- f:
		default:
		}
	}
}

// take waits for n datagrams, and takes those already there after them.
func (ch *udpChannel) take(ctx context.Context, n int) ([]udpFrame, error) {
	var got []udpFrame
	for len(got) < n {
		select {
		case f := <-ch.frames:
			got = append(got, f)
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d datagrams: %w", len(got), n, ctx.Err())
		}
	}
	for {
		select {
		case f := <-ch.frames:
			got = append(got, f)
		default:
			return got, nil
		}
	}
}

func (ch *udpChannel) close() {
	ch.once.Do(func() {
		_ = ch.conn.Close()
		<-ch.done
	})
}

// describeUDP says what the datagrams of one answer carry: the firmware's
// rules (docs/protocol.md §4.3: shape, a sequence above the last), the
// Opus inside, and the play-out timestamps (§7.4).
func (cv *conversation) describeUDP(frames []udpFrame) string {
	var odd []string
	var packets [][]byte
	for i, f := range frames {
		if f.err != nil {
			odd = append(odd, fmt.Sprintf("datagram %d: %v", i+1, f.err))
			continue
		}
		packets = append(packets, f.opus)
		if i > 0 && f.h.Sequence != frames[i-1].h.Sequence+1 {
			odd = append(odd, fmt.Sprintf("datagram %d: sequence %d after %d", i+1, f.h.Sequence, frames[i-1].h.Sequence))
		}
		if i > 0 && f.h.Timestamp != frames[i-1].h.Timestamp+uint32(cv.audio.ms) {
			odd = append(odd, fmt.Sprintf("datagram %d: timestamp %d after %d", i+1, f.h.Timestamp, frames[i-1].h.Timestamp))
		}
	}
	if len(frames) > 0 && frames[0].h.Timestamp == 0 {
		odd = append(odd, "the first timestamp is 0")
	}
	if len(odd) > 0 {
		return strings.Join(odd, "; ")
	}
	return fmt.Sprintf("sequence %d to %d, timestamps %d ms apart; %s", frames[0].h.Sequence, frames[len(frames)-1].h.Sequence,
		cv.audio.ms, cv.audio.describe(packets))
}
