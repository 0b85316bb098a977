package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/metrics"
	"github.com/xiaozhi-hub/hub/mqttbroker"
	"github.com/xiaozhi-hub/hub/mqttlink"
	"github.com/xiaozhi-hub/hub/mqttremote"
	"github.com/xiaozhi-hub/hub/ota"
	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/udpaudio"
)

// mqttSide is the MQTT+UDP transport (mqtt-listen or mqtt-broker): the
// embedded broker or the router of an external one, the UDP audio server,
// and the link that turns their devices into sessions of the device
// endpoint. Devices on it stay online while idle.
type mqttSide struct {
	addrs  config.MQTT
	broker *mqttbroker.Broker // the embedded broker, or nil
	router *mqttremote.Router // the external broker's, or nil
	shared bool               // the external broker is shared by the nodes of a cluster
	audio  *udpaudio.Server
	link   *mqttlink.Link
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once // stop
}

// bindMQTT binds the broker and the UDP socket; wireMQTT connects them to
// the hub once the OTA service (told the broker's port by offer) and the
// device endpoint exist, and startMQTT serves them.
func (h *Hub) bindMQTT(context.Context) error {
	a, on, _ := h.cfg.MQTT() // checked by Validate
	if !on {
		return nil
	}
	side := &mqttSide{addrs: a}
	log := h.log.With("component", "mqtt")
	var err error
	if a.Broker != nil {
		err = h.bindRemote(side, log)
	} else {
		err = h.bindEmbedded(side, log)
	}
	if err != nil {
		return err
	}
	h.mqtt = side
	h.closers.pushf(side.stop) // releases the sockets if Open fails before wireMQTT
	return nil
}

// bindEmbedded binds the embedded broker and the UDP socket.
func (h *Hub) bindEmbedded(side *mqttSide, log *slog.Logger) error {
	a := side.addrs
	tlsCfg, err := a.TLSConfig()
	if err != nil {
		return err
	}
	b, err := mqttbroker.New(mqttbroker.Config{
		Addr: a.Listen, TLS: tlsCfg, MaxPending: a.MaxPending, MaxPendingPerAddress: a.PendingPerAddr,
		Authenticate: func(clientID, username, password, remote string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			id, err := h.trust.AuthorizeMQTT(ctx, clientID, username, password, hub.Host(remote)) // set before startMQTT
			return id.DeviceID, err
		},
		OnConnect: func(c mqttbroker.Client) { // the login was checked at CONNECT
			side.link.Connected(protocol.MQTTIdentity(c.ClientID, c.DeviceID), "mqtt "+c.Remote, c.Local)
		},
		OnMessage:    func(id string, p []byte) { side.link.Message(id, p) },
		OnDisconnect: func(id string, r mqttbroker.Reason) { side.link.Disconnected(id, string(r)) },
		OnRefused:    h.mqttRefused(log),
	})
	if err != nil {
		return fmt.Errorf("mqtt-listen: %w", err)
	}
	side.broker = b
	udpListen := a.UDPListen
	if udpListen == "" { // mqtt-listen's host and port, over UDP
		host, _, _ := net.SplitHostPort(a.Listen)
		_, port, _ := net.SplitHostPort(b.Addr())
		udpListen = net.JoinHostPort(host, port)
	}
	if side.audio, err = udpaudio.Listen(udpListen, udpaudio.Config{Logger: log, MaxSessionsPerAddr: h.cfg.UDPSessionsPerAddress}); err != nil {
		side.closeBroker()
		return fmt.Errorf("udp-listen %s: %w", udpListen, err)
	}
	return nil
}

// bindRemote prepares the client of an external broker and binds the UDP
// socket; the broker asks the hub about logins at POST /mqtt/auth.
func (h *Hub) bindRemote(side *mqttSide, log *slog.Logger) error {
	a := side.addrs
	clientID := "xiaozhi-hub"
	var nodes mqttremote.Nodes
	if c := h.cluster; c != nil { // each node is its own client of the broker
		nodes, side.shared = c.Node, true
		clientID += "-" + c.Node.Name()
	}
	r, err := mqttremote.NewRouter(mqttremote.Config{URL: a.Broker, Logger: log, ClientID: clientID}, nodes)
	if err != nil {
		return err
	}
	side.router = r
	if side.audio, err = udpaudio.Listen(a.UDPListen, udpaudio.Config{Logger: log, MaxSessionsPerAddr: h.cfg.UDPSessionsPerAddress}); err != nil {
		return fmt.Errorf("udp-listen %s: %w", a.UDPListen, err)
	}
	return nil
}

// offer is what the OTA answer tells devices about the broker.
func (m *mqttSide) offer() *ota.MQTT {
	port := m.addrs.PublicPort
	if port == 0 {
		port = m.broker.Port()
	}
	return &ota.MQTT{Host: m.addrs.PublicHost, Port: port}
}

// wireMQTT makes the link that serves the transport's devices as sessions
// of the device endpoint.
func (h *Hub) wireMQTT(context.Context) error {
	m := h.mqtt
	if m == nil {
		return nil
	}
	a := m.addrs
	udpPort := a.UDPPort
	if a.UDPHost == "" || udpPort == 0 {
		udpPort = int(m.audio.Addr().Port())
	}
	var bus mqttlink.Bus = m.broker
	if m.router != nil {
		bus = m.router.Client()
	}
	var err error
	m.link, err = mqttlink.New(mqttlink.Options{
		Bus: bus, Sessions: h.devices, Audio: m.audio, UDPHost: a.UDPHost, UDPPort: udpPort,
		Logger: h.log.With("component", "mqtt"),
	})
	if err != nil {
		return err
	}
	// Again, now after the device endpoint: MQTT devices go offline with
	// the broker ("the hub is shutting down") before it closes.
	h.closers.pushf(m.stop)
	m.register(h.Metrics)
	return nil
}

// startMQTT serves the broker and the UDP socket until stop.
func (h *Hub) startMQTT(context.Context) error {
	m := h.mqtt
	if m == nil {
		return nil
	}
	if m.router != nil {
		if err := m.router.Serve(m.link); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Go(func() {
		if m.router != nil {
			_ = m.router.Run(ctx)
		} else {
			_ = m.broker.Run(ctx)
		}
	})
	m.wg.Go(func() { _ = m.audio.Run(ctx) })
	return nil
}

// stop disconnects every MQTT device (their sessions end as the devices
// go offline) and closes both sockets.
func (m *mqttSide) stop() {
	m.once.Do(func() {
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

// register exports the broker's, the UDP server's and, in a cluster, the
// router's counters.
func (m *mqttSide) register(mm *metrics.Metrics) {
	mm.Gauge("xiaozhi_hub_mqtt_devices", "Devices with an MQTT session (online while idle).", func() float64 { return float64(m.link.Devices()) })
	mm.Gauge("xiaozhi_hub_udp_sessions", "Open UDP audio channels (conversations of MQTT devices).", func() float64 { return float64(m.audio.Sessions()) })
	mm.CounterFunc("xiaozhi_hub_udp_sessions_reclaimed_total", "UDP audio channels ended to make room for a new conversation (the table, or the MQTT address's udp-sessions-per-address, was full).",
		func() float64 { return float64(m.audio.Stats().Reclaimed) })
	mm.CountersFunc("xiaozhi_hub_mqtt_dropped_total", "MQTT messages and connections the broker refused or dropped, by reason.", "reason", func() map[string]uint64 {
		if m.router != nil {
			r := m.router.Client().Stats()
			return map[string]uint64{"oversized": r.Oversized, "not_json": r.NotJSON, "foreign_topic": r.Foreign}
		}
		b := m.broker.Stats()
		return map[string]uint64{"oversized": b.Oversized, "not_json": b.NotJSON, "refused": b.Refused,
			"over_connection_limit": b.OverLimit, "over_pending_limit": b.OverPending, "disconnected_for_refusals": b.StruckOut, "login_throttled": b.Throttled, "send_queue_full": b.SendDropped, "rate_limited": b.RateLimited}
	})
	if m.shared {
		mm.CountersFunc("xiaozhi_hub_mqtt_passed_total", "Device messages the shared broker gave this node that were passed to the node holding the device (out), and passed here by others (in).", "direction", func() map[string]uint64 {
			out, in := m.router.Passed()
			return map[string]uint64{"out": out, "in": in}
		})
	}
	mm.CountersFunc("xiaozhi_hub_udp_datagrams_total", "UDP audio datagrams by outcome (received, accepted, sent, or the rule that dropped them).", "outcome", func() map[string]uint64 {
		u := m.audio.Stats()
		return map[string]uint64{"received": u.Received, "accepted": u.Accepted, "sent": u.Sent,
			"dropped_flood": u.DroppedFlood, "dropped_shape": u.DroppedShape, "dropped_unknown_session": u.DroppedUnknown,
			"dropped_address": u.DroppedAddr, "dropped_flags": u.DroppedFlags, "dropped_old_sequence": u.DroppedOld,
			"dropped_queue_full": u.DroppedQueue, "dropped_too_long": u.DroppedLong, "dropped_sequence_jump": u.DroppedJump}
	})
}

// mqttAuth is the external broker's authenticator (POST /mqtt/auth).
func (h *Hub) mqttAuth() http.Handler {
	return mqttremote.AuthHandler(h.mqtt.addrs.BrokerSecret, func(ctx context.Context, clientID, username, password, remote string) error {
		_, err := h.trust.AuthorizeMQTT(ctx, clientID, username, password, remote)
		if err != nil {
			h.mqttRefused(h.log.With("component", "mqtt"))(mqttbroker.Refusal{ClientID: clientID, Username: username, Remote: remote, Reason: hub.ErrorMessage(err)})
		}
		return err
	}, h.log.With("component", "mqtt"))
}

// mqttRefused reports refused MQTT clients (mqttbroker.Reporter), each
// counted in the handshake metrics.
func (h *Hub) mqttRefused(log *slog.Logger) func(mqttbroker.Refusal) {
	report := mqttbroker.Reporter{Reports: h.refusals, Devices: h.Registry, Log: log}.Report
	return func(r mqttbroker.Refusal) {
		h.Metrics.Handshake("mqtt_refused")
		report(r)
	}
}
