package server

import (
	"context"

	"github.com/xiaozhi-hub/hub/mqttudp"
)

// The MQTT+UDP transport (mqtt-listen or mqtt-broker) is package
// mqttudp's; these steps of Open bind it, wire it to the hub once the OTA
// service (told the broker's port by Offer) and the device endpoint exist,
// and serve it.

// bindMQTT binds the broker (or prepares the external broker's client) and
// the UDP socket.
func (h *Hub) bindMQTT(context.Context) error {
	a, on, _ := h.cfg.MQTT() // checked by Validate
	if !on {
		return nil
	}
	opts := mqttudp.Options{
		Settings: a, UDPSessionsPerAddress: h.cfg.UDPSessionsPerAddress,
		Refusals: h.refusals, Devices: h.Registry, Metrics: h.Metrics, Logger: h.log.With("component", "mqtt"),
	}
	if c := h.cluster; c != nil { // an external broker is shared by the nodes
		opts.Nodes = c.Node
	}
	t, err := mqttudp.Bind(opts)
	if err != nil {
		return err
	}
	h.mqtt = t
	h.closers.pushf(t.Stop) // releases the sockets if Open fails before wireMQTT
	return nil
}

// wireMQTT serves the transport's devices as sessions of the device
// endpoint, their logins checked by the device-auth policy.
func (h *Hub) wireMQTT(context.Context) error {
	if h.mqtt == nil {
		return nil
	}
	if err := h.mqtt.Wire(h.trust, h.devices); err != nil {
		return err
	}
	// Again, now after the device endpoint: MQTT devices go offline with
	// the broker ("the hub is shutting down") before it closes.
	h.closers.pushf(h.mqtt.Stop)
	return nil
}

// startMQTT serves the broker and the UDP socket until Close.
func (h *Hub) startMQTT(context.Context) error {
	if h.mqtt == nil {
		return nil
	}
	return h.mqtt.Start()
}
