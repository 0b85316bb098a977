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
