// Package mqttlink is the MQTT+UDP transport of the device session: it
// turns each device's MQTT connection (held by the embedded broker, or by
// an external broker the hub is a client of) into a session.Connection
// that lives as long as the MQTT connection, idle or not, and sets up the
// UDP audio channel of each conversation.
//
// The bus (broker) reports connects, messages and disconnects by device
// id and publishes to a device; this package owns nothing of MQTT itself,
// so both broker modes share it. docs/protocol.md §4.
package mqttlink

import (
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/session"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// Bus reaches devices over MQTT.
type Bus interface {
	// Publish sends one JSON message to the device's downlink topic.
	Publish(deviceID string, payload []byte) error
	// Disconnect ends the device's MQTT connection (the bus then reports
	// it through Link.Disconnected).
	Disconnect(deviceID string)
}

// Sessions serves device connections (session.Server).
type Sessions interface {
	// ServeIdle starts the session of c and returns where c's messages go;
	// nil if c is not served.
	ServeIdle(c session.Idle, id protocol.Identity, remote string) session.Inbox
}

// Options configures a Link. Bus and Sessions are required.
type Options struct {
	Bus      Bus
	Sessions Sessions
	// Audio is the UDP audio server; nil: hellos are not answered (the
	// device shows that it cannot reach the server), MCP works regardless.
	Audio *udpaudio.Server
	// UDPHost and UDPPort are what the server hello tells devices to send
	// audio to (udp-public): an IPv4 address or DNS name the device can
	// reach, leading to Audio's socket. UDPHost "": the address the
	// device's MQTT connection reached (it must be IPv4).
	UDPHost string
	UDPPort int
	// QueueLen bounds the messages of one device waiting for its session
	// (default 32): during a conversation, those Offer queues, and those
	// that come before the session started (deliver.go). A device whose
	// session falls behind slows down its own MQTT connection (the broker
	// reads it no further), no one else's.
	QueueLen int
	Logger   *slog.Logger
}

// Link holds the connection of each device on MQTT. Its methods are the
// bus's callbacks.
type Link struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	conns   map[string]*conn
	dropped atomic.Uint64  // Offer
	wg      sync.WaitGroup // goroutines handing queued messages and audio to sessions (Wait)
}

// New returns a Link; it starts nothing.
func New(opts Options) (*Link, error) {
	if opts.Bus == nil || opts.Sessions == nil {
		return nil, errors.New("mqttlink: Bus and Sessions are required")
	}
	if opts.QueueLen <= 0 {
		opts.QueueLen = 32
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Link{opts: opts, log: opts.Logger, conns: map[string]*conn{}}, nil
}

// Connected starts the session of a device whose MQTT connection is up,
// authenticated as id, from remote to the hub's address local (host:port).
// remote's last word is the peer's address (ip:port or ip; "mqtt
// 192.0.2.1:5000" is fine): the device's UDP sessions count against that
// address's quota, and its IP may always take the audio channel back
// (udpaudio). A previous connection of the device ends first.
func (l *Link) Connected(id protocol.Identity, remote, local string) {
	c := newConn(l, id.DeviceID)
	c.peer = peerIP(remote)
	c.udpHost = l.opts.UDPHost
	if c.udpHost == "" {
		c.udpHost = ipv4Host(local)
	}
	l.mu.Lock()
	old := l.conns[id.DeviceID]
	l.conns[id.DeviceID] = c
	l.mu.Unlock()
	if old != nil {
		old.end("a newer MQTT connection of the device replaced it")
	}
	in := l.opts.Sessions.ServeIdle(c, id, remote)
	if in == nil {
		l.forget(c)
		return
	}
	c.start(in)
}

// Message passes a device's message to its session, on the caller's
// goroutine (the broker's reader of the device's connection), or behind
// the messages that wait (deliver.go): while QueueLen wait, it waits too,
// back-pressure on that device's connection only. It drops the message if
// the device has no session.
func (l *Link) Message(deviceID string, payload []byte) {
	l.mu.Lock()
	c := l.conns[deviceID]
	l.mu.Unlock()
	if c == nil {
		l.log.Debug("MQTT message from a device without a session dropped", "device", deviceID)
		return
	}
	c.deliver(payload)
}

// Offer is Message without the wait: the message is queued for the
// device's session and handed on by another goroutine; when QueueLen
// messages wait already, it is dropped (counted) and Offer reports false.
// For a bus that carries every device on one connection (an external
// broker), where one slow session must not hold up the rest.
func (l *Link) Offer(deviceID string, payload []byte) bool {
	l.mu.Lock()
	c := l.conns[deviceID]
	l.mu.Unlock()
	if c == nil {
		return false
	}
	if !c.offer(payload) {
		l.dropped.Add(1)
		return false
	}
	return true
}

// Dropped is how many messages Offer dropped.
func (l *Link) Dropped() uint64 { return l.dropped.Load() }

// Disconnected ends the session of a device whose MQTT connection ended,
// for reason (in words, for the offline event). Calls in flight to the
// device fail at once.
func (l *Link) Disconnected(deviceID, reason string) {
	l.mu.Lock()
	c := l.conns[deviceID]
	delete(l.conns, deviceID)
	l.mu.Unlock()
	if c != nil {
		c.end(reason)
	}
}

// Wait waits for the goroutines that hand devices' queued messages and
// conversations' audio to their sessions. They end on their own (a queue
// drained, a UDP channel closed): call Wait after the bus and the audio
// server stopped.
func (l *Link) Wait() { l.wg.Wait() }

// Holds reports whether the device has an MQTT session here.
func (l *Link) Holds(deviceID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[deviceID] != nil
}

// Devices is how many devices have an MQTT session.
func (l *Link) Devices() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// forget removes c if it is still the device's connection.
func (l *Link) forget(c *conn) {
	l.mu.Lock()
	if l.conns[c.deviceID] == c {
		delete(l.conns, c.deviceID)
	}
	l.mu.Unlock()
}

// peerIP is the IP in the last word of remote, or the zero Addr.
func peerIP(remote string) netip.Addr {
	f := strings.Fields(remote)
	if len(f) == 0 {
		return netip.Addr{}
	}
	last := f[len(f)-1]
	if ap, err := netip.ParseAddrPort(last); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(last); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}

// ipv4Host is the IPv4 address of host:port, or "" (the firmware's UDP
// client resolves a DNS name or parses IPv4 only).
func ipv4Host(addr string) string {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return ""
	}
	if a := ap.Addr().Unmap(); a.Is4() {
		return a.String()
	}
	return ""
}
