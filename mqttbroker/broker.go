// Package mqttbroker is the hub's embedded MQTT broker for devices on the
// MQTT+UDP transport (github.com/mochi-mqtt/server/v2, built from the
// patched copy in third_party/mochi-mqtt-server: no writer goroutine, read
// buffer or maps per idle client, small reader frames, messages handed on
// after mochi's packet processing; its PATCHES.md), and
// the MQTT credentials and OTA `mqtt` object handed to those devices.
//
// Firmware 2.4.2 stays connected over MQTT while idle, publishes every
// message QoS 0 to its publish topic and never subscribes; the broker
// confines it to its own two topics and hands the hub one callback per
// connect, message and disconnect, keyed by device id (messages carry no
// id). The hub answers with Publish, which writes to the device's
// connection on its downlink topic directly (no subscription is needed).
// See docs/protocol.md §4.
package mqttbroker

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	hub "github.com/xiaozhi-hub/hub"
	"golang.org/x/time/rate"
)

// Reason says why a device's connection ended.
type Reason string

const (
	ReasonDisconnect Reason = "the device sent DISCONNECT"
	ReasonKeepalive  Reason = "keepalive expired: nothing heard for 1.5 keepalive periods"
	ReasonClosed     Reason = "the connection closed without DISCONNECT"
	ReasonReplaced   Reason = "a newer connection of the same device replaced it"
	ReasonShutdown   Reason = "the hub is shutting down"
	ReasonProtocol   Reason = "MQTT protocol error"
	ReasonHub        Reason = "closed by the hub"
	ReasonRefusals   Reason = "the broker refused the client's packets"
)

// Client is a device's authenticated connection.
type Client struct {
	DeviceID string
	ClientID string // the MQTT client id it authenticated with
	Remote   string // the device's address
	Local    string // the hub's address the device reached
}

// Refusal describes an attempt the broker refused, for the hub's event log.
type Refusal struct {
	ClientID string
	Username string
	DeviceID string // set once authenticated
	Remote   string
	Reason   string
}

// Config configures a Broker. Callbacks run on the connection's goroutine
// (its reader): while one runs, nothing more is read from that connection,
// and other connections are not held up. OnMessage may call Publish. OnConnect and
// OnDisconnect are serialised, so a device's events arrive in order; a
// device replaced by a newer connection gets OnDisconnect(ReasonReplaced)
// before the new OnConnect.
type Config struct {
	Addr string      // host:port to listen on (port 0 picks one)
	TLS  *tls.Config // serve TLS (devices use TLS exactly on port 8883)

	// Authenticate maps CONNECT credentials, from remote, to a device id;
	// an error refuses the connection and is reported through OnRefused.
	Authenticate func(clientID, username, password, remote string) (deviceID string, err error)
	// OnConnect reports a device's new connection.
	OnConnect    func(Client)
	OnMessage    func(deviceID string, payload []byte)
	OnDisconnect func(deviceID string, reason Reason)
	OnRefused    func(Refusal)

	MaxConnections int // TCP connections at once, default 10000
	// MaxPending bounds the connections that have not logged in yet (no
	// CONNECT accepted), default 2048, and MaxPendingPerAddress those
	// from one source address (an IPv4 address or an IPv6 /64), default
	// 64; a connection over either is closed at once. A flood of sockets
	// that never send CONNECT thus costs at most MaxPending connections
	// (each closed after ConnectTimeout), and one address alone cannot
	// keep devices elsewhere from logging in.
	MaxPending           int
	MaxPendingPerAddress int
	MaxMessage           int           // largest payload passed on, default 64 KiB; packets over 4× end the connection
	ConnectTimeout       time.Duration // to send CONNECT after dialling, default 10 s
	WriteTimeout         time.Duration // for one packet to a device, default 10 s; a device slower than that is disconnected
	MaxKeepalive         uint16        // keepalive 0 or above this is treated as this, default 600 s
	// MessageRate bounds the messages per second one connection may send
	// on average, with bursts of MessageBurst (default 2×rate); the excess
	// is dropped. 0 (the default): no limit here. The hub's device session
	// applies the device's budget, which must not count the device's
	// replies to the hub's own requests (the broker cannot tell them
	// apart), and a session that falls behind slows the device's
	// connection down by back-pressure.
	MessageRate  float64
	MessageBurst int
	// A connection whose packets are refused more than MaxRefusals times
	// (default 10) within RefusalWindow (default 1 min) is closed:
	// publishes to foreign topics, subscriptions, payloads too large or
	// not JSON. The firmware sends none of them.
	MaxRefusals   int
	RefusalWindow time.Duration
	// Failed logins (refused CONNECTs) from one source address are
	// limited to MaxLoginFailures (default 20) within LoginFailureWindow
	// (default 1 min): beyond, the address's CONNECTs are refused with
	// "connection rate exceeded" (3.1.1: server unavailable) without
	// checking them, so that guessing logins, or naming a device in
	// failed logins, costs the hub little and each address little
	// reporting. Other addresses are unaffected.
	MaxLoginFailures   int
	LoginFailureWindow time.Duration
}

// Stats counts what the broker dropped.
type Stats struct {
	Oversized   uint64 // device payloads over MaxMessage
	NotJSON     uint64 // device payloads that are not JSON
	Refused     uint64 // refusals reported through OnRefused
	OverLimit   uint64 // connections closed at MaxConnections
	OverPending uint64 // connections closed at MaxPending or MaxPendingPerAddress
	Pending     int    // connections open now that have not logged in
	SendDropped uint64 // Publish payloads not written: the device's connection failed or took over WriteTimeout
	RateLimited uint64 // device messages over MessageRate
	StruckOut   uint64 // connections closed for packets refused over MaxRefusals
	Throttled   uint64 // CONNECTs refused unchecked: their address was over MaxLoginFailures
}

// Broker is the embedded broker. Run serves it.
type Broker struct {
	cfg Config
	srv *mqtt.Server
	ln  *listener

	oversized, notJSON, refused, overLimit, overPending, sendDropped, rateLimited, struckOut, loginThrottled atomic.Uint64

	failures *keyedLimiter // failed logins by source address

	mu      sync.Mutex
	byConn  map[net.Conn]*device // authenticated connections
	devices map[string]*device   // the current connection of each device

	lifeMu sync.Mutex // serialises OnConnect/OnDisconnect
}

type device struct {
	id string
	cl *mqtt.Client

	strikes   *rate.Limiter // its allowance of refused packets (Broker.strike), made at the first; only its reader uses it
	struckOut atomic.Bool   // closed for them
	messages  *rate.Limiter // its message rate (MessageRate), nil: no limit
}

// New binds the listener; Run serves it.
func New(cfg Config) (*Broker, error) {
	if cfg.Authenticate == nil {
		return nil, errors.New("mqttbroker: Config.Authenticate is required")
	}
	cfg.defaults()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, hub.Errorf(hub.EINVALID, "cannot listen for MQTT on %s: %w", cfg.Addr, err)
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumClients = int64(cfg.MaxConnections)
	caps.MaximumPacketSize = uint32(4*cfg.MaxMessage + 1024)
	caps.MaximumSessionExpiryInterval = 0 // no session outlives its connection
	caps.MaximumInflight = 64
	caps.ReceiveMaximum = 16
	caps.MinimumProtocolVersion = 4 // 3.1.1 (the firmware's esp-mqtt) and 5
	caps.RetainAvailable = 0
	caps.WildcardSubAvailable = 0
	caps.SharedSubAvailable = 0
	caps.Compatibilities.ObscureNotAuthorized = true
	b := &Broker{
		cfg: cfg,
		srv: mqtt.New(&mqtt.Options{
			Capabilities:             caps,
			SysTopicResendInterval:   3600,
			DirectClientWrites:       true, // no writer goroutine nor queue per client: Publish writes directly, writeConn bounds each write
			PooledClientReadBuffers:  true, // an idle device holds no read buffer
			ClientNetReadBufferSize:  1024,
			ClientNetWriteBufferSize: 1024,
			Logger:                   slog.New(slog.DiscardHandler), // refusals are reported through hooks, not logged per packet
		}),
		byConn:   make(map[net.Conn]*device),
		devices:  make(map[string]*device),
		failures: newKeyedLimiter(rate.Every(cfg.LoginFailureWindow/time.Duration(cfg.MaxLoginFailures)), cfg.MaxLoginFailures),
	}
	b.ln = &listener{
		ln: ln, connectTimeout: cfg.ConnectTimeout, writeTimeout: cfg.WriteTimeout,
		slots: make(chan struct{}, cfg.MaxConnections), conns: make(map[net.Conn]string),
		maxPending: cfg.MaxPending, maxPendingPerAddr: cfg.MaxPendingPerAddress, pending: make(map[string]int),
		onConnGone: b.forget, overLimit: &b.overLimit, overPending: &b.overPending,
		closeClients: b.disconnectAll,
	}
	if err := b.srv.AddHook(&hook{b: b}, nil); err != nil {
		ln.Close()
		return nil, fmt.Errorf("mqttbroker: %w", err)
	}
	if err := b.srv.AddListener(b.ln); err != nil {
		ln.Close()
		return nil, fmt.Errorf("mqttbroker: %w", err)
	}
	return b, nil
}

func (c *Config) defaults() {
	if c.MaxConnections <= 0 {
		c.MaxConnections = 10000
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 2048
	}
	if c.MaxPendingPerAddress <= 0 {
		c.MaxPendingPerAddress = 64
	}
	if c.MaxMessage <= 0 {
		c.MaxMessage = 64 << 10
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.MaxKeepalive == 0 {
		c.MaxKeepalive = 600
	}
	if c.MaxRefusals <= 0 {
		c.MaxRefusals = 10
	}
	if c.RefusalWindow <= 0 {
		c.RefusalWindow = time.Minute
	}
	if c.MaxLoginFailures <= 0 {
		c.MaxLoginFailures = 20
	}
	if c.LoginFailureWindow <= 0 {
		c.LoginFailureWindow = time.Minute
	}
	if c.MessageRate > 0 && c.MessageBurst <= 0 {
		c.MessageBurst = max(1, int(2*c.MessageRate))
	}
	if c.OnConnect == nil {
		c.OnConnect = func(Client) {}
	}
	if c.OnMessage == nil {
		c.OnMessage = func(string, []byte) {}
	}
	if c.OnDisconnect == nil {
		c.OnDisconnect = func(string, Reason) {}
	}
	if c.OnRefused == nil {
		c.OnRefused = func(Refusal) {}
	}
}

// Addr is the listening address.
func (b *Broker) Addr() string { return b.ln.Address() }

// Port is the port the broker listens on (the one bound, for port 0).
func (b *Broker) Port() int {
	_, p, _ := net.SplitHostPort(b.Addr())
	n, _ := strconv.Atoi(p)
	return n
}

// Run serves until ctx ends, then disconnects every device (OnDisconnect
// with ReasonShutdown) and waits for the connections' goroutines.
func (b *Broker) Run(ctx context.Context) error {
	if err := b.srv.Serve(); err != nil {
		b.ln.Close(func(string) {})
		return fmt.Errorf("mqttbroker: %w", err)
	}
	<-ctx.Done()
	return b.srv.Close()
}

// Publish sends payload (a JSON message) to the device, QoS 0, on its
// downlink topic. It fails with EOFFLINE when the device is not connected.
// The packet is written on the caller's goroutine, under the connection's
// lock, as mochi writes its own acknowledgements: no queue and no writer
// goroutine of the broker's carry it. A device that does not take it within
// WriteTimeout is disconnected (Stats.SendDropped), so a stuck device
// holds up its caller no longer than that.
func (b *Broker) Publish(deviceID string, payload []byte) error {
	b.mu.Lock()
	d := b.devices[deviceID]
	b.mu.Unlock()
	if d == nil {
		return hub.Errorf(hub.EOFFLINE, "device %s is not connected over MQTT", deviceID)
	}
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: DownlinkTopic(deviceID), Payload: payload}
	if err := d.cl.WritePacket(pk); err != nil {
		b.sendDropped.Add(1)
		return fmt.Errorf("mqttbroker: publish to %s: %w", deviceID, err)
	}
	return nil
}

// Disconnect ends the device's current connection, if it has one; the
// broker then reports it through OnDisconnect.
func (b *Broker) Disconnect(deviceID string) {
	b.mu.Lock()
	d := b.devices[deviceID]
	b.mu.Unlock()
	if d != nil {
		_ = b.srv.DisconnectClient(d.cl, packets.ErrAdministrativeAction)
	}
}

// Connected reports whether the device has an MQTT connection.
func (b *Broker) Connected(deviceID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.devices[deviceID] != nil
}

// Stats returns the drop counters.
func (b *Broker) Stats() Stats {
	return Stats{Oversized: b.oversized.Load(), NotJSON: b.notJSON.Load(), Refused: b.refused.Load(),
		OverLimit: b.overLimit.Load(), OverPending: b.overPending.Load(), Pending: b.ln.pendingCount(),
		SendDropped: b.sendDropped.Load(), RateLimited: b.rateLimited.Load(), StruckOut: b.struckOut.Load(),
		Throttled: b.loginThrottled.Load()}
}

func (b *Broker) lookup(cl *mqtt.Client) *device {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byConn[cl.Net.Conn]
}

// forget drops what is known about a closed connection.
func (b *Broker) forget(conn net.Conn) {
	b.mu.Lock()
	delete(b.byConn, conn)
	b.mu.Unlock()
}

// ReasonWill is the refusal of a CONNECT that sets a Last Will.
const ReasonWill = "a Last Will is not permitted on this broker: the broker would publish it on the device's behalf, unchecked (the firmware never sets one)"

// refuseConnect answers a refused CONNECT with code (MQTT 5), or the
// nearest MQTT 3.1.1 return code (mochi maps only some), and returns the
// error that ends the connection.
func (b *Broker) refuseConnect(cl *mqtt.Client, code packets.Code) error {
	send := code
	if cl.Properties.ProtocolVersion < 5 {
		switch code {
		case packets.ErrNotAuthorized:
			send = packets.Err3NotAuthorized
		case packets.ErrServerBusy, packets.ErrQuotaExceeded, packets.ErrConnectionRateExceeded:
			send = packets.Err3ServerUnavailable
		}
	}
	_ = b.srv.SendConnack(cl, send, false, nil)
	return code
}

func (b *Broker) refuse(cl *mqtt.Client, username, deviceID, reason string) {
	b.refused.Add(1)
	b.cfg.OnRefused(Refusal{ClientID: cl.ID, Username: username, DeviceID: deviceID, Remote: cl.Net.Remote, Reason: reason})
}

// reason maps why mochi stopped a client to a Reason.
func reason(cl *mqtt.Client, err error) Reason {
	cause := cl.StopCause()
	if cause == nil {
		cause = err
	}
	var code packets.Code
	switch {
	case errors.Is(cause, packets.CodeDisconnect):
		return ReasonDisconnect
	case errors.Is(cause, packets.ErrSessionTakenOver):
		return ReasonReplaced
	case errors.Is(cause, packets.ErrAdministrativeAction):
		return ReasonHub
	case errors.As(cause, &code) && strings.HasPrefix(code.Reason, string(ReasonRefusals)):
		return Reason(code.Reason)
	case errors.Is(cause, packets.ErrServerShuttingDown):
		return ReasonShutdown
	case errors.Is(cause, os.ErrDeadlineExceeded):
		return ReasonKeepalive
	case errors.Is(cause, io.EOF), errors.Is(cause, net.ErrClosed), errors.Is(cause, io.ErrUnexpectedEOF):
		return ReasonClosed
	case errors.As(cause, &code):
		return ReasonProtocol + Reason(": "+code.Reason)
	}
	var ne net.Error
	if errors.As(cause, &ne) || errors.Is(cause, os.ErrClosed) {
		return ReasonClosed
	}
	return ReasonProtocol
}

// payloadOK applies the size and shape rules to a device's message. It
// passes anything that starts as a JSON object, valid or not: the firmware
// builds some messages without escaping (docs/protocol.md §12 item 25), and
// the session recovers the call id from such a frame to fail that call at
// once instead of leaving it to time out.
//
// A refused payload returns the MQTT 5 reason code and what was wrong.
func (b *Broker) payloadOK(p []byte) (packets.Code, string) {
	if len(p) > b.cfg.MaxMessage {
		b.oversized.Add(1)
		return packets.ErrPacketTooLarge, "payloads over " + strconv.Itoa(b.cfg.MaxMessage) + " bytes"
	}
	if t := bytes.TrimLeft(p, " \t\r\n"); len(t) == 0 || t[0] != '{' || !utf8.Valid(t) {
		b.notJSON.Add(1)
		return packets.ErrPayloadFormatInvalid, "payloads that are not JSON objects"
	}
	return packets.CodeSuccess, ""
}

// newStrikes is a connection's allowance of refused packets: MaxRefusals
// within RefusalWindow, refilled steadily.
func (b *Broker) newStrikes() *rate.Limiter {
	return rate.NewLimiter(rate.Every(b.cfg.RefusalWindow/time.Duration(b.cfg.MaxRefusals)), b.cfg.MaxRefusals)
}

// strike counts a refused packet of the device's connection (a publish to
// a foreign topic, a subscription, a bad payload), on the connection's
// reader, the only goroutine that strikes it; over its allowance the
// connection is closed with code (MQTT 5 DISCONNECT) and the refusal is
// reported. The firmware sends none of these, so a client that keeps
// sending them is not a device to keep serving; the rest of the time a
// refused packet is dropped and the connection stays.
func (b *Broker) strike(cl *mqtt.Client, d *device, code packets.Code, what string) {
	if d.strikes == nil { // the firmware sends no refused packet: most devices never need one
		d.strikes = b.newStrikes()
	}
	if d.strikes.Allow() || !d.struckOut.CompareAndSwap(false, true) {
		return
	}
	b.struckOut.Add(1)
	why := fmt.Sprintf("%s %d times within %v: %s", ReasonRefusals, b.cfg.MaxRefusals+1, b.cfg.RefusalWindow, what)
	b.refuse(cl, d.id, d.id, why)
	_ = b.srv.DisconnectClient(cl, packets.Code{Code: code.Code, Reason: why})
}

// disconnectAll tells every client the server is shutting down, as mochi's
// own shutdown does, reading the client map once.
func (b *Broker) disconnectAll() {
	for _, cl := range b.srv.Clients.GetAll() {
		if !cl.Closed() {
			_ = b.srv.DisconnectClient(cl, packets.ErrServerShuttingDown)
		}
	}
}
