package hub

import (
	"encoding/json"
	"time"
)

// Trust is what the hub decided about one device and what the device last
// told the OTA endpoint, by Device-Id. It survives restarts.
type Trust struct {
	DeviceID string `json:"deviceId"`
	ClientID string `json:"clientId,omitempty"`
	// Generation binds the device's tokens: Revoke changes it, and tokens
	// signed for another generation are refused. 0 until the first revocation.
	Generation int64     `json:"-"`
	Approved   time.Time `json:"approved,omitzero"` // zero: not approved (or revoked since)
	Revoked    time.Time `json:"revoked,omitzero"`  // the last revocation
	// Transport is where the OTA answer sends the device: "" follows the
	// hub (MQTT when the hub offers it), TransportWebSocket keeps it on
	// WebSocket.
	Transport string `json:"transport,omitempty"`

	// Activation evidence as the device sent it. The HMAC cannot be checked
	// here: its key is burnt into the device's eFuse, known to the vendor.
	ActivationVersion int    `json:"activationVersion,omitempty"`
	SerialNumber      string `json:"serialNumber,omitempty"`
	ActivationHMAC    string `json:"activationHmac,omitempty"`

	// From the last OTA check: User-Agent board/version and the body.
	Board      string          `json:"board,omitempty"`
	Firmware   string          `json:"firmware,omitempty"`
	SystemInfo json.RawMessage `json:"systemInfo,omitempty"`
	LastCheck  time.Time       `json:"lastCheck,omitzero"`
}

// TransportWebSocket is the Trust.Transport that keeps a device on
// WebSocket when the hub offers MQTT.
const TransportWebSocket = "websocket"

// Activation is a code waiting for a person, as the API lists it.
type Activation struct {
	Code     string `json:"code"`
	DeviceID string `json:"deviceId"`
	ClientID string `json:"clientId,omitempty"`
	Board    string `json:"board,omitempty"`
	Firmware string `json:"firmware,omitempty"`
	Remote   string `json:"remoteAddr,omitempty"`
	// ActivationVersion 2 devices send their eFuse serial number and an
	// HMAC of the challenge; both are recorded, neither can be verified.
	ActivationVersion int       `json:"activationVersion"`
	SerialNumber      string    `json:"serialNumber,omitempty"`
	HMAC              string    `json:"hmac,omitempty"`
	Created           time.Time `json:"created"`
	Expires           time.Time `json:"expires"`
	LastCheck         time.Time `json:"lastCheck"`
	LastPoll          time.Time `json:"lastPoll,omitzero"` // last /activate
	// Rebind: the device id is bound to another Client-Id or serial
	// (BoundClientID). Approving this code binds it to this one: do so
	// only if the device was re-flashed and shows this code.
	Rebind        bool   `json:"rebind,omitempty"`
	BoundClientID string `json:"boundClientId,omitempty"`
}
