package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/cluster"
	"github.com/xiaozhi-hub/hub/mqttbroker"
	"github.com/xiaozhi-hub/hub/mqttlink"
	"github.com/xiaozhi-hub/hub/mqttremote"
	"github.com/xiaozhi-hub/hub/ota"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// mqttSide is the MQTT+UDP transport (mqtt-listen): the embedded broker,
// the UDP audio server, and the link that turns their devices into
// sessions of the device endpoint. Devices on it stay online while idle.
type mqttSide struct {
	trust        *ota.Service       // set by wire, before start
	broker       *mqttbroker.Broker // the embedded broker, or nil
	remote       *mqttremote.Client // the external broker's client, or nil
	shared       *cluster.Node      // set with an external broker in a cluster (mqttshared.go)
	unshare      func()             // stops taking devices from the other nodes
	rebalanceNow chan struct{}
	passedOut    atomic.Uint64 // device messages passed to the node holding the device
	passedIn     atomic.Uint64 // device messages other nodes passed to this one
	log          *slog.Logger
	authSecret   string // what the external broker sends to POST /mqtt/auth
	audio        *udpaudio.Server
	link         *mqttlink.Link
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	once         sync.Once // stop
}

// bindMQTT binds the broker and the UDP socket; wire connects them to the
// hub once the OTA service (told the broker's port by offer) and the device
// endpoint exist, and start serves them.
func (h *Hub) bindMQTT(a mqttAddrs) (*mqttSide, error) {
	log := h.log.With("component", "mqtt")
	if a.broker != nil {
		return h.bindRemote(a, log)
	}
	var tlsCfg *tls.Config
	if a.tls {
		cert, err := tls.LoadX509KeyPair(a.tlsCert, a.tlsKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("mqtt-tls-cert/mqtt-tls-key: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	side := &mqttSide{}
	b, err := mqttbroker.New(mqttbroker.Config{
		Addr: a.listen, TLS: tlsCfg, MaxPending: a.maxPending, MaxPendingPerAddress: a.pendingPerAddr,
		Authenticate: func(clientID, username, password, remote string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			id, err := side.trust.AuthorizeMQTT(ctx, clientID, username, password, hostOf(remote))
			return id.DeviceID, err
		},
		OnConnect: func(c mqttbroker.Client) {
			// The login was checked at CONNECT; this only reads the Client-Id.
			id, err := protocol.ParseMQTTLogin(c.ClientID, c.DeviceID, "")
			if err != nil {
				id = protocol.Identity{DeviceID: c.DeviceID, ProtocolVersion: 3}
			}
			side.link.Connected(id, "mqtt "+c.Remote, c.Local)
		},
		OnMessage:    func(id string, p []byte) { side.link.Message(id, p) },
		OnDisconnect: func(id string, r mqttbroker.Reason) { side.link.Disconnected(id, string(r)) },
		OnRefused:    func(r mqttbroker.Refusal) { h.mqttRefused(side, log, r) },
	})
	if err != nil {
		return nil, fmt.Errorf("mqtt-listen: %w", err)
	}
	side.broker = b
	udpListen := a.udpListen
	if udpListen == "" { // mqtt-listen's host and port, over UDP
		host, _, _ := net.SplitHostPort(a.listen)
		_, port, _ := net.SplitHostPort(b.Addr())
		udpListen = net.JoinHostPort(host, port)
	}
	audio, err := udpaudio.Listen(udpListen, udpaudio.Config{Logger: log, MaxSessionsPerAddr: h.cfg.UDPSessionsPerAddress})
	if err != nil {
		side.closeBroker()
		return nil, fmt.Errorf("udp-listen %s: %w", udpListen, err)
	}
	side.audio = audio
	return side, nil
}

// offer is what the OTA answer tells devices about the broker.
func (m *mqttSide) offer(a mqttAddrs) *ota.MQTT {
	port := a.publicPort
	if port == 0 {
		_, p, _ := net.SplitHostPort(m.broker.Addr())
		port, _ = strconv.Atoi(p)
	}
	return &ota.MQTT{Host: a.publicHost, Port: port}
}

// wire connects the transport to the device-auth policy and the device
// endpoint.
func (h *Hub) wireMQTT(m *mqttSide, a mqttAddrs, trust *ota.Service) error {
	m.trust = trust
	udpPort := a.udpPort
	if a.udpHost == "" || udpPort == 0 {
		udpPort = int(m.audio.Addr().Port())
	}
	var bus mqttlink.Bus = m.broker
	if m.remote != nil {
		bus = m.remote
	}
	var err error
	m.link, err = mqttlink.New(mqttlink.Options{
		Bus: bus, Sessions: h.devices, Audio: m.audio, UDPHost: a.udpHost, UDPPort: udpPort,
		Logger: h.log.With("component", "mqtt"),
	})
	if err != nil {
		return err
	}
	m.register(h.Metrics.Registry)
	return nil
}

// start serves the broker and the UDP socket until stop.
func (m *mqttSide) start() error {
	if m.shared != nil {
		stop, err := m.shared.ServePassed(m.passedHere)
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		m.shared.OnReleased(m.released)
		m.shared.OnMembership(func() { signalNow(m.rebalanceNow) })
		m.unshare = func() {
			m.shared.OnReleased(nil)
			m.shared.OnMembership(nil)
			stop()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	if m.shared != nil {
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.rebalance(ctx) }()
	}
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		if m.remote != nil {
			_ = m.remote.Run(ctx)
		} else {
			_ = m.broker.Run(ctx)
		}
	}()
	go func() { defer m.wg.Done(); _ = m.audio.Run(ctx) }()
	return nil
}

// stop disconnects every MQTT device (their sessions end as the devices
// go offline) and closes both sockets.
func (m *mqttSide) stop() {
	m.once.Do(func() {
		if m.unshare != nil {
			m.unshare()
		}
		if m.cancel == nil {
			m.closeBroker()
			return
		}
		m.cancel()
		m.wg.Wait()
		m.link.Wait()
	})
}

// closeBroker releases sockets that were bound but never served.
func (m *mqttSide) closeBroker() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if m.broker != nil {
		_ = m.broker.Run(ctx)
	}
	if m.audio != nil {
		_ = m.audio.Run(ctx)
	}
}

// register exports the broker's and the UDP server's counters.
func (m *mqttSide) register(r *prometheus.Registry) {
	if r == nil {
		return
	}
	r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "xiaozhi_hub_mqtt_devices", Help: "Devices with an MQTT session (online while idle).",
	}, func() float64 { return float64(m.link.Devices()) }))
	r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "xiaozhi_hub_udp_sessions", Help: "Open UDP audio channels (conversations of MQTT devices).",
	}, func() float64 { return float64(m.audio.Sessions()) }))
	r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "xiaozhi_hub_udp_sessions_reclaimed_total", Help: "UDP audio channels ended to make room for a new conversation (the table, or the MQTT address's udp-sessions-per-address, was full).",
	}, func() float64 { return float64(m.audio.Stats().Reclaimed) }))
	r.MustRegister(&statsCollector{m: m})
}

var (
	mqttDroppedDesc = prometheus.NewDesc("xiaozhi_hub_mqtt_dropped_total",
		"MQTT messages and connections the broker refused or dropped, by reason.", []string{"reason"}, nil)
	mqttPassedDesc = prometheus.NewDesc("xiaozhi_hub_mqtt_passed_total",
		"Device messages the shared broker gave this node that were passed to the node holding the device (out), and passed here by others (in).", []string{"direction"}, nil)
	udpDatagramsDesc = prometheus.NewDesc("xiaozhi_hub_udp_datagrams_total",
		"UDP audio datagrams by outcome (received, accepted, sent, or the rule that dropped them).", []string{"outcome"}, nil)
)

type statsCollector struct{ m *mqttSide }

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- mqttDroppedDesc
	ch <- udpDatagramsDesc
	if c.m.shared != nil {
		ch <- mqttPassedDesc
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	var drops map[string]uint64
	if c.m.remote != nil {
		r := c.m.remote.Stats()
		drops = map[string]uint64{"oversized": r.Oversized, "not_json": r.NotJSON, "foreign_topic": r.Foreign}
	} else {
		b := c.m.broker.Stats()
		drops = map[string]uint64{"oversized": b.Oversized, "not_json": b.NotJSON, "refused": b.Refused,
			"over_connection_limit": b.OverLimit, "over_pending_limit": b.OverPending, "disconnected_for_refusals": b.StruckOut, "login_throttled": b.Throttled, "send_queue_full": b.SendDropped, "rate_limited": b.RateLimited}
	}
	for reason, n := range drops {
		ch <- prometheus.MustNewConstMetric(mqttDroppedDesc, prometheus.CounterValue, float64(n), reason)
	}
	if c.m.shared != nil {
		ch <- prometheus.MustNewConstMetric(mqttPassedDesc, prometheus.CounterValue, float64(c.m.passedOut.Load()), "out")
		ch <- prometheus.MustNewConstMetric(mqttPassedDesc, prometheus.CounterValue, float64(c.m.passedIn.Load()), "in")
	}
	u := c.m.audio.Stats()
	for outcome, n := range map[string]uint64{"received": u.Received, "accepted": u.Accepted, "sent": u.Sent,
		"dropped_flood": u.DroppedFlood, "dropped_shape": u.DroppedShape, "dropped_unknown_session": u.DroppedUnknown,
		"dropped_address": u.DroppedAddr, "dropped_flags": u.DroppedFlags, "dropped_old_sequence": u.DroppedOld,
		"dropped_queue_full": u.DroppedQueue, "dropped_too_long": u.DroppedLong, "dropped_sequence_jump": u.DroppedJump} {
		ch <- prometheus.MustNewConstMetric(udpDatagramsDesc, prometheus.CounterValue, float64(n), outcome)
	}
}

func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// bindRemote prepares the client of an external broker and binds the UDP
// socket; the broker asks the hub about logins at POST /mqtt/auth.
func (h *Hub) bindRemote(a mqttAddrs, log *slog.Logger) (*mqttSide, error) {
	side := &mqttSide{log: log, rebalanceNow: make(chan struct{}, 1)}
	clientID := "xiaozhi-hub"
	if h.cluster != nil { // each node is its own client of the broker
		side.shared = h.cluster.node
		clientID += "-" + side.shared.Name()
	}
	c, err := mqttremote.New(mqttremote.Config{URL: a.broker, Logger: log, ClientID: clientID,
		OnConnect:    side.connected,
		OnMessage:    side.message,
		OnDisconnect: func(id, reason string) { side.link.Disconnected(id, reason) },
	})
	if err != nil {
		return nil, err
	}
	side.remote, side.authSecret = c, a.brokerSecret
	audio, err := udpaudio.Listen(a.udpListen, udpaudio.Config{Logger: log, MaxSessionsPerAddr: h.cfg.UDPSessionsPerAddress})
	if err != nil {
		return nil, fmt.Errorf("udp-listen %s: %w", a.udpListen, err)
	}
	side.audio = audio
	return side, nil
}

// mqttAuth is the external broker's authenticator (POST /mqtt/auth).
func (h *Hub) mqttAuth() http.Handler {
	return mqttremote.AuthHandler(h.mqtt.authSecret, func(ctx context.Context, clientID, username, password, remote string) error {
		_, err := h.mqtt.trust.AuthorizeMQTT(ctx, clientID, username, password, remote)
		if err != nil {
			h.mqttRefused(h.mqtt, h.log.With("component", "mqtt"), mqttbroker.Refusal{ClientID: clientID, Username: username, Remote: remote, Reason: hub.ErrorMessage(err)})
		}
		return err
	}, h.log.With("component", "mqtt"))
}
