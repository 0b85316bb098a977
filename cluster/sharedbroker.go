package cluster

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/nats-io/nats.go"
)

// Devices at a shared MQTT broker (EMQX) are connected to no hub node:
// every node hears each device's connect event, and the broker hands each
// message the device sends to any one node of the shared subscription.
// One node holds the device's session all the same (its MCP client, its
// conversation and the UDP channel named in its hello); the others pass
// it the device's messages that reached them, over NATS.
//
// Which node takes a device is decided without asking: Owner hashes the
// device over the nodes with a live lease (rendezvous hashing), so every
// node names the same one while they agree on who is alive. The holder
// then claims the device like any connection, and Holder follows the
// claims: a node that joins later does not take devices away from their
// holders. When a holder dies or leaves, OnReleased and OnMembership tell
// the others, and Owner over the survivors names the new holder; the
// devices stay connected at the broker and never notice.

// Owner is the node that should hold a device whose connection no node
// has: the highest hash of node and device among the nodes alive.
func (n *Node) Owner(id string) string {
	best, top := n.name, uint64(0)
	for _, node := range n.aliveNodes() {
		// FNV spreads ids that differ in their last bytes badly (six
		// consecutive MACs all went to one of three nodes); SHA-256 does not.
		sum := sha256.Sum256([]byte(node + "\x00" + id))
		if s := binary.BigEndian.Uint64(sum[:8]); s > top || s == top && node < best {
			best, top = node, s
		}
	}
	return best
}

// Holder is the node holding the device's session as this node knows it,
// or "".
func (n *Node) Holder(id string) string {
	n.rmu.Lock()
	defer n.rmu.Unlock()
	if l := n.remote[id]; l != nil {
		return l.node
	}
	if _, ok := n.claimed[id]; ok {
		return n.name
	}
	return ""
}

const passedHeader = "Xzhub-Device"

func passSubject(node string) string { return "xzhub.pass." + key(node) }

// Pass hands a device's message that reached this node to the node
// holding the device (at most once, like the QoS 0 message it is).
func (n *Node) Pass(node, id string, payload []byte) error {
	m := nats.NewMsg(passSubject(node))
	m.Header.Set(passedHeader, id)
	m.Data = payload
	return n.nc.PublishMsg(m)
}

// ServePassed calls fn, one at a time, with the device messages other
// nodes pass to this one, until stop is called (or Close).
func (n *Node) ServePassed(fn func(id string, payload []byte)) (stop func(), err error) {
	sub, err := n.nc.Subscribe(passSubject(n.name), func(m *nats.Msg) {
		if id := m.Header.Get(passedHeader); id != "" {
			fn(id, m.Data)
		}
	})
	if err != nil {
		return nil, err
	}
	n.rmu.Lock()
	n.serviceSubs = append(n.serviceSubs, sub)
	n.rmu.Unlock()
	return func() { sub.Unsubscribe() }, nil
}

// OnReleased sets fn to be told of each device another node held that
// lost its holder: the holder released it, or died (its lease lapsed).
func (n *Node) OnReleased(fn func(id, transport string)) {
	n.rmu.Lock()
	n.released = fn
	n.rmu.Unlock()
}

// OnMembership sets fn to be told when a node joined or left, as this
// node sees it (Owner may name another node from then on).
func (n *Node) OnMembership(fn func()) {
	n.rmu.Lock()
	n.changed = fn
	n.rmu.Unlock()
}

func (n *Node) releasedBy(l *remoteLink) {
	n.rmu.Lock()
	fn := n.released
	n.rmu.Unlock()
	if fn != nil {
		fn(l.id, l.transport)
	}
}

func (n *Node) membershipChanged() {
	n.rmu.Lock()
	fn := n.changed
	n.rmu.Unlock()
	if fn != nil {
		fn()
	}
}
