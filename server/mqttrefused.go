package server

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/internal/refusals"
	"github.com/xiaozhi-hub/hub/mqttbroker"
)

// mqttRefused logs a refused MQTT login, publish or subscription, and
// records it as an event of the device it names when the hub knows that
// device (an unknown name is only logged: strangers must not fill the
// event log). Both are limited per device and per source address by the
// hub's one internal/refusals.Reports, shared with WebSocket handshakes and
// OTA checks, on the embedded broker and behind an external one alike;
// every refusal is counted.
func (h *Hub) mqttRefused(log *slog.Logger, r mqttbroker.Refusal) {
	h.Metrics.Handshake("mqtt_refused")
	id := r.DeviceID
	if id == "" {
		if _, err := h.Registry.Device(hub.NormalizeDeviceID(r.Username)); err == nil {
			id = hub.NormalizeDeviceID(r.Username)
		}
	}
	keys := []string{refusals.Address(hub.SourceKey(r.Remote))}
	if id != "" {
		keys = append(keys, refusals.Device(id))
	}
	ok, skipped := h.refusals.Allow(time.Now(), keys...)
	if !ok {
		return
	}
	// Names and topics are the client's: up to 64 KiB each in MQTT.
	user, client, reason := hub.Truncate([]byte(r.Username), 100), hub.Truncate([]byte(r.ClientID), 200), hub.Truncate([]byte(r.Reason), 500)
	log.Warn("MQTT refused", "device", r.DeviceID, "username", user, "clientId", client,
		"remote", r.Remote, "reason", reason, "unreportedBefore", skipped)
	if id != "" {
		data := map[string]string{"where": "mqtt", "reason": reason, "clientId": client, "remoteAddr": hostOf(r.Remote)}
		if skipped > 0 {
			data["unreportedBefore"] = strconv.Itoa(skipped)
		}
		h.Registry.Record(hub.EventConnectionRefused, id, data)
	}
}
