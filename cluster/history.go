package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
)

// The history (call records and recorded events) is one JetStream stream,
// xzhub_history, with limits: each node appends what it records, and every
// node copies what the others appended into its own store, through a
// durable consumer of its own (so a node that was away catches up, and a
// new node gets the history the stream still holds). Each node therefore
// answers GET /api/calls and /api/events for the whole cluster from its own
// SQLite file, including what a node that has since died recorded.
//
// A node records only what happened on it: a change applied from another
// node, or a device another node holds coming and going, is that node's
// to record (registry's echo), so each event is in the history once.

const (
	historyStream = "xzhub_history"
	// The stream's limits: whichever is reached first drops the oldest.
	historyMaxAge   = 30 * 24 * time.Hour
	historyMaxBytes = 1 << 30
	historyMaxMsg   = 64 << 10
)

func historySubject(kind, node string) string { return "xzhub.history." + kind + "." + key(node) }

// historyRecord is one stream message: a call record or an event.
type historyRecord struct {
	Node  string          `json:"node"`
	Call  *hub.CallRecord `json:"call,omitempty"`
	Event *hub.Event      `json:"event,omitempty"`
}

// peerCalls is what the local store offers for the other nodes' calls
// (store.Store does).
type peerCalls interface {
	PeerCalls(ctx context.Context, f hub.CallFilter) ([]hub.CallRecord, error)
}

// historyStats counts records that did not reach the stream.
type historyStats struct {
	unshared atomic.Uint64
	warned   atomic.Int64
}

func (n *Node) createHistory(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.Stream, error) {
	var s jetstream.Stream
	err := retry(ctx, 30*time.Second, func() (err error) {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		s, err = js.CreateOrUpdateStream(actx, jetstream.StreamConfig{
			Name: historyStream, Description: "xiaozhi-hub: call records and events of every node",
			Subjects: []string{"xzhub.history.>"}, Storage: jetstream.FileStorage, Replicas: replicas,
			MaxAge: historyMaxAge, MaxBytes: historyMaxBytes, MaxMsgSize: historyMaxMsg, Discard: jetstream.DiscardOld,
		})
		return err
	})
	return s, err
}

// share appends this node's records to the stream without waiting (a
// record the stream does not take is still in this node's store, and
// counted).
func (n *Node) share(calls []hub.CallRecord, events []hub.Event) {
	put := func(kind string, r historyRecord) {
		b, err := json.Marshal(r)
		if err == nil {
			_, err = n.js.PublishAsync(historySubject(kind, n.name), b)
		}
		if err != nil {
			n.unshared(err)
		}
	}
	for i := range calls {
		c := calls[i]
		put("call", historyRecord{Node: n.name, Call: &c})
	}
	for i := range events {
		e := events[i]
		put("event", historyRecord{Node: n.name, Event: &e})
	}
}

func (n *Node) unshared(err error) {
	n.hist.unshared.Add(1)
	now := time.Now().UnixNano()
	if last := n.hist.warned.Load(); now-last >= int64(time.Second) && n.hist.warned.CompareAndSwap(last, now) {
		n.log.Warn("a record did not reach the cluster's history (it is in this node's own)", "err", err)
	}
}

// Unshared is how many records this node could not append to the
// cluster's history.
func (n *Node) Unshared() uint64 { return n.hist.unshared.Load() }

// copyHistory follows the stream with this node's durable consumer and
// writes the other nodes' records into the local store, acknowledging each
// once it is committed.
func (n *Node) copyHistory(ctx context.Context, local registry.Store) error {
	cons, err := n.history.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "history-" + key(n.name), Description: "xiaozhi-hub node " + n.name + " copying the history",
		AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024, AckWait: 30 * time.Second,
		DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: 7 * 24 * time.Hour,
	})
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var r historyRecord
		if json.Unmarshal(m.Data(), &r) != nil || r.Node == "" {
			m.Term() // not ours to understand: never again
			return
		}
		if r.Node == n.name {
			m.Ack()
			return
		}
		var calls []hub.CallRecord
		var events []hub.Event
		switch {
		case r.Call != nil:
			r.Call.Node = r.Node
			calls = append(calls, *r.Call)
		case r.Event != nil:
			r.Event.Node = r.Node
			events = append(events, *r.Event)
		default:
			m.Term()
			return
		}
		err := local.Log(calls, events, func(err error) {
			if err != nil {
				m.NakWithDelay(time.Second)
			} else {
				m.Ack()
			}
		})
		if err != nil { // the store is behind: later
			m.NakWithDelay(time.Second)
		}
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrNoHeartbeat) {
			n.log.Debug("following the cluster's history", "err", err)
		}
	}))
	if err != nil {
		return err
	}
	n.stopHistory = cc.Stop
	return nil
}

// Log records in this node's store and appends to the cluster's history.
func (s *sharedStore) Log(calls []hub.CallRecord, events []hub.Event, done func(error)) error {
	if err := s.Store.Log(calls, events, done); err != nil {
		return err
	}
	s.n.share(calls, events)
	return nil
}

// Calls merges this node's calls and the other nodes', newest first, each
// naming its node.
func (s *sharedStore) Calls(ctx context.Context, f hub.CallFilter) ([]hub.CallRecord, error) {
	all, err := s.Store.Calls(ctx, f)
	if err != nil {
		return nil, err
	}
	for i := range all {
		all[i].Node = s.n.name
	}
	if p, ok := s.Store.(peerCalls); ok {
		peers, err := p.PeerCalls(ctx, f)
		if err != nil {
			return nil, err
		}
		all = append(all, peers...)
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

// Events are this node's and the others', newest first as they reached
// this node, each naming its node.
func (s *sharedStore) Events(ctx context.Context, deviceID string, limit int) ([]hub.Event, error) {
	evs, err := s.Store.Events(ctx, deviceID, limit)
	for i := range evs {
		if evs[i].Node == "" {
			evs[i].Node = s.n.name
		}
	}
	return evs, err
}
