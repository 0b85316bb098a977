package mqttdevice

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Hello is the device hello exactly as GetHelloMessage prints it (2.4.2,
// no server AEC, text font capabilities left out).
const Hello = `{"type":"hello","version":3,"transport":"udp","features":{"mcp":true},"audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}`

// HelloTimeout is how long the firmware waits for the server hello.
const HelloTimeout = 10 * time.Second

// ErrNoHello is returned by OpenAudio when no acceptable server hello came.
var ErrNoHello = errors.New("mqttdevice: no acceptable server hello (the firmware shows a server timeout)")

// dispatch routes one PUBLISH as MqttProtocol's OnMessage does: JSON with
// a string "type"; hello to the waiting OpenAudio, goodbye closes the audio
// channel only with the exact current session_id, everything else (mcp
// included) goes to Messages whatever the audio state.
func (d *Device) dispatch(m Message) {
	var head struct {
		Type      any `json:"type"`
		SessionID any `json:"session_id"`
	}
	if json.Unmarshal(m.Payload, &head) != nil {
		return
	}
	typ, ok := head.Type.(string)
	if !ok {
		return
	}
	switch typ {
	case "hello":
		select {
		case d.hellos <- m.Payload:
		default:
		}
	case "goodbye":
		sid, ok := head.SessionID.(string)
		d.mu.Lock()
		ch := d.audio
		match := ok && sid == d.session
		if match {
			d.audio = nil
		}
		d.mu.Unlock()
		if match && ch != nil {
			ch.shut()
		}
	default:
		select {
		case d.msgs <- m:
		case <-time.After(5 * time.Second): // a test stopped reading
		}
	}
}

// SessionID is the device's session_id (the last accepted hello's; "" before).
func (d *Device) SessionID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.session
}

// Audio is the open audio channel, or nil (after a server goodbye, nil).
func (d *Device) Audio() *Channel {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.audio
}

// OpenAudio sends the hello and waits (up to HelloTimeout) for a server
// hello that passes ParseServerHello, then connects the UDP socket to the
// advertised server and port.
func (d *Device) OpenAudio(ctx context.Context) (*Channel, error) {
	d.mu.Lock()
	d.session = ""
	d.mu.Unlock()
	for len(d.hellos) > 0 {
		<-d.hellos
	}
	if err := d.Publish([]byte(Hello)); err != nil {
		return nil, err
	}
	timeout := time.NewTimer(HelloTimeout)
	defer timeout.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout.C:
			return nil, ErrNoHello
		case <-d.done:
			return nil, ErrNoHello
		case b := <-d.hellos:
			ch, ok := d.parseServerHello(b)
			if !ok {
				continue // logged and ignored by the firmware
			}
			if err := ch.connect(); err != nil {
				return nil, err
			}
			d.mu.Lock()
			d.audio = ch
			d.mu.Unlock()
			return ch, nil
		}
	}
}

// parseServerHello applies ParseServerHello's checks.
func (d *Device) parseServerHello(b []byte) (*Channel, bool) {
	var h struct {
		Transport any            `json:"transport"`
		SessionID any            `json:"session_id"`
		UDP       map[string]any `json:"udp"`
	}
	if json.Unmarshal(b, &h) != nil || h.Transport != "udp" {
		return nil, false
	}
	if sid, ok := h.SessionID.(string); ok {
		d.mu.Lock()
		d.session = sid
		d.mu.Unlock()
	}
	ch, ok := parseUDP(h.UDP)
	if ok {
		ch.dev = d
	}
	return ch, ok
}

// OpenChannel connects an audio channel from a server hello's `udp` object
// alone (no MQTT), for tests of the UDP server by itself.
func OpenChannel(udp []byte) (*Channel, error) {
	var m map[string]any
	if err := json.Unmarshal(udp, &m); err != nil {
		return nil, err
	}
	ch, ok := parseUDP(m)
	if !ok {
		return nil, ErrNoHello
	}
	return ch, ch.connect()
}

func parseUDP(udp map[string]any) (*Channel, bool) {
	if udp == nil {
		return nil, false
	}
	server, ok1 := udp["server"].(string)
	port, ok2 := udp["port"].(float64)
	keyHex, ok3 := udp["key"].(string)
	nonceHex, ok4 := udp["nonce"].(string)
	if !ok1 || !ok2 || !ok3 || !ok4 || int(port) <= 0 || int(port) > 65535 {
		return nil, false
	}
	key, err1 := hex.DecodeString(keyHex)
	nonce, err2 := hex.DecodeString(nonceHex)
	if err1 != nil || err2 != nil || len(key) != 16 || len(nonce) != 16 {
		return nil, false
	}
	block, _ := aes.NewCipher(key)
	ch := &Channel{addr: net.JoinHostPort(server, strconv.Itoa(int(port))), block: block, frames: make(chan Frame, 256), done: make(chan struct{})}
	copy(ch.nonce[:], nonce)
	return ch, true
}

// Frame is one downlink frame the firmware accepted.
type Frame struct {
	Timestamp uint32
	Sequence  uint32
	Opus      []byte
}

// Channel is the UDP audio channel: a socket connected to the advertised
// address, the local and remote sequences, and the firmware's counts of
// rejected datagrams.
type Channel struct {
	dev    *Device
	addr   string
	block  cipher.Block
	nonce  [16]byte
	conn   *net.UDPConn
	frames chan Frame
	done   chan struct{}
	once   sync.Once

	mu        sync.Mutex
	localSeq  uint32
	remoteSeq uint32

	// Datagrams the firmware would log and drop.
	Short, BadType, BadLength, Old atomic.Uint64
}

func (c *Channel) connect() error {
	raddr, err := net.ResolveUDPAddr("udp", c.addr)
	if err != nil {
		return fmt.Errorf("mqttdevice: UDP server: %w", err)
	}
	c.conn, err = net.DialUDP("udp", nil, raddr)
	if err != nil {
		return fmt.Errorf("mqttdevice: UDP connect: %w", err)
	}
	go c.readLoop()
	return nil
}

// SendAudio sends one frame as SendAudio does: the nonce with the length,
// timestamp and ++local_sequence filled in is both header and IV.
func (c *Channel) SendAudio(opus []byte, timestamp uint32) error {
	c.mu.Lock()
	c.localSeq++
	seq := c.localSeq
	c.mu.Unlock()
	pkt := make([]byte, 16+len(opus))
	copy(pkt, c.nonce[:])
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(opus)))
	binary.BigEndian.PutUint32(pkt[8:], timestamp)
	binary.BigEndian.PutUint32(pkt[12:], seq)
	cipher.NewCTR(c.block, pkt[:16]).XORKeyStream(pkt[16:], opus)
	return c.SendRaw(pkt)
}

// SendRaw sends any datagram from the channel's socket.
func (c *Channel) SendRaw(b []byte) error {
	_, err := c.conn.Write(b)
	return err
}

// LocalAddr is the socket's address (what the server learns).
func (c *Channel) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// Recv returns the next accepted downlink frame.
func (c *Channel) Recv(ctx context.Context) (Frame, error) {
	select {
	case f, ok := <-c.frames:
		if !ok {
			return Frame{}, net.ErrClosed
		}
		return f, nil
	case <-ctx.Done():
		return Frame{}, ctx.Err()
	}
}

// Close tears down UDP, then (if sendGoodbye) publishes the goodbye, as
// CloseAudioChannel does.
func (c *Channel) Close(sendGoodbye bool) error {
	d := c.dev
	if d == nil {
		c.shut()
		return nil
	}
	d.mu.Lock()
	if d.audio == c {
		d.audio = nil
	}
	sid := d.session
	d.mu.Unlock()
	c.shut()
	if sendGoodbye {
		return d.Publish([]byte(`{"session_id":"` + sid + `","type":"goodbye"}`))
	}
	return nil
}

// Closed is closed when the channel is torn down (e.g. by a server goodbye).
func (c *Channel) Closed() <-chan struct{} { return c.done }

func (c *Channel) shut() {
	c.once.Do(func() {
		_ = c.conn.Close()
		<-c.done
	})
}

// readLoop applies the firmware's downlink rules (mqtt_protocol.cc
// udp->OnMessage) to every datagram, into a 1500-byte buffer.
func (c *Channel) readLoop() {
	defer close(c.done)
	defer close(c.frames)
	buf := make([]byte, 1500)
	for {
		n, err := c.conn.Read(buf)
		if err != nil {
			return
		}
		data := buf[:n]
		if n < 16 {
			c.Short.Add(1)
			continue
		}
		if data[0] != 0x01 {
			c.BadType.Add(1)
			continue
		}
		plen := int(binary.BigEndian.Uint16(data[2:]))
		ts := binary.BigEndian.Uint32(data[8:])
		seq := binary.BigEndian.Uint32(data[12:])
		if n != 16+plen {
			c.BadLength.Add(1)
			continue
		}
		c.mu.Lock()
		old := seq <= c.remoteSeq
		if !old {
			c.remoteSeq = seq
		}
		c.mu.Unlock()
		if old {
			c.Old.Add(1)
			continue
		}
		out := make([]byte, plen)
		cipher.NewCTR(c.block, data[:16]).XORKeyStream(out, data[16:])
		select {
		case c.frames <- Frame{Timestamp: ts, Sequence: seq, Opus: out}:
		default: // the test is not reading; the firmware's decode queue would drop too
		}
	}
}
