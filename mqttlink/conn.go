package mqttlink

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// conn is one device's MQTT connection as a session.Idle: JSON messages
// arrive through Link.Message (or Offer) and leave through Bus.Publish; the
// audio of a conversation travels over the UDP session its hello opened.
//
// Nothing reads an idle device's connection: how messages reach the
// session is in deliver.go. Negotiate and EndConversation are called from
// the session's handling of the device's hello and goodbye. Writes come
// from anywhere: Publish is safe for concurrent use and sends each message
// whole.
type conn struct {
	l        *Link
	deviceID string
	peer     netip.Addr // the MQTT connection's peer IP (zero if unknown): whose quota its UDP sessions use
	udpHost  string     // told to the device in the server hello

	mu       sync.Mutex
	room     sync.Cond         // on mu: the queue has room, or the connection ended
	inbox    session.Inbox     // the session's, once it started
	queue    []queued          // messages waiting for the session, oldest first
	draining bool              // a drain goroutine hands queue to the session
	pumper   *udpaudio.Session // the conversation whose pump hands queue to the session, or nil
	wake     chan struct{}     // tells that pump that messages wait
	over     bool              // the connection ended
	reason   string            // why
	audio    *udpaudio.Session // the open conversation's channel, or nil
	sid      string            // its session id, for the goodbye
}

var _ session.Idle = (*conn)(nil)

func newConn(l *Link, deviceID string) *conn {
	c := &conn{l: l, deviceID: deviceID}
	c.room.L = &c.mu
	return c
}

// touchLocked counts an MQTT message as activity of the open conversation:
// the device says nothing over UDP while it listens to the hub.
func (c *conn) touchLocked() {
	if c.audio != nil {
		c.audio.Touch()
	}
}

// end closes the connection locally: the session ends, and the audio
// channel closes. It does not touch the bus.
func (c *conn) end(reason string) {
	c.mu.Lock()
	first := !c.over
	if first {
		c.over, c.reason, c.queue = true, reason, nil
		c.room.Broadcast()
	}
	a, in := c.audio, c.inbox
	c.audio = nil
	c.mu.Unlock()
	if a != nil {
		a.Close()
	}
	if first && in != nil {
		in.End(reason)
	}
}

// audioEnded handles the end of a UDP session: if it ended on its own
// (nothing heard either way for the audio server's IdleTimeout), the
// device is told goodbye with the exact session id, so that it leaves the
// conversation instead of waiting for its own channel timeout.
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
	if c.over {
		c.mu.Unlock()
		ss.Close()
		return session.Negotiated{}, hub.Errorf(hub.EOFFLINE, "device %s: %s", c.deviceID, c.reason)
	}
	old, in := c.audio, c.inbox
	c.audio, c.sid = ss, sid
	c.pumper, c.wake = ss, make(chan struct{}, 1)
	wake := c.wake
	if len(c.queue) > 0 {
		wake <- struct{}{}
	}
	c.mu.Unlock()
	if old != nil {
		old.Close()
	}
	c.l.wg.Go(func() { c.pump(ss, in, wake) })
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
	c.mu.Lock()
	over, reason := c.over, c.reason
	c.mu.Unlock()
	if over {
		return hub.Errorf(hub.EOFFLINE, "device %s: %s", c.deviceID, reason)
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
