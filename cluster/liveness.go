package cluster

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// Liveness. A node's lease (xzhub_nodes, 15 s) says it is a member; its
// heartbeat on core NATS says it is running. The lease is long because
// JetStream can hold writes up for seconds while it elects a leader; core
// NATS messages do not wait for JetStream, so a node that has been silent
// for beatTimeout is taken for dead well before its lease would lapse.
//
// Only a node whose own NATS connection has been up for beatTimeout
// judges: one cut off from NATS hears nobody, and must not conclude that
// everybody died. A node wrongly taken for dead (a long pause) loses its
// devices' claims, claims them again when it next looks (lost in
// presence.go), and the others link to them again; a device claimed by
// another node after the removal stays there.
const (
	beatEvery   = time.Second
	beatTimeout = 6 * time.Second
	beatSubject = "xzhub.beat"
)

func (n *Node) startBeats() error {
	sub, err := n.nc.Subscribe(beatSubject, func(m *nats.Msg) {
		name := string(m.Data)
		if name == "" || name == n.name || len(name) > 256 {
			return
		}
		n.rmu.Lock()
		n.heard[name] = time.Now()
		back := !n.alive[name] && n.leased[name]
		n.rmu.Unlock()
		if back {
			signal(n.beatWake)
		}
	})
	if err != nil {
		return err
	}
	n.rmu.Lock()
	n.serviceSubs = append(n.serviceSubs, sub)
	n.rmu.Unlock()
	n.spawn(n.beatLoop)
	return nil
}

// beatLoop sends this node's heartbeat every beatEvery and looks for
// nodes that went silent.
func (n *Node) beatLoop() {
	tick := time.NewTicker(beatEvery)
	defer tick.Stop()
	for {
		n.nc.Publish(beatSubject, []byte(n.name))
		select {
		case <-n.ctx.Done():
			return
		case <-n.presence.done:
			return
		case <-tick.C:
		case <-n.beatWake:
		}
		ctx, cancel := context.WithTimeout(n.ctx, beatEvery)
		n.recompute(ctx)
		cancel()
	}
}

func (n *Node) connectedSince() time.Time { return time.Unix(0, n.connected.Load()) }

// lastHeardLocked is when the node was last heard, or when this node
// started listening if never.
func (n *Node) lastHeardLocked(name string) time.Time {
	if t, ok := n.heard[name]; ok {
		return t
	}
	return n.connectedSince()
}

func (n *Node) silentLocked(name string, now time.Time) bool {
	return now.Sub(n.lastHeardLocked(name)) > beatTimeout
}
