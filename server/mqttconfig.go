package server

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// mqttAddrs are the MQTT+UDP settings, resolved: where to listen and what
// to tell devices.
type mqttAddrs struct {
	listen, udpListen  string // udpListen "": mqtt-listen's host and bound port
	publicHost         string // "": derived per device (OTA request, MQTT connection)
	publicPort         int    // 0: mqtt-listen's port once bound
	udpHost            string // "": the address the device's MQTT connection reached
	udpPort            int    // 0: udp-listen's port once bound
	tls                bool
	tlsCert, tlsKeyPEM string
	broker             *url.URL // mqtt-broker: an external broker instead of the embedded one
	maxPending         int      // mqtt-max-pending (0: the broker's default)
	pendingPerAddr     int      // mqtt-pending-per-address (0: the broker's default)
	brokerSecret       string
}

// mqttSettings resolves the MQTT settings; ok is false when MQTT is off.
func (c Config) mqttSettings() (a mqttAddrs, ok bool, err error) {
	if c.MQTTBroker != "" {
		return c.externalBroker()
	}
	if c.MQTTBrokerSecret != "" {
		return a, false, errors.New("mqtt-broker-secret needs mqtt-broker")
	}
	if c.MQTTListen == "" {
		if c.UDPListen != "" || c.MQTTPublic != "" || c.UDPPublic != "" || c.MQTTTLSCert != "" {
			return a, false, errors.New("udp-listen, mqtt-public, udp-public and mqtt-tls-cert need mqtt-listen")
		}
		return a, false, nil
	}
	a.listen = c.MQTTListen
	if c.MQTTMaxPending < 0 || c.MQTTPendingPerAddress < 0 {
		return a, true, errors.New("mqtt-max-pending and mqtt-pending-per-address: must be at least 1")
	}
	a.maxPending, a.pendingPerAddr = c.MQTTMaxPending, c.MQTTPendingPerAddress
	_, port, err := splitPort("mqtt-listen", c.MQTTListen, true)
	if err != nil {
		return a, true, err
	}
	a.udpListen = c.UDPListen
	if a.udpListen != "" {
		if _, a.udpPort, err = splitPort("udp-listen", a.udpListen, true); err != nil {
			return a, true, err
		}
	}
	a.publicPort = port
	if c.MQTTPublic != "" {
		if a.publicHost, a.publicPort, err = publicHostPort("mqtt-public", c.MQTTPublic); err != nil {
			return a, true, err
		}
	}
	if c.UDPPublic != "" {
		if a.udpHost, a.udpPort, err = publicHostPort("udp-public", c.UDPPublic); err != nil {
			return a, true, err
		}
	}
	a.tls = c.MQTTTLSCert != ""
	a.tlsCert, a.tlsKeyPEM = c.MQTTTLSCert, c.MQTTTLSKey
	if a.tls != (c.MQTTTLSKey != "") {
		return a, true, errors.New("mqtt-tls-cert and mqtt-tls-key go together")
	}
	// The firmware (esp-ml307) uses TLS exactly when the port is 8883.
	if a.tls && a.publicPort != 8883 {
		return a, true, fmt.Errorf("mqtt-tls-cert: devices use TLS only on port 8883, but they are told port %d (mqtt-public or mqtt-listen)", a.publicPort)
	}
	if !a.tls && a.publicPort == 8883 {
		return a, true, errors.New("mqtt-listen/mqtt-public: devices use TLS on port 8883; set mqtt-tls-cert and mqtt-tls-key, or use another port such as 1883")
	}
	return a, true, nil
}

func (c Config) validateMQTT() []error {
	var errs []error
	if _, _, err := c.mqttSettings(); err != nil {
		errs = append(errs, err)
	}
	if c.UDPSessionsPerAddress < 0 || c.UDPSessionsPerAddress > maxUDPSessions {
		errs = append(errs, fmt.Errorf("udp-sessions-per-address: %d is outside 1..%d (the UDP audio channels open at once on a hub)", c.UDPSessionsPerAddress, maxUDPSessions))
	}
	return errs
}

// maxUDPSessions is the UDP audio server's table (udpaudio's default
// MaxSessions).
const maxUDPSessions = 4096

// splitPort checks a host:port listen address.
func splitPort(key, addr string, allowZero bool) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(p)
	if err != nil || perr != nil || n < 0 || n > 65535 || (n == 0 && !allowZero) {
		return "", 0, fmt.Errorf("%s: %q must be host:port, e.g. :1883 or 0.0.0.0:1883", key, addr)
	}
	return host, n, nil
}

// publicHostPort checks an address devices are told: an IPv4 address or
// a DNS name (the firmware splits at the first ':'), and a port.
func publicHostPort(key, addr string) (string, int, error) {
	host, port, err := splitPort(key, addr, false)
	if err != nil {
		return "", 0, err
	}
	if host == "" || strings.ContainsAny(host, ":[]/ ") {
		return "", 0, fmt.Errorf("%s: %q must name an IPv4 address or DNS name devices can reach, with a port (the firmware cannot use IPv6 literals)", key, addr)
	}
	return host, port, nil
}

// externalBroker resolves the settings of an external broker (EMQX): the
// hub cannot learn the broker's or its own public addresses from it, so
// mqtt-public and udp-public are required.
func (c Config) externalBroker() (a mqttAddrs, ok bool, err error) {
	u, err := url.Parse(c.MQTTBroker)
	if err != nil || u.Host == "" || (u.Scheme != "mqtt" && u.Scheme != "tls") {
		return a, true, fmt.Errorf("mqtt-broker: %q must be mqtt://user:password@host:1883 or tls://…", c.MQTTBroker)
	}
	if c.MQTTListen != "" || c.MQTTTLSCert != "" {
		return a, true, errors.New("mqtt-broker and mqtt-listen (or mqtt-tls-cert) exclude each other: the hub uses an external broker or runs its own")
	}
	if len(c.MQTTBrokerSecret) < 16 {
		return a, true, errors.New("mqtt-broker-secret: at least 16 characters; the broker sends it when it asks the hub to check a device's login (docs/emqx.md)")
	}
	if c.MQTTPublic == "" || c.UDPPublic == "" {
		return a, true, errors.New("mqtt-broker needs mqtt-public (the broker's host:port as devices dial it) and udp-public (this hub's UDP audio address)")
	}
	a.broker, a.brokerSecret = u, c.MQTTBrokerSecret
	if a.publicHost, a.publicPort, err = publicHostPort("mqtt-public", c.MQTTPublic); err != nil {
		return a, true, err
	}
	if a.udpHost, a.udpPort, err = publicHostPort("udp-public", c.UDPPublic); err != nil {
		return a, true, err
	}
	a.udpListen = c.UDPListen
	if a.udpListen == "" {
		a.udpListen = ":" + strconv.Itoa(a.udpPort)
	}
	a.tls = a.publicPort == 8883
	return a, true, nil
}
