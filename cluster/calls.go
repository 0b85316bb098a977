package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/xiaozhi-hub/hub"
)

// The call history is kept by the node that made each call, in its own
// store; a node asked for the history asks the others too and merges the
// answers, newest first, each record naming its node. A node that is down
// is missing from the answer until it is back (its records are on its
// disk).

const callsSubject = "xzhub.calls"

type callsRequest struct {
	DeviceID string `json:"deviceId,omitempty"`
	Limit    int    `json:"limit"`
}

type callsReply struct {
	Node  string           `json:"node"`
	Calls []hub.CallRecord `json:"calls"`
}

func (s *sharedStore) Calls(ctx context.Context, f hub.CallFilter) ([]hub.CallRecord, error) {
	all, err := s.Store.Calls(ctx, f)
	if err != nil {
		return nil, err
	}
	for i := range all {
		all[i].Node = s.n.name
	}
	req, _ := json.Marshal(callsRequest{DeviceID: f.DeviceID, Limit: f.Limit})
	for _, b := range s.n.gather(ctx, callsSubject, req) {
		var r callsReply
		if json.Unmarshal(b, &r) == nil && r.Node != s.n.name {
			for _, c := range r.Calls {
				c.Node = r.Node
				all = append(all, c)
			}
		}
	}
	slices.SortFunc(all, func(a, b hub.CallRecord) int {
		return cmp.Or(b.Started.Compare(a.Started), strings.Compare(a.Node, b.Node), cmp.Compare(b.ID, a.ID))
	})
	limit := f.Limit
	if limit <= 0 {
		limit = 100 // the store's own default
	}
	return all[:min(len(all), limit)], nil
}

// answerCalls gives this node's own call history to another node.
func (n *Node) answerCalls(local func(context.Context, hub.CallFilter) ([]hub.CallRecord, error)) nats.MsgHandler {
	return func(m *nats.Msg) {
		var req callsRequest
		if json.Unmarshal(m.Data, &req) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		calls, err := local(ctx, hub.CallFilter{DeviceID: req.DeviceID, Limit: req.Limit})
		if err != nil {
			n.log.Warn("could not read the call history for another node", "err", err)
			return
		}
		b, _ := json.Marshal(callsReply{Node: n.name, Calls: calls})
		m.Respond(b)
	}
}

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
