package mqttudp

// register exports the link's, the UDP server's, the broker's (or the
// external broker's client's) and, in a cluster, the router's counts.
func (t *Transport) register() {
	m := t.opts.Metrics
	m.Gauge("xiaozhi_hub_mqtt_devices", "Devices with an MQTT session (online while idle).", func() float64 { return float64(t.link.Devices()) })
	m.Gauge("xiaozhi_hub_udp_sessions", "Open UDP audio channels (conversations of MQTT devices).", func() float64 { return float64(t.audio.Sessions()) })
	m.CounterFunc("xiaozhi_hub_udp_sessions_reclaimed_total", "UDP audio channels ended to make room for a new conversation (the table, or the MQTT address's udp-sessions-per-address, was full).",
		func() float64 { return float64(t.audio.Stats().Reclaimed) })
	m.CountersFunc("xiaozhi_hub_mqtt_dropped_total", "MQTT messages and connections the broker refused or dropped, by reason.", "reason", t.dropped)
	if t.router != nil && t.opts.Nodes != nil {
		m.CountersFunc("xiaozhi_hub_mqtt_passed_total", "Device messages the shared broker gave this node that were passed to the node holding the device (out), and passed here by others (in).", "direction", func() map[string]uint64 {
			out, in := t.router.Passed()
			return map[string]uint64{"out": out, "in": in}
		})
	}
	m.CountersFunc("xiaozhi_hub_udp_datagrams_total", "UDP audio datagrams by outcome (received, accepted, sent, or the rule that dropped them).", "outcome", func() map[string]uint64 {
		u := t.audio.Stats()
		return map[string]uint64{"received": u.Received, "accepted": u.Accepted, "sent": u.Sent,
			"dropped_flood": u.DroppedFlood, "dropped_shape": u.DroppedShape, "dropped_unknown_session": u.DroppedUnknown,
			"dropped_address": u.DroppedAddr, "dropped_flags": u.DroppedFlags, "dropped_old_sequence": u.DroppedOld,
			"dropped_queue_full": u.DroppedQueue, "dropped_too_long": u.DroppedLong, "dropped_sequence_jump": u.DroppedJump}
	})
}

// dropped is xiaozhi_hub_mqtt_dropped_total by reason. write_failed
// (formerly send_queue_full, from when downlink messages were queued)
// counts messages to a device not written because its connection failed
// or took over the broker's write timeout (docs/operations.md).
func (t *Transport) dropped() map[string]uint64 {
	if t.router != nil {
		r := t.router.Client().Stats()
		return map[string]uint64{"oversized": r.Oversized, "not_json": r.NotJSON, "foreign_topic": r.Foreign}
	}
	b := t.broker.Stats()
	return map[string]uint64{"oversized": b.Oversized, "not_json": b.NotJSON, "refused": b.Refused,
		"over_connection_limit": b.OverLimit, "over_pending_limit": b.OverPending, "disconnected_for_refusals": b.StruckOut,
		"login_throttled": b.Throttled, "write_failed": b.SendDropped, "rate_limited": b.RateLimited}
}
