package protocol

import (
	"encoding/json"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// MQTT naming, as the hub assigns it to devices on the MQTT+UDP transport
// (docs/protocol.md §4). The device publishes everything to its own uplink
// topic (given to it as publish_topic) and never subscribes; the broker
// subscribes it, server side, to its downlink topic. The firmware ignores
// the topic of what it receives. Per-device topics also work with an
// external broker (EMQX auto-subscribe), where a shared publish topic would
// lose the sender.
func UplinkTopic(deviceID string) string   { return "xz/up/" + deviceID }
func DownlinkTopic(deviceID string) string { return "xz/down/" + deviceID }

// mqttClientPrefix follows the official gateway's GID_<group>@@@<mac_>@@@<uuid>.
const mqttClientPrefix = "GID_xzhub@@@"

// MQTTClientID is the MQTT client id the hub gives a device: it carries
// the device id and the Client-Id the device presented at its OTA check, so
// that the MQTT login proves the same identity as a WebSocket connection
// (Device-Id, Client-Id and the token, which is the MQTT password).
func MQTTClientID(deviceID, clientID string) string {
	return mqttClientPrefix + strings.ReplaceAll(deviceID, ":", "_") + "@@@" + clientID
}

// ParseMQTTLogin turns an MQTT CONNECT's client id, username and password
// into the identity they claim: the username is the device id, which the
// client id must repeat; the client id carries the Client-Id; the password
// is the device token. The claim is checked by the device-auth policy like
// a WebSocket connection's headers.
func ParseMQTTLogin(clientID, username, password string) (Identity, error) {
	rest, ok := strings.CutPrefix(clientID, mqttClientPrefix)
	if !ok {
		return Identity{}, hub.Errorf(hub.EUNAUTHORIZED, "MQTT client id %q was not issued by this hub (it starts with %s): reboot the device so that it fetches its MQTT login from the hub's OTA endpoint",
			hub.Truncate([]byte(clientID), 80), mqttClientPrefix)
	}
	mac, cid, ok := strings.Cut(rest, "@@@")
	if err := checkDeviceID(username); err != nil || username == "" {
		return Identity{}, hub.Errorf(hub.EUNAUTHORIZED, "MQTT username %q is not a device id", hub.Truncate([]byte(username), 80))
	}
	if !ok || mac != strings.ReplaceAll(username, ":", "_") {
		return Identity{}, hub.Errorf(hub.EUNAUTHORIZED, "MQTT client id %q is not the one issued to device %s", hub.Truncate([]byte(clientID), 80), username)
	}
	if len(cid) > 128 {
		return Identity{}, hub.Errorf(hub.EUNAUTHORIZED, "the Client-Id in MQTT client id is longer than 128 characters")
	}
	return Identity{DeviceID: hub.NormalizeDeviceID(username), ClientID: cid, Token: password, ProtocolVersion: 3}, nil
}

// MQTTIdentity is the identity of a device whose MQTT login the broker has
// checked (ParseMQTTLogin through the device-auth policy): its device id
// and the Client-Id its client id carries, or the device id alone.
func MQTTIdentity(clientID, deviceID string) Identity {
	id, err := ParseMQTTLogin(clientID, deviceID, "")
	if err != nil {
		return Identity{DeviceID: deviceID, ProtocolVersion: 3}
	}
	return id
}

// Goodbye is the server's goodbye, which ends a conversation on MQTT+UDP.
// The firmware (2.3 and later) acts on it only when session_id is exactly
// the current session's (docs/protocol.md §4).
func Goodbye(sessionID string) []byte {
	b, _ := json.Marshal(struct {
		Type      string `json:"type"`
		SessionID string `json:"session_id"`
	}{TypeGoodbye, sessionID})
	return b
}
