package mqttbroker

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"strconv"
	"strings"

	hub "github.com/xiaozhi-hub/hub"
)

// Topics. The device publishes everything to its own uplink topic (given
// to it as publish_topic) and never subscribes; the broker subscribes it,
// server side, to its downlink topic. The firmware ignores the topic of
// what it receives; per-device topics keep working with an external broker
// (EMQX auto-subscribe), where a shared publish topic would lose the sender.
func UplinkTopic(deviceID string) string   { return "xz/up/" + deviceID }
func DownlinkTopic(deviceID string) string { return "xz/down/" + deviceID }

// clientIDPrefix follows the official gateway's GID_<group>@@@<mac_>@@@<x>
// shape; the last part is the credential generation.
const clientIDPrefix = "GID_xzhub@@@"

// Credentials are one device's MQTT login.
type Credentials struct {
	ClientID string
	Username string // the device id
	Password string
}

// checkTopicSafe keeps a device id usable as an MQTT topic level and inside
// the client id: no separators or wildcards, nothing outside the hub's
// device-id alphabet.
func checkTopicSafe(deviceID string) error {
	if deviceID == "" || len(deviceID) > 64 {
		return hub.Errorf(hub.EINVALID, "device id %q must be 1 to 64 characters for MQTT", deviceID)
	}
	for _, c := range deviceID {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(":._-", c)) {
			return hub.Errorf(hub.EINVALID, "device id %q may contain only letters, digits and : . _ - for MQTT", deviceID)
		}
	}
	return nil
}

// Issue derives a device's MQTT credentials from the hub's secret (the
// device-token secret; the domain string keeps the two MACs apart).
// password = base64url(HMAC-SHA256(secret, "xiaozhi-hub mqtt password\0" +
// client_id + "\0" + username)), so a password is valid only with the
// client id and username it was issued with. Raising generation (token
// revocation) gives new credentials; Verify reports it for the caller to
// compare with the device's current one.
func Issue(secret []byte, deviceID string, generation int64) (Credentials, error) {
	if err := checkTopicSafe(deviceID); err != nil {
		return Credentials{}, err
	}
	clientID := clientIDPrefix + strings.ReplaceAll(deviceID, ":", "_") + "@@@" + strconv.FormatInt(generation, 10)
	return Credentials{ClientID: clientID, Username: deviceID, Password: password(secret, clientID, deviceID)}, nil
}

func password(secret []byte, clientID, username string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("xiaozhi-hub mqtt password\x00" + clientID + "\x00" + username))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a CONNECT's credentials in constant time and returns the
// device id and credential generation they were issued for. The client id
// must be the one issued with the username, so one device's password does
// not open a session under another device's client id.
func Verify(secret []byte, clientID, username, pass string) (deviceID string, generation int64, ok bool) {
	rest, found := strings.CutPrefix(clientID, clientIDPrefix)
	if !found || checkTopicSafe(username) != nil {
		return "", 0, false
	}
	mac, gen, found := strings.Cut(rest, "@@@")
	if !found || mac != strings.ReplaceAll(username, ":", "_") {
		return "", 0, false
	}
	generation, err := strconv.ParseInt(gen, 10, 64)
	if err != nil || strconv.FormatInt(generation, 10) != gen {
		return "", 0, false
	}
	if !hmac.Equal([]byte(pass), []byte(password(secret, clientID, username))) {
		return "", 0, false
	}
	return username, generation, true
}

// OTA is the `mqtt` object of the OTA answer. The firmware copies every
// string and number member into NVS namespace "mqtt" under the member's
// name (ota.cc), so names stay within NVS's 15 characters, and it never
// erases a key: every member is always sent with a value, so nothing stale
// survives from an earlier server. The firmware reads endpoint, client_id,
// username, password, keepalive and publish_topic (mqtt_protocol.cc).
type OTA struct {
	Endpoint     string `json:"endpoint"`
	ClientID     string `json:"client_id"`
	Username     string `json:"username"`
	Password     string `json:"password"`
	PublishTopic string `json:"publish_topic"`
	Keepalive    int    `json:"keepalive"`
}

// DefaultKeepalive is the firmware's default MQTT keepalive, in seconds.
const DefaultKeepalive = 240

// NewOTA returns the `mqtt` object for a device. endpoint is host:port as
// the device must dial it; the firmware uses TLS exactly when the port is
// 8883 (checked against the ESP-IDF CA bundle), so tls must agree with the
// port. keepalive 0 means DefaultKeepalive.
func NewOTA(endpoint string, tls bool, keepalive int, c Credentials) (OTA, error) {
	if err := checkEndpoint(endpoint, tls); err != nil {
		return OTA{}, err
	}
	if keepalive == 0 {
		keepalive = DefaultKeepalive
	}
	if keepalive < 10 || keepalive > 3600 {
		return OTA{}, hub.Errorf(hub.EINVALID, "MQTT keepalive %d s is outside 10..3600", keepalive)
	}
	return OTA{
		Endpoint:     endpoint,
		ClientID:     c.ClientID,
		Username:     c.Username,
		Password:     c.Password,
		PublishTopic: UplinkTopic(c.Username),
		Keepalive:    keepalive,
	}, nil
}

// checkEndpoint applies the firmware's parsing (mqtt_protocol.cc
// StartMqttClient): it splits at the first ':' and std::stoi's the rest,
// a missing port means 8883 (TLS), and esp-ml307 uses TLS exactly on 8883.
func checkEndpoint(endpoint string, tls bool) error {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil || host == "" || strings.ContainsAny(host, ":[]") {
		return hub.Errorf(hub.EINVALID, "MQTT endpoint %q must be host:port with an IPv4 address or DNS name and an explicit port (the firmware cannot parse IPv6 literals and assumes TLS on 8883 without a port)", endpoint)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return hub.Errorf(hub.EINVALID, "MQTT endpoint %q has no valid port number", endpoint)
	}
	if tls != (n == 8883) {
		return hub.Errorf(hub.EINVALID, "MQTT endpoint %q: the firmware uses TLS exactly when the port is 8883; use port 8883 for the TLS listener and any other port for plain TCP", endpoint)
	}
	return nil
}
