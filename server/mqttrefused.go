package server

import (
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/mqttbroker"
	"golang.org/x/time/rate"
)

// Refusal reports are limited per device named and per source address:
// the first refusalBurst, then one every refusalEvery. Refusals cost an
// attacker nothing (a login naming a device's MAC address needs no
// credentials), so without a limit they would replace a device's whole
// event history and fill the log; the reports that are let through say how
// many were left out since, and xiaozhi_hub_mqtt_refusals_unreported_total
// counts them.
const (
	refusalBurst   = 10
	refusalEvery   = 5 * time.Minute
	maxRefusalKeys = 10_000 // devices and addresses remembered
)

var mqttUnreportedDesc = prometheus.NewDesc("xiaozhi_hub_mqtt_refusals_unreported_total",
	"MQTT refusals neither logged nor recorded as events, because the device they name or their source address was over its limit (10, then one every 5 minutes).", nil, nil)

// refusalReports decides which refusals are logged and recorded. The zero
// value is ready.
type refusalReports struct {
	unreported atomic.Uint64

	mu   sync.Mutex
	keys map[string]*reportBucket
}

type reportBucket struct {
	lim     *rate.Limiter
	skipped int // refusals left out since the last report
}

// allow reports whether a refusal counted under every one of keys may be
// reported at now, and how many under them were left out since their last
// report. A refusal left out takes nothing from any key's allowance.
func (r *refusalReports) allow(now time.Time, keys ...string) (ok bool, skipped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = make(map[string]*reportBucket)
	}
	buckets := make([]*reportBucket, len(keys))
	ok = true
	for i, k := range keys {
		b := r.keys[k]
		if b == nil {
			if len(r.keys) >= maxRefusalKeys {
				r.sweepLocked(now)
			}
			b = &reportBucket{lim: rate.NewLimiter(rate.Every(refusalEvery), refusalBurst)}
			r.keys[k] = b
		}
		buckets[i] = b
		ok = ok && b.lim.TokensAt(now) >= 1
	}
	for _, b := range buckets {
		if !ok {
			b.skipped++
			continue
		}
		b.lim.AllowN(now, 1)
		skipped = max(skipped, b.skipped)
		b.skipped = 0
	}
	if !ok {
		r.unreported.Add(1)
	}
	return ok, skipped
}

// sweepLocked forgets keys whose allowance is whole again (they are no
// different from new ones); if every key is still busy, it forgets them
// all rather than grow.
func (r *refusalReports) sweepLocked(now time.Time) {
	for k, b := range r.keys {
		if b.lim.TokensAt(now) >= refusalBurst {
			delete(r.keys, k)
		}
	}
	if len(r.keys) >= maxRefusalKeys {
		clear(r.keys)
	}
}

// mqttRefused logs a refused MQTT login, publish or subscription, and
// records it as an event of the device it names when the hub knows that
// device (an unknown name is only logged: strangers must not fill the
// event log). Both are limited per device and per source address
// (refusalReports), on the embedded broker and behind an external one
// alike; every refusal is counted.
func (h *Hub) mqttRefused(m *mqttSide, log *slog.Logger, r mqttbroker.Refusal) {
	h.Metrics.Handshake("mqtt_refused")
	id := r.DeviceID
	if id == "" {
		if _, err := h.Registry.Device(hub.NormalizeDeviceID(r.Username)); err == nil {
			id = hub.NormalizeDeviceID(r.Username)
		}
	}
	keys := []string{"address " + mqttbroker.SourceKey(r.Remote)}
	if id != "" {
		keys = append(keys, "device "+id)
	}
	ok, skipped := m.reports.allow(time.Now(), keys...)
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
