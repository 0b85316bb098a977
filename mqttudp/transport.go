// Package mqttudp assembles the hub's MQTT+UDP transport (mqtt-listen or
// mqtt-broker): the embedded broker (mqttbroker) or the router of an
// external one (mqttremote, shared with the other nodes in a cluster), the
// UDP audio server (udpaudio), and the link (mqttlink) that turns their
// devices into sessions of the device endpoint, with their metrics and the
// reporting of refused logins. Devices on it stay online while idle.
//
// Its life has the three steps of the hub's Open: Bind takes the sockets
// (the OTA answer tells devices the broker's port, Offer), Wire connects
// the transport to the device-auth policy and the device endpoint, Start
// serves. Stop, after any of them, undoes what was done.
package mqttudp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/internal/refusals"
	"github.com/xiaozhi-hub/hub/mqttbroker"
	"github.com/xiaozhi-hub/hub/mqttlink"
	"github.com/xiaozhi-hub/hub/mqttremote"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// Trust checks a device's MQTT login against the device-auth policy
// (ota.Service): the device it names, or why it is refused.
type Trust interface {
	AuthorizeMQTT(ctx context.Context, clientID, username, password, remote string) (protocol.Identity, error)
}

// Metrics is where the transport exports its counts (metrics.Metrics).
type Metrics interface {
	Gauge(name, help string, f func() float64)
	CounterFunc(name, help string, f func() float64)
	CountersFunc(name, help, label string, f func() map[string]uint64)
	// Handshake counts a refused login as the outcome "mqtt_refused".
	Handshake(outcome string)
}

// Options configures a Transport. Settings, Metrics, Refusals and Devices
// are required.
type Options struct {
	// Settings are the resolved MQTT settings (config.Config.MQTT):
	// Broker set means an external broker, else the embedded one.
	Settings config.MQTT
	// UDPSessionsPerAddress bounds the open audio channels of the devices
	// at one MQTT address (udp-sessions-per-address).
	UDPSessionsPerAddress int
	// Nodes, in a cluster, are the other hubs sharing an external broker
	// (cluster.Node): each node is its own client of the broker and holds
	// only the devices it owns. nil for a hub alone.
	Nodes mqttremote.Nodes
	// Refusals limits the logging and recording of refused logins, shared
	// with the hub's other transports; Devices (the registry) is where
	// they are recorded as the named device's events.
	Refusals *refusals.Reports
	Devices  mqttbroker.Devices
	Metrics  Metrics
	Logger   *slog.Logger
}

// Transport is the MQTT+UDP transport of one hub.
type Transport struct {
	opts   Options
	log    *slog.Logger
	broker *mqttbroker.Broker // the embedded broker, or nil
	router *mqttremote.Router // the external broker's, or nil
	audio  *udpaudio.Server
	trust  Trust // set by Wire
	link   *mqttlink.Link
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once // Stop
}

// Bind binds the embedded broker, or prepares the client of the external
// one, and binds the UDP socket. Nothing is served before Start, but the
// sockets are held until Stop.
func Bind(opts Options) (*Transport, error) {
	if opts.Metrics == nil || opts.Refusals == nil || opts.Devices == nil {
		return nil, errors.New("mqttudp: Metrics, Refusals and Devices are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Transport{opts: opts, log: opts.Logger}
	var err error
	if opts.Settings.Broker != nil {
		err = t.bindRemote()
	} else {
		err = t.bindEmbedded()
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// bindEmbedded binds the embedded broker and the UDP socket (udp-listen,
// else mqtt-listen's host and bound port, over UDP).
func (t *Transport) bindEmbedded() error {
	a := t.opts.Settings
	tlsCfg, err := a.TLSConfig()
	if err != nil {
		return err
	}
	b, err := mqttbroker.New(mqttbroker.Config{
		Addr: a.Listen, TLS: tlsCfg, MaxPending: a.MaxPending, MaxPendingPerAddress: a.PendingPerAddr,
		Authenticate: t.authenticate,
		OnConnect: func(c mqttbroker.Client) { // the login was checked at CONNECT
			t.link.Connected(protocol.MQTTIdentity(c.ClientID, c.DeviceID), "mqtt "+c.Remote, c.Local)
		},
		OnMessage:    func(id string, p []byte) { t.link.Message(id, p) },
		OnDisconnect: func(id string, r mqttbroker.Reason) { t.link.Disconnected(id, string(r)) },
		OnRefused:    t.refused,
	})
	if err != nil {
		return fmt.Errorf("mqtt-listen: %w", err)
	}
	t.broker = b
	udpListen := a.UDPListen
	if udpListen == "" {
		host, _, _ := net.SplitHostPort(a.Listen)
		_, port, _ := net.SplitHostPort(b.Addr())
		udpListen = net.JoinHostPort(host, port)
	}
	if t.audio, err = t.listenUDP(udpListen); err != nil {
		t.release()
		return err
	}
	return nil
}

// bindRemote prepares the client of an external broker (it connects at
// Start) and binds the UDP socket; the broker asks the hub about logins
// through AuthHandler.
func (t *Transport) bindRemote() error {
	a := t.opts.Settings
	clientID := "xiaozhi-hub"
	if n := t.opts.Nodes; n != nil { // each node is its own client of the broker
		clientID += "-" + n.Name()
	}
	r, err := mqttremote.NewRouter(mqttremote.Config{URL: a.Broker, Logger: t.log, ClientID: clientID}, t.opts.Nodes)
	if err != nil {
		return err
	}
	t.router = r
	t.audio, err = t.listenUDP(a.UDPListen)
	return err
}

func (t *Transport) listenUDP(addr string) (*udpaudio.Server, error) {
	s, err := udpaudio.Listen(addr, udpaudio.Config{Logger: t.log, MaxSessionsPerAddr: t.opts.UDPSessionsPerAddress})
	if err != nil {
		return nil, fmt.Errorf("udp-listen %s: %w", addr, err)
	}
	return s, nil
}

// Offer is what the OTA answer tells devices about the broker
// (ota.MQTT): mqtt-public's host ("": derived per device) and port, else
// the embedded broker's bound port.
func (t *Transport) Offer() (host string, port int) {
	a := t.opts.Settings
	port = a.PublicPort
	if port == 0 && t.broker != nil {
		port = t.broker.Port()
	}
	return a.PublicHost, port
}

// Wire makes the link that serves the transport's devices as sessions of
// the device endpoint, their logins checked by trust, and exports the
// transport's metrics. Call it once, after Bind and before Start.
func (t *Transport) Wire(trust Trust, sessions mqttlink.Sessions) error {
	if trust == nil {
		return errors.New("mqttudp: Wire needs the device-auth policy")
	}
	t.trust = trust
	a := t.opts.Settings
	udpPort := a.UDPPort
	if a.UDPHost == "" || udpPort == 0 {
		udpPort = int(t.audio.Addr().Port())
	}
	var bus mqttlink.Bus = t.broker
	if t.router != nil {
		bus = t.router.Client()
	}
	var err error
	t.link, err = mqttlink.New(mqttlink.Options{
		Bus: bus, Sessions: sessions, Audio: t.audio, UDPHost: a.UDPHost, UDPPort: udpPort, Logger: t.log,
	})
	if err != nil {
		return err
	}
	t.register()
	return nil
}

// Start serves the broker (or the external broker's client) and the UDP
// socket until Stop.
func (t *Transport) Start() error {
	if t.link == nil {
		return errors.New("mqttudp: Start before Wire")
	}
	if t.router != nil {
		if err := t.router.Serve(t.link); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	t.wg.Go(func() {
		if t.router != nil {
			_ = t.router.Run(ctx)
		} else {
			_ = t.broker.Run(ctx)
		}
	})
	t.wg.Go(func() { _ = t.audio.Run(ctx) })
	return nil
}

// Stop disconnects every device (their sessions end as the devices go
// offline), waits for what the link handed to the sessions, and closes
// both sockets; before Start it only releases the sockets. Safe to call
// more than once.
func (t *Transport) Stop() {
	t.once.Do(func() {
		if t.cancel == nil {
			t.release()
			return
		}
		t.cancel()
		t.wg.Wait()
		t.link.Wait()
	})
}

// release closes sockets that were bound but never served.
func (t *Transport) release() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if t.broker != nil {
		_ = t.broker.Run(ctx)
	}
	if t.audio != nil {
		_ = t.audio.Run(ctx)
	}
}

// MQTTAddr is the embedded broker's address ("" with an external broker).
func (t *Transport) MQTTAddr() string {
	if t.broker == nil {
		return ""
	}
	return t.broker.Addr()
}

// UDPAddr is the UDP audio server's address.
func (t *Transport) UDPAddr() string { return t.audio.Addr().String() }
