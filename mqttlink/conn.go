package mqttlink

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// conn is one device's MQTT connection as a session.Idle: JSON messages
// arrive through Link.Message and leave through Bus.Publish; the audio of
// a conversation travels over the UDP session its hello opened.
//
// Read runs on the session's read loop, and so do Negotiate and
// EndConversation (the session calls them for the device's hello and
// goodbye). Writes come from anywhere: Publish is safe for concurrent use
// and sends each message whole.
type conn struct {
	l        *Link
	deviceID string
	peer     netip.Addr // the MQTT connection's peer IP (zero if unknown): whose quota its UDP sessions use
	udpHost  string     // told to the device in the server hello
	in       chan []byte
	done     chan struct{}
	once     sync.Once
	reason   string // why done was closed; written before

	mu    sync.Mutex
	audio *udpaudio.Session // the open conversation's channel, or nil
	sid   string            // its session id, for the goodbye
}

var _ session.Idle = (*conn)(nil)

var errEnded = errors.New("MQTT session ended")

func newConn(l *Link, deviceID string) *conn {
	return &conn{l: l, deviceID: deviceID, in: make(chan []byte, l.opts.QueueLen), done: make(chan struct{})}
}

// touch counts an MQTT message as activity of the open conversation: the
// device says nothing over UDP while it listens to the hub.
func (c *conn) touch() {
	c.mu.Lock()
	if c.audio != nil {
		c.audio.Touch()
	}
	c.mu.Unlock()
}

func (c *conn) deliver(payload []byte) {
	c.touch()
	select {
	case c.in <- payload:
	case <-c.done:
	}
}

// end closes the connection locally: Read returns, and the audio channel
// closes. It does not touch the bus.
func (c *conn) end(reason string) {
	c.once.Do(func() {
		c.reason = reason
		close(c.done)
	})
	c.mu.Lock()
	a := c.audio
	c.audio = nil
	c.mu.Unlock()
	if a != nil {
		a.Close()
	}
}

func (c *conn) Read(ctx context.Context) (session.Message, error) {
	for {
		c.mu.Lock()
		a := c.audio
		c.mu.Unlock()
		var frames <-chan udpaudio.Frame
		var audioDone <-chan struct{}
		if a != nil {
			frames, audioDone = a.Frames(), a.Done()
		}
		select {
		case p := <-c.in:
			return session.Message{Kind: session.TextMessage, Text: p, Size: len(p)}, nil
		case f, ok := <-frames:
			if !ok {
				c.audioEnded(a)
				continue
			}
			return session.Message{Kind: session.AudioMessage, Audio: session.AudioFrame{Data: f.Opus, Timestamp: f.Timestamp},
				Size: len(f.Opus) + udpaudio.HeaderSize}, nil
		case <-audioDone:
			c.audioEnded(a)
		case <-c.done:
			return session.Message{}, &session.EndError{Reason: c.reason, Err: errEnded}
		case <-ctx.Done():
			return session.Message{}, ctx.Err()
		}
	}
}

// audioEnded handles a UDP session that ended on its own (nothing heard
// either way for the audio server's IdleTimeout): the device is told
// goodbye with the exact session id, so that it leaves the conversation
// instead of waiting for its own channel timeout.
func (c *conn) audioEnded(a *udpaudio.Session) {
	c.mu.Lock()
	current := c.audio == a
	sid := c.sid
	if current {
		c.audio = nil
	}
	c.mu.Unlock()
	if current {
		c.goodbye(sid)
	}
}

func (c *conn) goodbye(sid string) {
	if err := c.l.opts.Bus.Publish(c.deviceID, protocol.Goodbye(sid)); err != nil {
		c.l.log.Debug("cannot send goodbye", "device", c.deviceID, "err", err)
	}
}

// Negotiate opens the conversation's UDP channel: a fresh key and nonce
// per hello, advertised at the configured public address. sid is the
// conversation's own session id (each hello gets a new one: the firmware
// ends its channel on a goodbye naming its current id, so a late goodbye
// for an earlier conversation must not name the next).
func (c *conn) Negotiate(sid string, h protocol.ClientHello) (session.Negotiated, error) {
	if h.Transport != "udp" {
		return session.Negotiated{}, hub.Errorf(hub.EINVALID, "a hello over MQTT must ask for transport \"udp\", not %q", h.Transport)
	}
	if c.l.opts.Audio == nil {
		return session.Negotiated{}, hub.Errorf(hub.EUNAVAILABLE, "this hub has no UDP audio server: set udp-listen")
	}
	if c.udpHost == "" {
		return session.Negotiated{}, hub.Errorf(hub.EUNAVAILABLE, "the device reached the hub over IPv6, and the firmware's UDP audio needs an IPv4 address or DNS name: set udp-public")
	}
	ss, err := c.l.opts.Audio.NewSessionFrom(c.peer)
	if err != nil {
		return session.Negotiated{}, fmt.Errorf("open the UDP audio channel: %w", err)
	}
	c.mu.Lock()
	old := c.audio
	c.audio, c.sid = ss, sid
	c.mu.Unlock()
	if old != nil {
		old.Close()
	}
	u := ss.Hello(c.udpHost, c.l.opts.UDPPort)
	return session.Negotiated{Transport: "udp", ProtocolVersion: 3,
		UDP: &protocol.UDPParams{Server: u.Server, Port: u.Port, Key: u.Key, Nonce: u.Nonce}}, nil
}

// Goodbye ends the conversation whose hello was answered with sid from the
// hub's side, if it is still the open one: the device is told goodbye with
// that session id, and the UDP channel closes. A goodbye for an earlier
// conversation changes nothing.
func (c *conn) Goodbye(sid string) {
	c.mu.Lock()
	a := c.audio
	if a == nil || c.sid != sid {
		c.mu.Unlock()
		return
	}
	c.audio = nil
	c.mu.Unlock()
	c.goodbye(sid)
	a.Close()
}

// EndConversation closes the UDP channel after the device's goodbye.
func (c *conn) EndConversation() {
	c.mu.Lock()
	a := c.audio
	c.audio = nil
	c.mu.Unlock()
	if a != nil {
		a.Close()
	}
}

func (c *conn) WriteText(ctx context.Context, data []byte) error {
	select {
	case <-c.done:
		return hub.Errorf(hub.EOFFLINE, "device %s: %s", c.deviceID, c.reason)
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.l.opts.Bus.Publish(c.deviceID, data)
}

func (c *conn) WriteAudio(ctx context.Context, f session.AudioFrame) error {
	c.mu.Lock()
	a := c.audio
	c.mu.Unlock()
	if a == nil {
		return hub.Errorf(hub.ECONFLICT, "device %s has no conversation open: audio needs a hello first", c.deviceID)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return a.Send(f.Data, f.Timestamp)
}

// Close tells the device goodbye if a conversation is open and ends its
// MQTT connection (the firmware reconnects by itself; a device refused for
// its behaviour meets the limits again).
func (c *conn) Close(code session.CloseCode, reason string) {
	c.mu.Lock()
	open, sid := c.audio != nil, c.sid
	c.mu.Unlock()
	if open {
		c.goodbye(sid)
	}
	c.end(reason)
	c.CloseNow()
}

// CloseNow ends the device's MQTT connection without a word, unless a
// newer connection of the device has replaced this one.
func (c *conn) CloseNow() {
	c.l.mu.Lock()
	current := c.l.conns[c.deviceID] == c
	if current {
		delete(c.l.conns, c.deviceID)
	}
	c.l.mu.Unlock()
	if current {
		c.l.opts.Bus.Disconnect(c.deviceID)
	}
	c.end("closed by the hub")
}
