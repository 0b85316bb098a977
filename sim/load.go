package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/sim/mqttdevice"
)

// Tool-set profiles for load tests (LoadConfig.Profile).
const (
	// ProfileSmall is a speaker without a screen offering two tools
	// (self.get_device_status, self.audio_speaker.set_volume): one short
	// tools/list page.
	ProfileSmall = "small"
	// ProfileFirmware is the built-in tool set of firmware 2.4.2 on a board
	// with a screen: seven tools, three of them user-only, one page.
	ProfileFirmware = "firmware"
	// ProfileManyPages is the firmware set plus ManyPagesFillers filler
	// tools of about 1 KB each, so that tools/list takes ManyPagesPages
	// pages of up to 8 KB.
	ProfileManyPages = "many-pages"
)

// Profiles lists the load profiles by name.
var Profiles = []string{ProfileSmall, ProfileFirmware, ProfileManyPages}

// ManyPagesFillers and ManyPagesPages describe ProfileManyPages: that many
// filler tools, listed in that many pages.
const (
	ManyPagesFillers  = 24
	ManyPagesPages    = 4
	manyPagesDescSize = 950
)

// manyPagesTools are shared by every many-pages device (a Tool caches its
// JSON, so sharing keeps the load generator's memory flat).
var manyPagesTools = sync.OnceValue(func() []*Tool {
	return FillerTools("self.bench.filler", ManyPagesFillers, manyPagesDescSize)
})

// userOnlyBuiltins are removed from small devices.
var userOnlyBuiltins = []string{toolGetSystemInfo.Name, toolReboot.Name, toolUpgradeFirmware.Name}

// ApplyProfile shapes cfg for a load profile before New; FinishProfile
// completes it on the device. An unknown profile is an error.
func ApplyProfile(cfg *Config, profile string) error {
	switch profile {
	case ProfileSmall:
		cfg.NoScreen, cfg.Lamp, cfg.Mode = true, false, ModeMCP
	case ProfileFirmware, ProfileManyPages, "":
		cfg.NoScreen, cfg.Lamp, cfg.Mode = false, false, ModeMCP
	default:
		return fmt.Errorf("sim: unknown load profile %q (want one of small, firmware, many-pages)", profile)
	}
	return nil
}

// FinishProfile adds or removes the tools that make d a device of profile.
func FinishProfile(d *Device, profile string) error {
	switch profile {
	case ProfileSmall:
		for _, n := range userOnlyBuiltins {
			d.RemoveTool(n)
		}
	case ProfileManyPages:
		return d.AddTool(manyPagesTools()...)
	}
	return nil
}

// LoadConfig describes a load-test fleet run from one process.
type LoadConfig struct {
	// URL is the hub's device endpoint (ws://…/xiaozhi/v1/).
	URL   string
	Token string // device bearer token, if the hub wants one (the MQTT password too)
	// MQTT, when set, is the hub's MQTT broker (host:port): the devices
	// connect there instead of the WebSocket, logging in with Token (a
	// device token the hub is configured with).
	MQTT string
	// IDPrefix is the first octets of the device ids (default
	// DefaultIDPrefix); device i (from 1) is MAC(IDPrefix, i).
	IDPrefix string
	// Profile is the tool set: ProfileSmall, ProfileFirmware (default) or
	// ProfileManyPages.
	Profile string

	// Sources spreads connections over this many loopback source
	// addresses, 127.0.0.2, 127.0.0.3, …, so that more than one address's
	// ~28k ephemeral ports can be used (Linux routes all of 127/8 to lo).
	// 0 lets the system choose. SourceAddrs, if set, are used instead.
	Sources     int
	SourceAddrs []netip.Addr

	// Rate is how many devices start per second; 0 starts them all at once.
	Rate float64
	// MaxDialing caps first connection attempts in flight (0: no cap), to
	// keep a storm within the hub's listen backlog. Reconnections are not
	// capped.
	MaxDialing int

	// Churn, when positive, makes every device drop its connection after a
	// random time uniformly between Churn/2 and 3·Churn/2 and reconnect.
	Churn time.Duration
	// ReconnectMin and ReconnectMax bound the jittered, doubling back-off
	// between connection attempts (defaults 500 ms and 30 s).
	ReconnectMin, ReconnectMax time.Duration

	// ListenOnConnect makes every device send "listen start" (auto mode)
	// right after each hello, as firmware on WebSocket does (it connects
	// only to talk), and then stay silent: no audio follows.
	ListenOnConnect bool

	// OnConnect, if set, is called after each device's first accepted
	// hello with the device's index (from 0) and the time from starting the
	// device to that hello. It must not block.
	OnConnect func(i int, took time.Duration)
	Logger    *slog.Logger // per-device logging; default discard
}

// Load runs many simulated devices against one hub. Create it with NewLoad,
// add devices with Start, stop them all with Stop. Each device costs one
// goroutine (Device.Run) and, with churn, a timer.
type Load struct {
	cfg     LoadConfig
	clients []*http.Client
	dialing chan struct{} // nil: no cap

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	devices []*Device

	connected atomic.Int64
	connects  atomic.Int64
	failures  atomic.Int64
	drops     atomic.Int64
}

// LoadStats are counters across the whole fleet.
type LoadStats struct {
	Devices   int   // devices started
	Connected int   // with an accepted hello now
	Connects  int64 // accepted hellos so far
	Failures  int64 // connection attempts that ended without a hello
	Drops     int64 // connections dropped by churn
}

// NewLoad checks cfg and prepares the HTTP clients; it starts nothing.
func NewLoad(cfg LoadConfig) (*Load, error) {
	if cfg.URL == "" {
		return nil, errors.New("sim: load needs the hub's device URL")
	}
	if cfg.Profile == "" {
		cfg.Profile = ProfileFirmware
	}
	if err := ApplyProfile(&Config{}, cfg.Profile); err != nil {
		return nil, err
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = 500 * time.Millisecond
	}
	if cfg.ReconnectMax < cfg.ReconnectMin {
		cfg.ReconnectMax = max(30*time.Second, cfg.ReconnectMin)
	}
	if cfg.Rate < 0 || cfg.MaxDialing < 0 || cfg.Sources < 0 || cfg.Churn < 0 {
		return nil, errors.New("sim: load rate, dial cap, sources and churn must not be negative")
	}
	if _, err := MAC(cfg.IDPrefix, 1); err != nil {
		return nil, err
	}
	addrs := cfg.SourceAddrs
	if len(addrs) == 0 && cfg.Sources > 0 {
		var err error
		if addrs, err = LoopbackSources(cfg.URL, cfg.Sources); err != nil {
			return nil, err
		}
	}
	l := &Load{cfg: cfg}
	if len(addrs) == 0 {
		l.clients = []*http.Client{loadClient(netip.Addr{})}
	}
	for _, a := range addrs {
		l.clients = append(l.clients, loadClient(a))
	}
	if cfg.MaxDialing > 0 {
		l.dialing = make(chan struct{}, cfg.MaxDialing)
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// LoopbackSources returns n source addresses 127.0.0.2, 127.0.0.3, … for a
// hub URL on loopback; for a hub elsewhere it is an error.
func LoopbackSources(hubURL string, n int) ([]netip.Addr, error) {
	u, err := url.Parse(hubURL)
	if err != nil {
		return nil, fmt.Errorf("sim: bad URL %q: %w", hubURL, err)
	}
	host := u.Hostname()
	ip, err := netip.ParseAddr(host)
	if host != "localhost" && (err != nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("sim: several source addresses need a hub on loopback, not %q", host)
	}
	if n > 250 {
		return nil, fmt.Errorf("sim: at most 250 loopback source addresses, not %d", n)
	}
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = netip.AddrFrom4([4]byte{127, 0, 0, byte(2 + i)})
	}
	return out, nil
}

// loadClient dials from src (any address when invalid), like the firmware:
// no proxy, no gzip.
func loadClient(src netip.Addr) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: -1, Control: bindNoPort}
	if src.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
	}
	return &http.Client{Transport: upgrader{d}}
}

// upgrader is an http.RoundTripper for WebSocket upgrade requests only: it
// dials, writes the request and reads the response head, and hands over the
// connection as the body of a 101 response, as net/http's Transport does,
// without its connection pool and per-connection goroutines. A load
// generator that shares the CPU with the hub saves that work on every
// connection.
type upgrader struct{ d *net.Dialer }

func (u upgrader) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	conn, err := u.d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // ends the handshake when ctx does
	br := bufio.NewReaderSize(conn, 512)
	resp, err := u.handshake(req, conn, br)
	if !stop() {
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// What the server sent after its response head is in br.
		resp.Body = upgraded{br, conn}
	} else {
		resp.Body = closeBoth{resp.Body, conn}
	}
	return resp, nil
}

func (upgrader) handshake(req *http.Request, conn net.Conn, br *bufio.Reader) (*http.Response, error) {
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	return http.ReadResponse(br, req)
}

// upgraded is an upgraded connection, read through the buffer that holds
// the first bytes after the response head.
type upgraded struct {
	*bufio.Reader
	net.Conn
}

func (c upgraded) Read(p []byte) (int, error) { return c.Reader.Read(p) }

type closeBoth struct {
	io.ReadCloser
	conn net.Conn
}

func (c closeBoth) Close() error {
	c.ReadCloser.Close()
	return c.conn.Close()
}

// Start adds n devices, at cfg.Rate per second (or all at once), each
// connecting and reconnecting until Stop. It returns once all n have been
// started (not connected: see Stats), or when ctx ends.
func (l *Load) Start(ctx context.Context, n int) error {
	start := time.Now()
	for k := range n {
		if l.cfg.Rate > 0 && k > 0 {
			due := start.Add(time.Duration(float64(k) / l.cfg.Rate * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-l.ctx.Done():
					t.Stop()
					return errors.New("sim: load stopped")
				case <-t.C:
				}
			}
		}
		d, st, err := l.newDevice()
		if err != nil {
			return err
		}
		l.wg.Go(func() { l.runDevice(d, st) })
	}
	return nil
}

func (l *Load) newDevice() (*Device, *loadDevice, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.devices)
	id, err := MAC(l.cfg.IDPrefix, i+1)
	if err != nil {
		return nil, nil, err
	}
	st := &loadDevice{l: l, i: i}
	if l.cfg.Logger != nil {
		st.next = l.cfg.Logger.Handler()
	}
	cfg := Config{
		URL: l.cfg.URL, DeviceID: id, Token: l.cfg.Token, Logger: slog.New(st),
		HTTPClient:   l.clients[i%len(l.clients)],
		ReconnectMin: l.cfg.ReconnectMin, ReconnectMax: l.cfg.ReconnectMax,
		ListenOnConnect: l.cfg.ListenOnConnect,
	}
	_ = ApplyProfile(&cfg, l.cfg.Profile) // checked in NewLoad
	d := New(cfg)
	if l.cfg.MQTT != "" {
		c := d.Config()
		d.UseMQTT(mqttdevice.Config{Endpoint: l.cfg.MQTT, ClientID: protocol.MQTTClientID(id, c.ClientID), Username: id,
			Password: l.cfg.Token, PublishTopic: protocol.UplinkTopic(id)})
	}
	if err := FinishProfile(d, l.cfg.Profile); err != nil {
		return nil, nil, err
	}
	st.d = d
	l.devices = append(l.devices, d)
	return d, st, nil
}

// runDevice runs d (Device.Run: one goroutine per device, reconnecting
// with back-off) until the load stops.
func (l *Load) runDevice(d *Device, st *loadDevice) {
	if l.dialing != nil {
		select {
		case l.dialing <- struct{}{}:
			st.release = sync.OnceFunc(func() { <-l.dialing })
			defer st.release()
		case <-l.ctx.Done():
			return
		}
	}
	st.started = time.Now()
	_ = d.Run(l.ctx)
}

// loadDevice follows one device of a Load through its log: Device.Run
// reports each accepted hello ("sim: connected") and each connection that
// ended ("sim: connection ended, reconnecting"), which is all the load needs
// to count connections, time the first one and schedule churn.
type loadDevice struct {
	l       *Load
	d       *Device
	i       int
	next    slog.Handler // the configured logger's, or nil
	started time.Time
	release func() // frees the dial slot after the first attempt; nil without a cap

	helloed atomic.Bool   // the current connection has an accepted hello
	first   atomic.Bool   // a hello has been accepted before
	gen     atomic.Uint64 // accepted hellos, to tell connections apart
}

const (
	logConnected = "sim: connected"
	logEnded     = "sim: connection ended, reconnecting"
)

func (st *loadDevice) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo || (st.next != nil && st.next.Enabled(ctx, level))
}

func (st *loadDevice) Handle(ctx context.Context, r slog.Record) error {
	switch r.Message {
	case logConnected:
		st.onHello()
	case logEnded:
		st.onEnd()
	}
	if st.next != nil && st.next.Enabled(ctx, r.Level) {
		return st.next.Handle(ctx, r)
	}
	return nil
}

func (st *loadDevice) WithAttrs(as []slog.Attr) slog.Handler {
	if st.next != nil {
		st.next = st.next.WithAttrs(as) // called once, by New, before the device runs
	}
	return st
}

func (st *loadDevice) WithGroup(string) slog.Handler { return st }

func (st *loadDevice) onHello() {
	l := st.l
	st.helloed.Store(true)
	gen := st.gen.Add(1)
	l.connects.Add(1)
	l.connected.Add(1)
	if !st.first.Swap(true) {
		if st.release != nil {
			st.release()
		}
		if l.cfg.OnConnect != nil {
			l.cfg.OnConnect(st.i, time.Since(st.started))
		}
	}
	if l.cfg.Churn > 0 {
		time.AfterFunc(l.cfg.Churn/2+rand.N(l.cfg.Churn+1), func() {
			if st.gen.Load() == gen && st.helloed.Load() && l.ctx.Err() == nil {
				l.drops.Add(1)
				st.d.Drop()
			}
		})
	}
}

func (st *loadDevice) onEnd() {
	if st.helloed.Swap(false) {
		st.l.connected.Add(-1)
		return
	}
	st.l.failures.Add(1)
	if st.release != nil && !st.first.Load() {
		st.release() // let the next device try; this one retries after back-off
	}
}

// Stop disconnects every device (dropping TCP, as the firmware does) and
// waits for them.
func (l *Load) Stop() {
	l.cancel()
	l.wg.Wait()
	l.connected.Store(0) // Run does not log connections ended by its ctx
}

// Devices returns the devices started so far, in order.
func (l *Load) Devices() []*Device {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Device(nil), l.devices...)
}

// Stats returns the fleet's counters.
func (l *Load) Stats() LoadStats {
	l.mu.Lock()
	n := len(l.devices)
	l.mu.Unlock()
	return LoadStats{
		Devices: n, Connected: int(l.connected.Load()),
		Connects: l.connects.Load(), Failures: l.failures.Load(), Drops: l.drops.Load(),
	}
}
