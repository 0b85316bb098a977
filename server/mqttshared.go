package server

import (
	"context"
	"time"

	"github.com/xiaozhi-hub/hub/mqttremote"
	"github.com/xiaozhi-hub/hub/protocol"
)

// The external broker's devices. Alone, this hub serves every device the
// broker reports. In a cluster every node hears every connect and gets
// any message through the shared subscription, but one node holds each
// device's session (package cluster, sharedbroker.go): a node serves the
// devices it owns and passes the others' messages to their holders.

// connected: the broker reports the device connected (or its message came
// first).
func (m *mqttSide) connected(d mqttremote.Device) {
	if m.shared != nil && m.shared.Owner(d.DeviceID) != m.shared.Name() {
		return // its owner serves it; this node links to it when it claims it
	}
	m.serve(d)
}

// serve starts the device's session on this node.
func (m *mqttSide) serve(d mqttremote.Device) {
	id, err := protocol.ParseMQTTLogin(d.ClientID, d.DeviceID, "")
	if err != nil {
		id = protocol.Identity{DeviceID: d.DeviceID, ProtocolVersion: 3}
	}
	m.link.Connected(id, "mqtt "+d.Remote, "")
}

// message routes a message the broker gave this node. One connection
// carries every device: a session that is behind loses the message
// rather than holding up the others (Offer).
func (m *mqttSide) message(id string, p []byte) {
	if m.shared == nil || m.link.Holds(id) {
		m.link.Offer(id, p)
		return
	}
	to := m.shared.Holder(id)
	if to == "" {
		to = m.shared.Owner(id)
	}
	if to == m.shared.Name() {
		m.passed(id, p)
		return
	}
	m.passedOut.Add(1)
	if err := m.shared.Pass(to, id, p); err != nil {
		m.log.Warn("could not pass a device's MQTT message to the hub node holding it", "device", id, "node", to, "err", err)
	}
}

// passedHere takes a message another node passed to this one.
func (m *mqttSide) passedHere(id string, p []byte) {
	m.passedIn.Add(1)
	m.passed(id, p)
}

// passed takes a device message for this node (from the broker or another
// node): the device's session gets it, starting first if this node is the
// one to hold it.
func (m *mqttSide) passed(id string, p []byte) {
	if !m.link.Holds(id) {
		holder := m.shared.Holder(id)
		if holder != "" && holder != m.shared.Name() || holder == "" && m.shared.Owner(id) != m.shared.Name() {
			m.log.Debug("a passed MQTT message for a device another node holds dropped", "device", id)
			return
		}
		d, ok := m.remote.Reopen(id)
		if !ok {
			d = mqttremote.Device{DeviceID: id}
		}
		m.serve(d)
	}
	m.link.Offer(id, p)
}

// released: the node holding the device released it or died. If the
// device is still at the broker, the owner among the nodes alive takes it
// over (rebalance).
func (m *mqttSide) released(id, transport string) {
	if transport != "mqtt" {
		return
	}
	m.remote.Reopen(id) // this node's session may have ended when the other took it
	signalNow(m.rebalanceNow)
}

// rebalance serves every device at the broker that no node holds and
// this node owns, when told that holders or nodes changed and every
// 10 s (a missed event costs a device no more than that).
func (m *mqttSide) rebalance(ctx context.Context) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-m.rebalanceNow:
		}
		me := m.shared.Name()
		for _, d := range m.remote.Devices() {
			if ctx.Err() == nil && !m.link.Holds(d.DeviceID) && m.shared.Holder(d.DeviceID) == "" && m.shared.Owner(d.DeviceID) == me {
				m.log.Info("serving an MQTT device no hub node holds", "device", d.DeviceID)
				m.serve(d)
			}
		}
	}
}

func signalNow(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
