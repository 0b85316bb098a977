package mqttbroker

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/refusals"
)

// Devices is what a refusal report needs of the hub's devices (the
// registry): whether the named device is known, and its event log.
type Devices interface {
	Device(id string) (hub.Device, error)
	Record(typ, deviceID string, data any)
}

// Reporter logs a refused MQTT login, publish or subscription, and records
// it as a connection_refused event of the device it names when the hub
// knows that device (an unknown name is only logged: strangers must not
// fill the event log). Both are limited per device and per source address
// by reports, which the hub shares with WebSocket handshakes and OTA
// checks; the embedded broker (Config.OnRefused) and an external broker's
// authenticator report alike.
type Reporter struct {
	Reports *refusals.Reports
	Devices Devices
	Log     *slog.Logger
}

// Report reports r, if its device's and its address's allowance let it.
func (p Reporter) Report(r Refusal) {
	id := r.DeviceID
	if id == "" {
		if _, err := p.Devices.Device(hub.NormalizeDeviceID(r.Username)); err == nil {
			id = hub.NormalizeDeviceID(r.Username)
		}
	}
	keys := []string{refusals.Address(hub.SourceKey(r.Remote))}
	if id != "" {
		keys = append(keys, refusals.Device(id))
	}
	ok, skipped := p.Reports.Allow(time.Now(), keys...)
	if !ok {
		return
	}
	// Names and topics are the client's: up to 64 KiB each in MQTT.
	user, client, reason := hub.Truncate([]byte(r.Username), 100), hub.Truncate([]byte(r.ClientID), 200), hub.Truncate([]byte(r.Reason), 500)
	p.Log.Warn("MQTT refused", "device", r.DeviceID, "username", user, "clientId", client,
		"remote", r.Remote, "reason", reason, "unreportedBefore", skipped)
	if id != "" {
		data := map[string]string{"where": "mqtt", "reason": reason, "clientId": client, "remoteAddr": hub.Host(r.Remote)}
		if skipped > 0 {
			data["unreportedBefore"] = strconv.Itoa(skipped)
		}
		p.Devices.Record(hub.EventConnectionRefused, id, data)
	}
}
