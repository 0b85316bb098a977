package ota

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

// MQTT is what the OTA answer tells devices about the hub's MQTT endpoint
// (mqtt-public). With it set, every admitted device is offered MQTT unless
// a person keeps it on WebSocket (SetTransport).
type MQTT struct {
	// Host is the broker's host as devices dial it: an IPv4 address or a
	// DNS name (the firmware cannot parse IPv6 literals). Empty: the host
	// of public-url, else of the OTA request.
	Host string
	// Port is the broker's port. The firmware uses TLS exactly when it is
	// 8883 (checked against the ESP-IDF CA bundle), and plain TCP on any
	// other port.
	Port int
	// Keepalive in seconds (default 240, the firmware's).
	Keepalive int
}

// DefaultKeepalive is the firmware's default MQTT keepalive, in seconds.
const DefaultKeepalive = 240

func (m *MQTT) check() error {
	if m.Keepalive == 0 {
		m.Keepalive = DefaultKeepalive
	}
	if m.Keepalive < 10 || m.Keepalive > 3600 {
		return fmt.Errorf("MQTT keepalive %d s is outside 10..3600", m.Keepalive)
	}
	if m.Port < 1 || m.Port > 65535 {
		return fmt.Errorf("MQTT port %d is not a port number", m.Port)
	}
	if m.Host != "" {
		return checkMQTTHost(m.Host)
	}
	return nil
}

func checkMQTTHost(host string) error {
	if host == "" || strings.ContainsAny(host, ":[]/ ") {
		return fmt.Errorf("MQTT host %q must be an IPv4 address or a DNS name: the firmware splits the endpoint at its first ':' and cannot dial IPv6 literals", host)
	}
	return nil
}

// mqttConfig is the `mqtt` object of the OTA answer. The firmware copies
// every string and number member into NVS namespace "mqtt" under the
// member's name (ota.cc), so names stay within NVS's 15 characters, and it
// never erases a key: every member is always sent with a value, so nothing
// stale survives from an earlier server. Its presence, even empty, puts
// the device on MQTT (application.cc: mqtt wins over websocket).
type mqttConfig struct {
	Endpoint     string `json:"endpoint"` // host:port, always with the port
	ClientID     string `json:"client_id"`
	Username     string `json:"username"`
	Password     string `json:"password"`
	PublishTopic string `json:"publish_topic"`
	Keepalive    int    `json:"keepalive"`
}

// mqttFor is the `mqtt` object for an admitted device that holds token,
// or nil when the device stays on WebSocket: the hub offers no MQTT, a
// person chose WebSocket for it, or the hub's host cannot be told to it.
// The login proves what a WebSocket connection proves: the client id
// carries the device id and its Client-Id, the password is its token.
func (s *Service) mqttFor(base *url.URL, c checkInfo, t Trust, token string) *mqttConfig {
	m := s.opts.MQTT
	if m == nil || t.Transport == hub.TransportWebSocket {
		return nil
	}
	host := m.Host
	if host == "" {
		host = base.Hostname()
		if err := checkMQTTHost(host); err != nil {
			s.log.Warn("device stays on WebSocket: set mqtt-public", "device", c.deviceID, "err", err)
			return nil
		}
	}
	return &mqttConfig{
		Endpoint:     net.JoinHostPort(host, strconv.Itoa(m.Port)),
		ClientID:     protocol.MQTTClientID(c.deviceID, c.clientID),
		Username:     c.deviceID,
		Password:     token,
		PublishTopic: protocol.UplinkTopic(c.deviceID),
		Keepalive:    m.Keepalive,
	}
}

// AuthorizeMQTT checks an MQTT CONNECT's login by the device-auth policy,
// as Authorize checks a WebSocket connection: the identity is the device
// id and Client-Id in the client id, the token is the password. Unlike a
// WebSocket connection it needs a valid token under every policy, "open"
// included: MQTT logins are only ever issued by the hub, and the broker's
// topics are confined by this identity. Refusals are EUNAUTHORIZED errors.
func (s *Service) AuthorizeMQTT(ctx context.Context, clientID, username, password, remote string) (protocol.Identity, error) {
	id, err := protocol.ParseMQTTLogin(clientID, username, password)
	if err != nil {
		return id, err
	}
	if s.opts.Policy != PolicyOpen {
		return id, s.check(ctx, id, remote, "mqtt")
	}
	for _, t := range s.opts.DeviceTokens { // configured tokens count under every policy
		if id.Token != "" && subtle.ConstantTimeCompare([]byte(t), []byte(id.Token)) == 1 {
			return id, nil
		}
	}
	s.mu.RLock()
	t := s.trust[id.DeviceID]
	s.mu.RUnlock()
	if !verifyToken(s.secret, id.DeviceID, id.ClientID, t.Generation, id.Token) {
		return id, hub.Errorf(hub.EUNAUTHORIZED, "the MQTT password of device %s is not its token from this hub: reboot the device so that it fetches its MQTT login from the OTA endpoint", id.DeviceID)
	}
	s.makeRoomFor(ctx, id.DeviceID)
	return id, nil
}

// SetTransport keeps a device on WebSocket (hub.TransportWebSocket) or
// lets it follow the hub's configuration (""). The device moves at its
// next OTA check, that is its next boot: the OTA answer then carries no
// `mqtt` object, and the firmware uses the `websocket` one.
func (s *Service) SetTransport(ctx context.Context, deviceID, transport string) (Trust, error) {
	switch transport {
	case "", "auto":
		transport = ""
	case hub.TransportWebSocket:
	default:
		return Trust{}, hub.Errorf(hub.EINVALID, "transport %q is not \"websocket\" or \"auto\"", transport)
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	t, err := s.knownTrust(deviceID)
	if err != nil {
		return Trust{}, err
	}
	t.DeviceID, t.Transport = deviceID, transport
	if err := s.opts.Store.SaveTrust(ctx, t); err != nil {
		return Trust{}, fmt.Errorf("set transport of %s: %w", deviceID, err)
	}
	s.mu.Lock()
	cur := s.trust[deviceID]
	cur.DeviceID, cur.Transport = deviceID, transport
	s.trust[deviceID] = cur
	s.mu.Unlock()
	s.log.Info("device transport set", "device", deviceID, "transport", transport)
	return cur, nil
}
