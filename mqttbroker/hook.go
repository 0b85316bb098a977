package mqttbroker

import (
	"bytes"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	hub "github.com/xiaozhi-hub/hub"
	"golang.org/x/time/rate"
)

// hook is the broker's policy, as mochi hooks.
type hook struct {
	mqtt.HookBase
	b *Broker
}

func (h *hook) ID() string { return "xiaozhi-hub" }

func (h *hook) Provides(b byte) bool {
	return bytes.Contains([]byte{
		mqtt.OnConnect, mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnSessionEstablished,
		mqtt.OnDisconnect, mqtt.OnPublish,
	}, []byte{b})
}

// OnConnect bounds the keepalive (0, never expire, or a huge value would
// keep a dead connection forever), asks the hub who the credentials belong
// to, and refuses a Last Will. A refusal here answers CONNACK itself:
// mochi's own answer to a failed authentication knows only "bad username
// or password".
//
// A will is a message the broker publishes on the client's behalf when
// the connection ends without DISCONNECT (or when the hub closes it), and
// mochi publishes it without asking OnACLCheck: a will on another
// device's downlink topic would reach that device as if the hub sent it.
// The firmware never sets one (docs/protocol.md §4), so a CONNECT with the
// Will flag is refused as not authorized, as Mosquitto refuses a will
// whose topic its ACL denies.
func (h *hook) OnConnect(cl *mqtt.Client, pk packets.Packet) error {
	if max := h.b.cfg.MaxKeepalive; cl.State.Keepalive == 0 || cl.State.Keepalive > max {
		cl.State.Keepalive = max
	}
	source := hub.SourceKey(cl.Net.Remote)
	if !h.b.failures.ok(source) {
		h.b.loginThrottled.Add(1)
		return h.b.refuseConnect(cl, packets.ErrConnectionRateExceeded)
	}
	user := string(pk.Connect.Username)
	id, err := h.b.cfg.Authenticate(cl.ID, user, string(pk.Connect.Password), cl.Net.Remote)
	if err != nil {
		h.b.failures.take(source)
		h.b.refuse(cl, user, "", hub.ErrorMessage(err))
		return h.b.refuseConnect(cl, packets.ErrBadUsernameOrPassword)
	}
	if err := checkTopicSafe(id); err != nil {
		h.b.failures.take(source)
		h.b.refuse(cl, user, id, err.Error())
		return h.b.refuseConnect(cl, packets.ErrBadUsernameOrPassword)
	}
	if pk.Connect.WillFlag {
		h.b.failures.take(source)
		h.b.refuse(cl, user, id, ReasonWill)
		return h.b.refuseConnect(cl, packets.ErrNotAuthorized)
	}
	h.b.mu.Lock()
	d := &device{id: id, cl: cl}
	if r := h.b.cfg.MessageRate; r > 0 {
		d.messages = rate.NewLimiter(rate.Limit(r), h.b.cfg.MessageBurst)
	}
	h.b.byConn[cl.Net.Conn] = d
	h.b.mu.Unlock()
	h.b.ln.loggedIn(cl.Net.Conn)
	return nil
}

// OnConnectAuthenticate admits the connections OnConnect authenticated.
func (h *hook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	return h.b.lookup(cl) != nil
}

// OnACLCheck confines a device to publishing on its uplink topic and to
// receiving on its downlink topic. mochi checks delivery too, as a read.
func (h *hook) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	d := h.b.lookup(cl)
	if d == nil {
		return false
	}
	if write && topic == UplinkTopic(d.id) || !write && topic == DownlinkTopic(d.id) {
		return true
	}
	what := "subscribe to"
	if write {
		what = "publish to"
	}
	h.b.refuse(cl, d.id, d.id, what+" foreign topic "+topic)
	h.b.strike(cl, d, packets.ErrNotAuthorized, what+" foreign topics")
	return false
}

// OnSessionEstablished reports the device connected, replacing an older
// connection of the same device. The device never subscribes: the hub
// writes to its connection directly on its downlink topic (Publish), so it
// is in no topic index.
func (h *hook) OnSessionEstablished(cl *mqtt.Client, pk packets.Packet) {
	d := h.b.lookup(cl)
	if d == nil {
		return
	}
	h.b.lifeMu.Lock()
	defer h.b.lifeMu.Unlock()
	h.b.mu.Lock()
	old := h.b.devices[d.id]
	h.b.devices[d.id] = d
	h.b.mu.Unlock()
	if old != nil {
		if old.cl.ID != cl.ID { // same client id: mochi has taken the old one over already
			_ = h.b.srv.DisconnectClient(old.cl, packets.ErrSessionTakenOver)
		}
		h.b.cfg.OnDisconnect(d.id, ReasonReplaced)
	}
	h.b.cfg.OnConnect(Client{DeviceID: d.id, ClientID: cl.ID, Remote: cl.Net.Remote, Local: cl.Net.Conn.LocalAddr().String()})
}

// OnDisconnect reports the end of a device's current connection.
func (h *hook) OnDisconnect(cl *mqtt.Client, err error, expire bool) {
	d := h.b.lookup(cl)
	if d == nil {
		return
	}
	h.b.lifeMu.Lock()
	defer h.b.lifeMu.Unlock()
	h.b.mu.Lock()
	current := h.b.devices[d.id] == d
	if current {
		delete(h.b.devices, d.id)
	}
	h.b.mu.Unlock()
	if current {
		h.b.cfg.OnDisconnect(d.id, reason(cl, err))
	}
}

// OnPublish passes a device's message to the hub and keeps it from being
// routed anywhere else (nobody subscribes to uplink topics anyway). The hub
// gets it once mochi has processed the packet, still on the connection's
// reader and before its next packet is read (Client.AfterPacket): the
// hub's handling then runs above mochi's packet path, about 13 KiB of
// frames, not below it, and the reader's stack stays at 16 KiB.
func (h *hook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	d := h.b.lookup(cl)
	if d == nil {
		return pk, packets.ErrRejectPacket
	}
	if code, why := h.b.payloadOK(pk.Payload); code != packets.CodeSuccess {
		h.b.strike(cl, d, code, why)
		return pk, packets.ErrRejectPacket
	}
	if d.messages != nil && !d.messages.Allow() {
		h.b.rateLimited.Add(1)
		return pk, packets.ErrRejectPacket
	}
	id, payload := d.id, bytes.Clone(pk.Payload)
	cl.AfterPacket(func() { h.b.cfg.OnMessage(id, payload) })
	return pk, packets.CodeSuccessIgnore
}
