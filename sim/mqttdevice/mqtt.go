// Package mqttdevice is a simulated device on the MQTT+UDP transport,
// faithful to firmware 2.4.2 (main/protocols/mqtt_protocol.cc over
// esp-ml307's EspMqtt and EspUdp): MQTT 3.1.1 with a clean session, the
// configured keepalive, QoS 0 publishes to one publish topic, never a
// SUBSCRIBE, the hello version 3 with transport "udp", and a connected UDP
// socket applying the firmware's datagram rules.
//
// It speaks MQTT from its own few lines of encoding rather than a client
// library, so tests do not share a codec with the broker. Hostile helpers
// (PublishTo, Subscribe, Drop) exist for tests of refusals.
package mqttdevice

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Config is what the OTA `mqtt` object stores on a device.
type Config struct {
	Endpoint     string // host:port (plain TCP; the firmware uses TLS only on 8883)
	ClientID     string
	Username     string
	Password     string
	PublishTopic string
	Keepalive    uint16 // seconds; 0 means the firmware default, 240
	NoKeepalive  bool   // send keepalive 0, "never time me out" (the firmware never does)
}

// Message is one PUBLISH received from the server.
type Message struct {
	Topic   string
	Payload []byte
}

// ErrRefused is returned by Connect when the CONNACK carries a non-zero
// return code.
var ErrRefused = errors.New("mqttdevice: connection refused")

// Device is one MQTT connection. Its read loop runs until the connection
// ends; Close waits for it.
type Device struct {
	cfg  Config
	conn net.Conn

	wmu sync.Mutex // serialises writes

	msgs   chan Message // non-hello messages, in order
	hellos chan []byte  // server hellos (handled by OpenAudio)
	done   chan struct{}
	err    error // why the read loop ended; read after done

	mu      sync.Mutex
	audio   *Channel // the open audio channel, if any
	session string   // current session_id (never cleared on close, like the firmware)
}

// Connect dials cfg.Endpoint and sends CONNECT (MQTT 3.1.1, clean session),
// returning when the CONNACK arrives.
func Connect(ctx context.Context, cfg Config) (*Device, error) {
	switch {
	case cfg.NoKeepalive:
		cfg.Keepalive = 0
	case cfg.Keepalive == 0:
		cfg.Keepalive = 240
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("mqttdevice: dial: %w", err)
	}
	d := &Device{cfg: cfg, conn: conn, msgs: make(chan Message, 64), hellos: make(chan []byte, 4), done: make(chan struct{})}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	r := bufio.NewReader(conn)
	if err := d.write(connectPacket(cfg)); err != nil {
		conn.Close()
		return nil, err
	}
	typ, body, err := readPacket(r)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("mqttdevice: waiting for CONNACK: %w", err)
	}
	if typ != 2 || len(body) != 2 {
		conn.Close()
		return nil, fmt.Errorf("mqttdevice: expected CONNACK, got packet type %d", typ)
	}
	if body[1] != 0 {
		conn.Close()
		return nil, fmt.Errorf("%w: return code %d", ErrRefused, body[1])
	}
	_ = conn.SetDeadline(time.Time{})
	go d.readLoop(r)
	return d, nil
}

// Publish sends payload QoS 0 to the publish topic, as SendText does.
func (d *Device) Publish(payload []byte) error { return d.PublishTo(d.cfg.PublishTopic, payload) }

// PublishTo sends payload QoS 0 to any topic (the firmware never does).
func (d *Device) PublishTo(topic string, payload []byte) error {
	var b []byte
	b = appendString(b, topic)
	b = append(b, payload...)
	return d.write(frame(0x30, b))
}

// Subscribe sends a SUBSCRIBE (the firmware never does since e2c5578e).
func (d *Device) Subscribe(filter string) error {
	b := []byte{0, 1}
	b = appendString(b, filter)
	b = append(b, 0)
	return d.write(frame(0x82, b))
}

// Ping sends PINGREQ; the firmware's esp-mqtt does so every keepalive.
func (d *Device) Ping() error { return d.write([]byte{0xC0, 0}) }

// Messages delivers every PUBLISH from the server except hellos; it is
// closed when the connection ends.
func (d *Device) Messages() <-chan Message { return d.msgs }

// Done is closed when the connection has ended; Err says why.
func (d *Device) Done() <-chan struct{} { return d.done }

// Err is the reason the connection ended (after Done).
func (d *Device) Err() error {
	<-d.done
	return d.err
}

// Close sends DISCONNECT, closes the connection and waits for the read loop.
func (d *Device) Close() error {
	_ = d.write([]byte{0xE0, 0})
	err := d.conn.Close()
	<-d.done
	d.closeAudio()
	return err
}

// Drop closes the TCP connection without DISCONNECT (power loss, Wi-Fi gone).
func (d *Device) Drop() {
	_ = d.conn.Close()
	<-d.done
	d.closeAudio()
}

func (d *Device) closeAudio() {
	d.mu.Lock()
	ch := d.audio
	d.audio = nil
	d.mu.Unlock()
	if ch != nil {
		ch.shut()
	}
}

func (d *Device) write(b []byte) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if _, err := d.conn.Write(b); err != nil {
		return fmt.Errorf("mqttdevice: write: %w", err)
	}
	return nil
}

func (d *Device) readLoop(r *bufio.Reader) {
	defer close(d.done)
	defer close(d.msgs)
	for {
		typ, body, err := readPacket(r)
		if err != nil {
			d.err = err
			return
		}
		if typ != 3 { // PINGRESP, SUBACK, DISCONNECT from v5 servers: nothing to do
			continue
		}
		m, err := parsePublish(body)
		if err != nil {
			d.err = err
			return
		}
		d.dispatch(m)
	}
}

// connectPacket is CONNECT for MQTT 3.1.1 (protocol level 4), clean session.
func connectPacket(cfg Config) []byte {
	b := appendString(nil, "MQTT")
	flags := byte(0x02)
	if cfg.Username != "" {
		flags |= 0x80
	}
	if cfg.Password != "" {
		flags |= 0x40
	}
	b = append(b, 4, flags, byte(cfg.Keepalive>>8), byte(cfg.Keepalive))
	b = appendString(b, cfg.ClientID)
	if cfg.Username != "" {
		b = appendString(b, cfg.Username)
	}
	if cfg.Password != "" {
		b = appendString(b, cfg.Password)
	}
	return frame(0x10, b)
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func frame(first byte, body []byte) []byte {
	b := []byte{first}
	n := len(body)
	for {
		c := byte(n % 128)
		n /= 128
		if n > 0 {
			c |= 0x80
		}
		b = append(b, c)
		if n == 0 {
			break
		}
	}
	return append(b, body...)
}

const maxPacket = 1 << 20

func readPacket(r *bufio.Reader) (typ byte, body []byte, err error) {
	first, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, mul := 0, 1
	for i := 0; ; i++ {
		c, err := r.ReadByte()
		if err != nil {
			return 0, nil, err
		}
		n += int(c&0x7f) * mul
		if c&0x80 == 0 {
			break
		}
		if mul *= 128; i == 3 {
			return 0, nil, errors.New("mqttdevice: bad remaining length")
		}
	}
	if n > maxPacket {
		return 0, nil, fmt.Errorf("mqttdevice: packet of %d bytes", n)
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	if first>>4 == 3 && (first>>1)&3 > 0 {
		// QoS > 0: drop the packet id after the topic so parsePublish sees QoS 0.
		tl := int(binary.BigEndian.Uint16(body))
		if len(body) < 2+tl+2 {
			return 0, nil, errors.New("mqttdevice: short PUBLISH")
		}
		body = append(body[:2+tl], body[2+tl+2:]...)
	}
	return first >> 4, body, nil
}

func parsePublish(body []byte) (Message, error) {
	if len(body) < 2 {
		return Message{}, errors.New("mqttdevice: short PUBLISH")
	}
	tl := int(binary.BigEndian.Uint16(body))
	if len(body) < 2+tl {
		return Message{}, errors.New("mqttdevice: short PUBLISH topic")
	}
	return Message{Topic: string(body[2 : 2+tl]), Payload: body[2+tl:]}, nil
}
