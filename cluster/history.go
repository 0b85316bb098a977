package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/xiaozhi-hub/hub"
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

func historySubject(node string) string { return "xzhub.history." + key(node) }

// historyBatch is one stream message: the records one node made within a
// short while (batching keeps the stream's replication, and the other
// nodes' copying, from costing every call a round of messages).
type historyBatch struct {
	Node   string           `json:"node"`
	Calls  []hub.CallRecord `json:"calls,omitempty"`
	Events []hub.Event      `json:"events,omitempty"`
}

const (
	historyFlush     = 50 * time.Millisecond // a record waits at most this long for its batch
	historyBatchSize = 48 << 10              // bytes of records per batch, under historyMaxMsg
	historyAckEvery  = 200 * time.Millisecond
	historyNews      = 10 * time.Second // calls copied from a message younger than this are announced
	historyAttempts  = 100              // a batch is tried again on each flush, for about 5 s (plus the publishes' own timeouts)
	historyRetries   = 64               // batches waiting to be tried again
	attemptHeader    = "Xzhub-Attempt"
)

// peerCalls is what the local store offers for the other nodes' calls
// (store.Store does).
type peerCalls interface {
	PeerCalls(ctx context.Context, f hub.CallFilter) ([]hub.CallRecord, error)
}

// history is this node's side of the stream: the batch being filled, and
// counts of what did not reach the stream.
type history struct {
	mu    sync.Mutex
	batch historyBatch
	size  int
	retry []*nats.Msg // batches to try again (retryLater)
	epoch int64       // set and read by the flusher only
	seq   atomic.Uint64
	wake  chan struct{} // the batch is full
	done  chan struct{} // closed when the flusher has sent the last batch

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

// share adds this node's records to the batch on its way to the stream,
// without waiting (a record the stream does not take is still in this
// node's store, and counted).
func (n *Node) share(calls []hub.CallRecord, events []hub.Event) {
	h := &n.hist
	h.mu.Lock()
	for _, c := range calls {
		h.batch.Calls = append(h.batch.Calls, c)
		h.size += 256 + 2*(len(c.Arguments)+len(c.Result)) // JSON escaping
	}
	for _, e := range events {
		h.batch.Events = append(h.batch.Events, e)
		h.size += 256
		if e.Data != nil {
			h.size += 4 << 10 // the registry bounds an event's data to 4 KiB of JSON
		}
	}
	full := h.size >= historyBatchSize
	h.mu.Unlock()
	if full {
		signal(h.wake)
	}
}

// flushLoop sends the batch every historyFlush (or when full) until stop,
// then sends what is left.
func (n *Node) flushLoop(stop <-chan struct{}) {
	defer close(n.hist.done)
	tick := time.NewTicker(historyFlush)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			n.flush()
			return
		case <-tick.C:
		case <-n.hist.wake:
		}
		n.flush()
	}
}

func (n *Node) flush() {
	h := &n.hist
	h.mu.Lock()
	b, retry := h.batch, h.retry
	h.batch, h.size, h.retry = historyBatch{}, 0, nil
	h.mu.Unlock()
	for _, m := range retry {
		n.publishMsg(&nats.Msg{Subject: m.Subject, Data: m.Data, Header: m.Header})
	}
	if len(b.Calls) == 0 && len(b.Events) == 0 {
		return
	}
	b.Node = n.name
	data, err := json.Marshal(b)
	if err == nil && len(data) > historyMaxMsg && len(b.Calls)+len(b.Events) > 1 {
		// The estimates were off (much escaping): one record a message.
		for _, c := range b.Calls {
			n.publish(historyBatch{Node: n.name, Calls: []hub.CallRecord{c}})
		}
		for _, e := range b.Events {
			n.publish(historyBatch{Node: n.name, Events: []hub.Event{e}})
		}
		return
	}
	n.publish(b)
}

func (n *Node) publish(b historyBatch) {
	data, err := json.Marshal(b)
	if err != nil {
		n.unshared(len(b.Calls)+len(b.Events), err)
		return
	}
	m := &nats.Msg{Subject: historySubject(n.name), Data: data, Header: nats.Header{}}
	// A batch sent again after a timeout may have been stored the first
	// time: the stream keeps one copy of each id (for 2 minutes).
	m.Header.Set(nats.MsgIdHdr, n.hist.batchID(n.name))
	n.publishMsg(m)
}

func (n *Node) publishMsg(m *nats.Msg) {
	if _, err := n.js.PublishMsgAsync(m); err != nil {
		n.retryLater(m, err)
	}
}

// batchID names a batch uniquely: the node, when this process began
// sending, and a count.
func (h *history) batchID(node string) string {
	if h.epoch == 0 {
		h.epoch = time.Now().UnixNano()
	}
	return node + "-" + strconv.FormatInt(h.epoch, 36) + "-" + strconv.FormatUint(h.seq.Add(1), 36)
}

// retryLater keeps a batch the stream did not take (no leader while
// JetStream elects one, a timeout) for the next flush, a few times, in a
// bounded queue; beyond that its records are counted as unshared.
func (n *Node) retryLater(m *nats.Msg, err error) {
	attempt, _ := strconv.Atoi(m.Header.Get(attemptHeader))
	h := &n.hist
	h.mu.Lock()
	keep := attempt < historyAttempts && len(h.retry) < historyRetries
	if keep {
		m.Header.Set(attemptHeader, strconv.Itoa(attempt+1))
		h.retry = append(h.retry, m)
	}
	h.mu.Unlock()
	if !keep {
		n.unsharedMsg(m, err)
	}
}

func (n *Node) unshared(count int, err error) {
	n.hist.unshared.Add(uint64(count))
	now := time.Now().UnixNano()
	if last := n.hist.warned.Load(); now-last >= int64(time.Second) && n.hist.warned.CompareAndSwap(last, now) {
		n.log.Warn("records did not reach the cluster's history (they are in this node's own)", "count", count, "err", err)
	}
}

// unsharedMsg counts the records of a batch the stream did not take.
func (n *Node) unsharedMsg(m *nats.Msg, err error) {
	var b historyBatch
	if m != nil && json.Unmarshal(m.Data, &b) == nil {
		n.unshared(len(b.Calls)+len(b.Events), err)
		return
	}
	n.unshared(1, err)
}

// Unshared is how many records this node could not append to the
// cluster's history.
func (n *Node) Unshared() uint64 { return n.hist.unshared.Load() }

// copyHistory follows the stream with this node's durable consumer and
// writes the other nodes' records into the local store. Acknowledgements
// are cumulative and sent at most every historyAckEvery, for the newest
// batch committed. A node that dies meanwhile gets those batches again,
// and skips them: the local store commits the newest stream sequence it
// copied with the records (LogCopied), so each is copied once.
func (n *Node) copyHistory(ctx context.Context, local LocalStore) error {
	// Retried for a while, as the buckets are: a node that starts while
	// JetStream elects a leader (a rolling restart) waits for it.
	var cons jetstream.Consumer
	err := retry(ctx, 30*time.Second, func() (err error) {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		cons, err = n.history.CreateOrUpdateConsumer(actx, jetstream.ConsumerConfig{
			Durable: "history-" + key(n.name), Description: "xiaozhi-hub node " + n.name + " copying the history",
			AckPolicy: jetstream.AckAllPolicy, MaxAckPending: 4096, AckWait: time.Minute,
			DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: 7 * 24 * time.Hour,
		})
		return err
	})
	if err != nil {
		return err
	}
	// The stream's name and creation: a stream made again (its sequence
	// starting over) is copied from its start.
	stream := fmt.Sprintf("%s@%s", historyStream, n.history.CachedInfo().Created.UTC().Format(time.RFC3339Nano))
	copied, err := local.HistoryCopied(ctx, stream)
	if err != nil {
		return err
	}
	var committed atomic.Pointer[jetstream.Msg]
	hctx, cancel := context.WithCancel(n.ctx)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var b historyBatch
		if json.Unmarshal(m.Data(), &b) != nil || b.Node == "" {
			m.Term() // not ours to understand: never again
			return
		}
		md, err := m.Metadata()
		if err != nil {
			m.Term()
			return
		}
		// Consume calls this handler for one message at a time, in order.
		seq := md.Sequence.Stream
		if b.Node == n.name || seq <= copied {
			committed.Store(&m)
			return
		}
		copied = seq
		for i := range b.Calls {
			b.Calls[i].Node = b.Node
		}
		for i := range b.Events {
			b.Events[i].Node = b.Node
		}
		// Calls the stream took a moment ago are news to this node's event
		// stream; older ones (a node catching up) are history only.
		var recent []hub.CallRecord
		if time.Since(md.Timestamp) < historyNews {
			recent = b.Calls
		}
		done := func(err error) {
			if err != nil {
				n.log.Warn("could not copy another node's records", "node", b.Node, "err", err)
			} else if n.reg != nil {
				n.reg.AnnounceCalls(recent) // listed now, when the event says so
			}
			committed.Store(&m)
		}
		// The store's queue is full only for a moment: wait (holding up
		// this consumer, not the hub) rather than lose the batch.
		for local.LogCopied(stream, seq, b.Calls, b.Events, done) != nil {
			select {
			case <-hctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrNoHeartbeat) {
			n.log.Debug("following the cluster's history", "err", err)
		}
	}))
	if err != nil {
		cancel()
		return err
	}
	acked := make(chan struct{})
	go func() {
		defer close(acked)
		tick := time.NewTicker(historyAckEvery)
		defer tick.Stop()
		for {
			select {
			case <-hctx.Done():
				if m := committed.Swap(nil); m != nil {
					(*m).Ack()
				}
				return
			case <-tick.C:
				if m := committed.Swap(nil); m != nil {
					(*m).Ack()
				}
			}
		}
	}()
	stopFlush := make(chan struct{})
	go n.flushLoop(stopFlush)
	n.stopHistory = sync.OnceFunc(func() {
		cc.Stop()
		cancel()
		<-acked
		close(stopFlush)
		<-n.hist.done
	})
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
