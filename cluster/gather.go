package cluster

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// gather asks every node (this one included) and collects the answers
// until every other node known alive has answered, or for 300 ms (a node
// that started since the last look at the leases answers too).
func (n *Node) gather(ctx context.Context, subject string, data []byte) [][]byte {
	inbox := nats.NewInbox()
	sub, err := n.nc.SubscribeSync(inbox)
	if err != nil {
		return nil
	}
	defer sub.Unsubscribe()
	if err := n.nc.PublishRequest(subject, inbox, data); err != nil {
		return nil
	}
	want := n.liveNodes(ctx) // the others, and this node itself
	wait := 300 * time.Millisecond
	if want <= 1 {
		wait = 50 * time.Millisecond // alone, unless a node just started
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out [][]byte
	for want <= 1 || len(out) < want {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			break
		}
		out = append(out, m.Data)
	}
	return out
}

// liveNodes counts the nodes with a lease now (the last sweep's count if
// the leases cannot be read).
func (n *Node) liveNodes(ctx context.Context) int {
	keys, err := n.nodes.Keys(ctx)
	if err != nil {
		return len(n.aliveNodes())
	}
	return len(keys)
}
