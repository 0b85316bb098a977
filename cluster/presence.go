package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
)

// claim is a presence entry: the node holding a device's connection.
type claim struct {
	Node      string `json:"node"`
	Transport string `json:"transport,omitempty"`
}

// queue holds the newest presence news per device, in arrival order,
// without blocking the registry (it coalesces a device's news: only the
// last one matters).
type queue struct {
	mu     sync.Mutex
	order  []string
	latest map[string]bool // device → online
	wake   chan struct{}
	done   chan struct{}
	closed bool
}

func newQueue() *queue {
	return &queue{latest: map[string]bool{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (q *queue) put(id string, online bool) {
	q.mu.Lock()
	if _, ok := q.latest[id]; !ok {
		q.order = append(q.order, id)
	}
	q.latest[id] = online
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns the queued news, oldest first.
func (q *queue) take() (ids []string, online []bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, id := range q.order {
		ids = append(ids, id)
		online = append(online, q.latest[id])
	}
	q.order, q.latest = nil, map[string]bool{}
	return ids, online
}

func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.done)
	}
}

// Presence is the registry's hook (registry.Options.Presence): news of this
// node's own connections is queued for the presence bucket.
func (n *Node) Presence(id string, online bool, node string) {
	if node != "" {
		return // a link through another node: that node claims it
	}
	if online { // a new connection: claimed whatever was claimed before
		n.rmu.Lock()
		delete(n.removed, id)
		n.rmu.Unlock()
	}
	n.presence.put(id, online)
}

func (n *Node) presenceLoop() {
	for {
		select {
		case <-n.presence.wake:
		case <-n.presence.done:
			n.publishPresence() // what was queued before Close
			return
		}
		n.publishPresence()
	}
}

func (n *Node) publishPresence() {
	ids, online := n.presence.take()
	for i, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		if online[i] {
			err = n.claim(ctx, id)
		} else {
			err = n.release(ctx, id)
		}
		cancel()
		if err != nil {
			n.log.Warn("could not update the device's presence in the cluster; trying again", "device", id, "online", online[i], "err", err)
			n.retryPresence(id, online[i])
		}
	}
}

// retryPresence queues the news again a little later, unless newer news
// of the device has come meanwhile.
func (n *Node) retryPresence(id string, online bool) {
	time.AfterFunc(time.Second, func() {
		n.presence.mu.Lock()
		_, newer := n.presence.latest[id]
		closed := n.presence.closed
		n.presence.mu.Unlock()
		if !newer && !closed {
			n.presence.put(id, online)
		}
	})
}

// claim says this node holds the device's connection, and answers its
// subject.
func (n *Node) claim(ctx context.Context, id string) error {
	transport := ""
	if d, err := n.reg.Device(id); err == nil {
		if !d.Online || d.Node != "" {
			return nil // gone again already; its offline news follows
		}
		transport = d.Transport
	}
	n.rmu.Lock()
	if l := n.remote[id]; l != nil { // it was on another node before
		delete(n.remote, id)
		l.conn.end()
	}
	if n.subs[id] == nil {
		sub, err := n.nc.Subscribe(subject(id), n.serve(id))
		if err != nil {
			n.rmu.Unlock()
			return err
		}
		n.subs[id] = sub
	}
	removal, again := n.removed[id]
	n.rmu.Unlock()
	b, _ := json.Marshal(claim{Node: n.name, Transport: transport})
	var rev uint64
	var err error
	if again {
		// Claimed again after another node removed the claim: unless a
		// node claimed the device since, whose claim is the newer (onClaim
		// closes the connection here when it comes).
		rev, err = n.pres.Update(ctx, key(id), b, removal)
	} else {
		rev, err = n.pres.Put(ctx, key(id), b)
	}
	if again && errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		n.rmu.Lock()
		delete(n.removed, id)
		n.rmu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	n.rmu.Lock()
	delete(n.removed, id)
	n.claimed[id] = rev
	n.rmu.Unlock()
	return nil
}

// release withdraws this node's claim, unless another node has claimed
// the device since.
func (n *Node) release(ctx context.Context, id string) error {
	n.rmu.Lock()
	if s := n.subs[id]; s != nil {
		s.Unsubscribe()
		delete(n.subs, id)
	}
	rev, ok := n.claimed[id]
	delete(n.claimed, id)
	delete(n.removed, id)
	n.rmu.Unlock()
	if !ok {
		return nil
	}
	err := n.pres.Delete(ctx, key(id), jetstream.LastRevision(rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return nil // claimed by another node meanwhile
	}
	return err
}

// onPresence keeps a link, on this node, to every device another node
// holds.
func (n *Node) onPresence(e jetstream.KeyValueEntry) {
	id, ok := unkey(e.Key())
	if !ok {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		n.lost(id, e.Revision())
		return
	}
	var c claim
	if json.Unmarshal(e.Value(), &c) != nil || c.Node == "" {
		return
	}
	n.onClaim(id, c, e.Revision())
}

// onClaim handles a claim on the device by node c.Node, of revision rev in
// the presence bucket.
func (n *Node) onClaim(id string, c claim, rev uint64) {
	if c.Node == n.name {
		n.rmu.Lock()
		delete(n.waiting, id) // any claim still waiting is older
		n.rmu.Unlock()
		return
	}
	n.rmu.Lock()
	ours, holding := n.claimed[id]
	n.rmu.Unlock()
	if holding && rev > ours {
		// The device connected to another node after it connected here:
		// that connection is the live one.
		n.log.Info("device moved to another node", "device", id, "node", c.Node)
		n.reg.Disconnect(id, "the device connected to hub node "+c.Node)
	}
	if !n.isAlive(c.Node) && !n.leaseExists(c.Node) {
		return // its lease is gone: the sweep removes the claim
	}
	n.rmu.Lock()
	if l := n.remote[id]; l != nil && l.node == c.Node {
		n.rmu.Unlock()
		return
	}
	n.rmu.Unlock()
	n.attach(id, pending{claim: c, rev: rev})
}

// newerHere reports whether the device's connection to this node is newer
// than another node's claim of revision rev: this node claimed it later,
// or its claim is still to be written (and will come after rev, which the
// bucket has already). The presence bucket orders the claims; a watch
// that delivers one late (a loaded node, or a claim kept until the
// device's record came) must not hand a newer connection to an older one.
func (n *Node) newerHere(id string, rev uint64) bool {
	d, err := n.reg.Device(id)
	if err != nil || !d.Online || d.Node != "" {
		return false // not connected here
	}
	n.rmu.Lock()
	ours, claimed := n.claimed[id]
	n.rmu.Unlock()
	return !claimed || ours > rev
}

// lost handles a device whose claim was withdrawn (by the removal of
// revision rev).
func (n *Node) lost(id string, rev uint64) {
	n.rmu.Lock()
	l := n.remote[id]
	delete(n.waiting, id)
	_, ours := n.claimed[id]
	if ours {
		// The connection here now stands where its claim's removal
		// does: a claim by another node after that is newer (the device
		// moved while this node was taken for dead), one before it older.
		n.claimed[id], n.removed[id] = rev, rev
	}
	n.rmu.Unlock()
	if ours {
		// This node's own claim was removed by another (its lease had
		// lapsed, say, while JetStream moved a leader): the device is still
		// connected here, so claim it again.
		n.presence.put(id, true)
		return
	}
	if l == nil {
		return
	}
	n.dropRemote(l, "the device disconnected from hub node "+l.node)
	n.releasedBy(l)
}

// ---- links through other nodes

// remoteLink is a device's link on this node to its connection on another.
type remoteLink struct {
	id, node  string
	transport string
	link      *registry.Link
	conn      *remoteConn
}

// pending is another node's claim of a device, with its revision.
type pending struct {
	claim
	rev uint64
}

// attach links the device through the node that claimed it, unless this
// node's own connection of it is newer.
func (n *Node) attach(id string, p pending) {
	c := p.claim
	if _, err := n.reg.Device(id); err != nil {
		// The device's record has not reached this node yet (its node
		// claims it before the record's write is done): attach once it
		// has (see apply).
		n.rmu.Lock()
		n.waiting[id] = p
		n.rmu.Unlock()
		return
	}
	if n.newerHere(id, p.rev) {
		n.rmu.Lock()
		delete(n.waiting, id)
		n.rmu.Unlock()
		n.log.Info("an older claim of a device connected here: ignored", "device", id, "node", c.Node)
		return
	}
	n.rmu.Lock()
	delete(n.waiting, id)
	// Another node holds the device now: if this one held it before, it
	// stops answering the device's subject (the registry replaces the
	// local link without telling Presence).
	if s := n.subs[id]; s != nil {
		s.Unsubscribe()
		delete(n.subs, id)
	}
	delete(n.claimed, id)
	delete(n.removed, id)
	n.rmu.Unlock()
	conn := newRemoteConn(n, id, c.Node)
	link := n.reg.Connect(registry.ConnectInfo{DeviceID: id, Transport: c.Transport, Node: c.Node}, conn)
	n.rmu.Lock()
	old := n.remote[id]
	n.remote[id] = &remoteLink{id: id, node: c.Node, transport: c.Transport, link: link, conn: conn}
	n.rmu.Unlock()
	if old != nil {
		old.conn.end()
	}
}

func (n *Node) dropRemote(l *remoteLink, reason string) {
	n.rmu.Lock()
	if n.remote[l.id] == l {
		delete(n.remote, l.id)
	}
	n.rmu.Unlock()
	l.conn.end()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.link.Disconnect(ctx, reason)
}

func subject(id string) string { return "xzhub.dev." + key(id) }

// request is what a node asks the node holding a device.
type request struct {
	Op        string           `json:"op"` // "call" or "iot"
	Tool      string           `json:"tool,omitempty"`
	Arguments json.RawMessage  `json:"arguments,omitempty"`
	Commands  []hub.IoTCommand `json:"commands,omitempty"`
	TimeoutMs int64            `json:"timeoutMs,omitempty"`
}

// timeout is how long the node asked gives the request: what the asking
// node has left of its own (TimeoutMs), within 10 minutes; 30 s if none.
func (r request) timeout() time.Duration {
	t := time.Duration(r.TimeoutMs) * time.Millisecond
	if t <= 0 || t > 10*time.Minute {
		return 30 * time.Second
	}
	return t
}

type reply struct {
	Result *hub.CallResult `json:"result,omitempty"`
	Error  *replyError     `json:"error,omitempty"`
}

// err is the error the node answered with, nil for none.
func (r reply) err() error {
	if r.Error == nil {
		return nil
	}
	return &hub.Error{Code: r.Error.Code, Message: r.Error.Message}
}

// result is the call's result, or its error; of names the call in the
// error of an answer without either (made only then: calls are a hot path).
func (r reply) result(of func() string) (hub.CallResult, error) {
	if err := r.err(); err != nil {
		return hub.CallResult{}, err
	}
	if r.Result == nil {
		return hub.CallResult{}, hub.Errorf(hub.EINTERNAL, "a hub node answered %s without a result", of())
	}
	return *r.Result, nil
}

type replyError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// serve answers requests for a device connected here, each on its own
// goroutine (a call may take minutes).
func (n *Node) serve(id string) nats.MsgHandler {
	return func(m *nats.Msg) {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			var req request
			if err := json.Unmarshal(m.Data, &req); err != nil {
				respond(m, reply{Error: &replyError{Code: hub.EBADREQUEST, Message: "malformed cluster request: " + err.Error()}})
				return
			}
			ctx, cancel := context.WithTimeout(n.ctx, req.timeout())
			defer cancel()
			var out reply
			switch req.Op {
			case "call":
				res, err := n.reg.Forward(ctx, id, req.Tool, req.Arguments)
				if err != nil {
					out.Error = toReplyError(err)
				} else {
					out.Result = &res
				}
			case "iot":
				if err := n.reg.ForwardIoT(ctx, id, req.Commands); err != nil {
					out.Error = toReplyError(err)
				}
			default:
				out.Error = &replyError{Code: hub.EBADREQUEST, Message: "unknown cluster request " + req.Op}
			}
			respond(m, out)
		}()
	}
}

func toReplyError(err error) *replyError {
	code := hub.ErrorCode(err)
	if code == "" {
		code = hub.EINTERNAL
	}
	return &replyError{Code: code, Message: hub.ErrorMessage(err)}
}

func respond(m *nats.Msg, r reply) {
	b, _ := json.Marshal(r)
	m.Respond(b)
}

// attachWaiting attaches a device whose claim came before its record.
func (n *Node) attachWaiting(id string) {
	n.rmu.Lock()
	p, ok := n.waiting[id]
	n.rmu.Unlock()
	if ok {
		n.attach(id, p)
	}
}
