package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// MQTT is the MQTT+UDP settings, resolved: where to listen and what to
// tell devices.
type MQTT struct {
	Listen, UDPListen string   // UDPListen "": mqtt-listen's host and bound port
	PublicHost        string   // "": derived per device (OTA request, MQTT connection)
	PublicPort        int      // 0: mqtt-listen's port once bound
	UDPHost           string   // "": the address the device's MQTT connection reached
	UDPPort           int      // 0: udp-listen's port once bound
	TLS               bool     // devices use TLS (they do exactly on port 8883)
	TLSCert, TLSKey   string   // files (mqtt-tls-cert, mqtt-tls-key)
	Broker            *url.URL // mqtt-broker: an external broker instead of the embedded one
	MaxPending        int      // mqtt-max-pending (0: the broker's default)
	PendingPerAddr    int      // mqtt-pending-per-address (0: the broker's default)
	BrokerSecret      string   // mqtt-broker-secret
}

// MQTT resolves the MQTT settings; ok is false when MQTT is off.
func (c Config) MQTT() (a MQTT, ok bool, err error) {
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
	a.Listen = c.MQTTListen
	if c.MQTTMaxPending < 0 || c.MQTTPendingPerAddress < 0 {
		return a, true, errors.New("mqtt-max-pending and mqtt-pending-per-address: must be at least 1")
	}
	a.MaxPending, a.PendingPerAddr = c.MQTTMaxPending, c.MQTTPendingPerAddress
	_, port, err := splitPort("mqtt-listen", c.MQTTListen, true)
	if err != nil {
		return a, true, err
	}
	a.UDPListen = c.UDPListen
	if a.UDPListen != "" {
		if _, a.UDPPort, err = splitPort("udp-listen", a.UDPListen, true); err != nil {
			return a, true, err
		}
	}
	a.PublicPort = port
	if c.MQTTPublic != "" {
		if a.PublicHost, a.PublicPort, err = publicHostPort("mqtt-public", c.MQTTPublic); err != nil {
			return a, true, err
		}
	}
	if c.UDPPublic != "" {
		if a.UDPHost, a.UDPPort, err = publicHostPort("udp-public", c.UDPPublic); err != nil {
			return a, true, err
		}
	}
	a.TLS = c.MQTTTLSCert != ""
	a.TLSCert, a.TLSKey = c.MQTTTLSCert, c.MQTTTLSKey
	if a.TLS != (c.MQTTTLSKey != "") {
		return a, true, errors.New("mqtt-tls-cert and mqtt-tls-key go together")
	}
	// The firmware (esp-ml307) uses TLS exactly when the port is 8883.
	if a.TLS && a.PublicPort != 8883 {
		return a, true, fmt.Errorf("mqtt-tls-cert: devices use TLS only on port 8883, but they are told port %d (mqtt-public or mqtt-listen)", a.PublicPort)
	}
	if !a.TLS && a.PublicPort == 8883 {
		return a, true, errors.New("mqtt-listen/mqtt-public: devices use TLS on port 8883; set mqtt-tls-cert and mqtt-tls-key, or use another port such as 1883")
	}
	return a, true, nil
}

func (c Config) validateMQTT() []error {
	var errs []error
	if _, _, err := c.MQTT(); err != nil {
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
func (c Config) externalBroker() (a MQTT, ok bool, err error) {
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
	a.Broker, a.BrokerSecret = u, c.MQTTBrokerSecret
	if a.PublicHost, a.PublicPort, err = publicHostPort("mqtt-public", c.MQTTPublic); err != nil {
		return a, true, err
	}
	if a.UDPHost, a.UDPPort, err = publicHostPort("udp-public", c.UDPPublic); err != nil {
		return a, true, err
	}
	a.UDPListen = c.UDPListen
	if a.UDPListen == "" {
		a.UDPListen = ":" + strconv.Itoa(a.UDPPort)
	}
	a.TLS = a.PublicPort == 8883
	return a, true, nil
}

// TLSConfig loads mqtt-tls-cert and mqtt-tls-key for the embedded broker;
// nil without TLS.
func (a MQTT) TLSConfig() (*tls.Config, error) {
	if !a.TLS {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("mqtt-tls-cert/mqtt-tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
