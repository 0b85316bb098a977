// Package cluster makes several hub nodes act as one hub, on NATS.
//
// Each node keeps serving from its own registry and SQLite file, which
// become a cache of the cluster's shared state, kept in JetStream
// key-value buckets:
//
//   - xzhub_state: every device's stored record (d.<id>), its tool list's
//     content hash (t.<id>) with each distinct list stored once (s.<hash>),
//     and its IoT things (i.<id>.<thing>); trust decisions (a.<id>),
//     OAuth clients and grants (oc., og.), and the hub's people: users,
//     homes and users' tokens (au., ah., at.; accounts.go). A node writes a change there
//     before its own store, with compare-and-set: a write that raced
//     another node's is merged field by field (a rename on one node and a
//     firmware report on another both survive) and retried. Every node
//     watches the bucket and applies what the others wrote.
//   - xzhub_presence: device → the node holding its connection.
//   - xzhub_nodes: node leases (a key per node that expires unless
//     renewed), not per-device heartbeats.
//
// A device connected to another node appears on every node as online,
// through a link whose calls go to that node as NATS requests on the
// device's own subject (xzhub.dev.<id>); "no responders" means the
// connection is gone. Audio never crosses nodes: a conversation stays on
// the node the device talks to.
//
// When a node dies it falls silent (liveness.go), or at the latest its
// lease expires; the other nodes drop its devices'
// links (calls in flight fail with device_disconnected) and its presence
// entries. Its devices reconnect to any node and are served from the
// shared cache at once. A device that shows up on a second node while the
// first still holds it is the second's: the presence bucket orders the
// claims, the older holder closes its connection, and a node that hears
// of a claim after its own newer one ignores it.
package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
)

// Options configures a Node.
type Options struct {
	// Name identifies this hub node in the cluster; unique, and kept
	// across restarts if possible (the default is host and port).
	Name string
	// Replicas of the shared buckets (1, or 3 for a cluster that survives
	// the loss of a NATS node).
	Replicas int
	// LeaseTTL is how long a node counts as alive after its last renewal
	// (default 15 s, long enough to ride out a JetStream leader election; renewed every third of it).
	LeaseTTL time.Duration
	// ChatTTL is how long the agent's conversations are kept without use
	// (default 1 h, the agent's default).
	ChatTTL time.Duration
	Logger  *slog.Logger
}

// Node is this hub's membership of the cluster.
type Node struct {
	name  string
	nc    *nats.Conn
	state jetstream.KeyValue
	pres  jetstream.KeyValue
	nodes jetstream.KeyValue
	chat  jetstream.KeyValue // the agent's conversations (chat.go)
	log   *slog.Logger
	ttl   time.Duration

	reg           *registry.Registry // set by Start
	trust         TrustService       // set by ServeTrust
	trustLocal    TrustStore         // set by TrustStore
	oauth         OAuthService       // set by ServeOAuth
	oauthLocal    OAuthStore         // set by OAuthStore
	accounts      AccountsService    // set by ServeAccounts
	accountsLocal AccountsStore      // set by AccountsStore
	services      ServicesManager    // set by ServeServices (under mu)
	servicesLocal ServicesStore      // set by ServicesStore (under mu)

	// settingsLocal and settingsReload are set by SettingsStore and
	// ServeSettings (under mu).
	settingsLocal  SettingsStore
	settingsReload SettingsReloader

	js          jetstream.JetStream
	history     jetstream.Stream
	hist        history
	local       LocalStore // this node's own store (set by Store)
	stopHistory func()     // set by Start
	serviceSubs []*nats.Subscription

	mu   sync.Mutex
	seen map[string]seenValue // state key → the newest revision this node has (applied or written)

	rmu      sync.Mutex
	remote   map[string]*remoteLink        // device id → link through another node
	subs     map[string]*nats.Subscription // device id → its subject, while connected here
	claimed  map[string]uint64             // device id → revision of this node's presence claim
	removed  map[string]uint64             // device id → revision of the removal of this node's claim, until claimed again
	alive    map[string]bool               // node name → counted alive (leased, not silent)
	leased   map[string]bool               // node name → its lease, as last seen
	heard    map[string]time.Time          // node name → its last heartbeat (liveness.go)
	released func(id, transport string)    // set by OnReleased
	changed  func()                        // set by OnMembership
	waiting  map[string]pending            // device id → a claim that came before the device's record

	stateW, presW, nodesW *watched // the buckets as this node follows them
	beatWake              chan struct{}
	judging               sync.Mutex
	connected             atomic.Int64 // unix ns when the NATS connection was last (re)made

	presence      *queue        // this node's presence news, in order
	presenceEnded chan struct{} // closed when presenceLoop has written the last news
	applyQ        chan jetstream.KeyValueEntry

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type seenValue struct {
	rev     uint64
	val     []byte
	deleted bool
}

// Bucket names.
const (
	stateBucket    = "xzhub_state"
	presenceBucket = "xzhub_presence"
	nodesBucket    = "xzhub_nodes"
)

// Open joins the cluster over nc: it creates the shared buckets if they do
// not exist. Start begins serving.
func Open(ctx context.Context, nc *nats.Conn, o Options) (*Node, error) {
	if o.Name == "" {
		return nil, errors.New("cluster: a node needs a name")
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 15 * time.Second
	}
	if o.ChatTTL <= 0 {
		o.ChatTTL = time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var n *Node
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256), jetstream.WithPublishAsyncTimeout(10*time.Second),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) { n.retryLater(m, err) }))
	if err != nil {
		return nil, fmt.Errorf("cluster: jetstream: %w", err)
	}
	n = &Node{js: js,
		name: o.Name, nc: nc, log: o.Logger, ttl: o.LeaseTTL,
		seen: map[string]seenValue{}, remote: map[string]*remoteLink{}, subs: map[string]*nats.Subscription{},
		claimed: map[string]uint64{}, removed: map[string]uint64{}, alive: map[string]bool{}, leased: map[string]bool{}, heard: map[string]time.Time{}, waiting: map[string]pending{},
		beatWake: make(chan struct{}, 1),
		applyQ:   make(chan jetstream.KeyValueEntry, 1024),
	}
	n.presence = newQueue()
	n.hist.wake, n.hist.done = make(chan struct{}, 1), make(chan struct{})
	n.stateW = &watched{moved: make(chan struct{}, 1)}
	n.presW = &watched{moved: make(chan struct{}, 1)}
	n.nodesW = &watched{moved: make(chan struct{}, 1)}
	n.connected.Store(time.Now().UnixNano())
	nc.SetReconnectHandler(func(*nats.Conn) { // the connection moved to another NATS node
		n.connected.Store(time.Now().UnixNano())
		signal(n.stateW.moved)
		signal(n.presW.moved)
		signal(n.nodesW.moved)
	})
	buckets := []struct {
		kv  *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&n.state, jetstream.KeyValueConfig{Bucket: stateBucket, History: 1, Replicas: o.Replicas, Storage: jetstream.FileStorage,
			Description: "xiaozhi-hub: devices, tool lists, IoT things"}},
		{&n.pres, jetstream.KeyValueConfig{Bucket: presenceBucket, History: 1, Replicas: o.Replicas, Storage: jetstream.FileStorage,
			Description: "xiaozhi-hub: which node holds each device's connection"}},
		{&n.nodes, jetstream.KeyValueConfig{Bucket: nodesBucket, History: 1, Replicas: o.Replicas, Storage: jetstream.FileStorage,
			TTL: o.LeaseTTL, Description: "xiaozhi-hub: node leases"}},
		{&n.chat, jetstream.KeyValueConfig{Bucket: chatBucket, History: 1, Replicas: o.Replicas, Storage: jetstream.FileStorage,
			TTL: o.ChatTTL, MaxValueSize: chatMaxValue, MaxBytes: chatMaxBytes, Description: "xiaozhi-hub: the agent's conversations"}},
	}
	for _, b := range buckets {
		// Retried for a while: a NATS cluster elects a JetStream leader
		// some seconds after its nodes start.
		var kv jetstream.KeyValue
		err := retry(ctx, 30*time.Second, func() (err error) {
			actx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			kv, err = js.CreateOrUpdateKeyValue(actx, b.cfg)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: bucket %s: %w", b.cfg.Bucket, err)
		}
		*b.kv = kv
	}
	n.stateW.kv, n.presW.kv, n.nodesW.kv = n.state, n.pres, n.nodes
	if n.history, err = n.createHistory(ctx, js, o.Replicas); err != nil {
		return nil, fmt.Errorf("cluster: stream %s: %w", historyStream, err)
	}
	return n, nil
}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// LocalStore is this node's own store: the registry's, and where the
// other nodes' records are copied from the cluster's history stream.
type LocalStore interface {
	registry.Store
	// LogCopied is Log for records copied from message seq of the stream
	// named stream; the store commits the newest seq with them.
	LogCopied(stream string, seq uint64, calls []hub.CallRecord, events []hub.Event, done func(error)) error
	// HistoryCopied returns the newest seq of stream committed (0: none).
	HistoryCopied(ctx context.Context, stream string) (uint64, error)
}

// Store wraps this node's own store: the registry's writes go to the
// shared state first.
func (n *Node) Store(local LocalStore) registry.Store {
	n.local = local
	return &sharedStore{Store: local, n: n}
}

// Start serves: it renews the node's lease, brings the registry up to the
// shared state (and the shared state up to what only this node knew),
// then follows both buckets until Close.
func (n *Node) Start(ctx context.Context, reg *registry.Registry) error {
	n.reg = reg
	n.ctx, n.cancel = context.WithCancel(context.Background())
	// Each step is retried for a while: a node that starts while JetStream
	// elects a leader (a rolling restart) waits for it.
	const wait = 30 * time.Second
	if err := retry(ctx, wait, func() error { return n.renewLease(ctx) }); err != nil {
		return fmt.Errorf("cluster: lease: %w", err)
	}
	// Heard from its lease on: the steps below can take longer than the
	// others wait for a heartbeat (beatTimeout), and they would take this
	// node for dead meanwhile (every node of a cluster that starts on a
	// loaded machine did, 8 s into its start).
	if err := n.startBeats(); err != nil {
		return fmt.Errorf("cluster: heartbeats: %w", err)
	}
	if err := retry(ctx, wait, func() error { return n.sweep(ctx) }); err != nil {
		return fmt.Errorf("cluster: nodes: %w", err)
	}
	if err := n.syncState(ctx); err != nil {
		return fmt.Errorf("cluster: shared state: %w", err)
	}
	if n.local != nil {
		if err := n.copyHistory(ctx, n.local); err != nil {
			return fmt.Errorf("cluster: history: %w", err)
		}
	}
	n.spawn(n.applyLoop)
	// follow watches (and watches again) by itself. The leases' watch
	// sees a node that joins at once; a lease that expires leaves no
	// trace: the sweep and the heartbeats find those.
	n.spawn(func() { n.follow(n.presW, nil, n.onPresence) })
	n.spawn(func() { n.follow(n.nodesW, nil, n.onLease) })
	n.spawn(n.leaseLoop)
	n.presenceEnded = make(chan struct{})
	go func() {
		defer close(n.presenceEnded)
		n.presenceLoop()
	}()
	n.log.Info("joined the cluster", "node", n.name, "nodes", len(n.aliveNodes()))
	return nil
}

func (n *Node) spawn(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Close leaves the cluster: this node's presence claims and lease are
// removed (the other nodes then drop its devices at once instead of after
// the lease), then everything stops. Call it after the registry has closed
// its connections.
func (n *Node) Close() {
	if n.cancel == nil {
		return
	}
	n.presence.close()          // presenceLoop writes what is queued, then ends
	if n.presenceEnded != nil { // nil: Start failed before it began
		<-n.presenceEnded
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if n.stopHistory != nil {
		n.stopHistory()
	}
	select { // this node's last records reach the history
	case <-n.js.PublishAsyncComplete():
	case <-ctx.Done():
	}
	n.rmu.Lock()
	claims := n.claimed
	n.claimed = map[string]uint64{}
	for _, s := range n.subs {
		s.Unsubscribe()
	}
	for _, s := range n.serviceSubs {
		s.Unsubscribe()
	}
	n.subs = map[string]*nats.Subscription{}
	n.rmu.Unlock()
	for id, rev := range claims {
		n.pres.Delete(ctx, key(id), jetstream.LastRevision(rev))
	}
	n.nodes.Delete(ctx, key(n.name))
	n.cancel()
	n.wg.Wait()
}

// Abandon stops the node as a crash would, for failure tests: nothing is
// handed over (its claims and lease stay until the lease expires). Call it
// with NATS already unreachable.
func (n *Node) Abandon() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	if n.stopHistory != nil {
		n.stopHistory()
	}
	n.presence.close()
	if n.presenceEnded != nil {
		<-n.presenceEnded
	}
	n.wg.Wait()
	n.rmu.Lock()
	n.claimed = map[string]uint64{}
	n.rmu.Unlock()
}

// key is a device id (or node name) as a bucket key or subject token:
// base64url, which the key and subject alphabets both allow.
func key(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

func unkey(k string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(k)
	return string(b), err == nil
}

// ---- leases

type lease struct {
	Name  string    `json:"name"`
	Since time.Time `json:"since"`
}

func (n *Node) renewLease(ctx context.Context) error {
	b, _ := json.Marshal(lease{Name: n.name, Since: time.Now().UTC()})
	_, err := n.nodes.Put(ctx, key(n.name), b)
	return err
}

func (n *Node) leaseLoop() {
	renew := time.NewTicker(n.ttl / 3)
	defer renew.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.presence.done:
			return
		case <-renew.C:
			ctx, cancel := context.WithTimeout(n.ctx, n.ttl/3)
			if err := n.renewLease(ctx); err != nil {
				n.log.Warn("could not renew the node's lease", "err", err)
			}
			if err := n.sweep(ctx); err != nil {
				n.log.Warn("could not read the nodes' leases", "err", err)
			}
			n.checkLag(ctx, n.stateW)
			n.checkLag(ctx, n.presW)
			cancel()
		}
	}
}

// Nodes is how many nodes had a live lease at the last look.
func (n *Node) Nodes() int { return len(n.aliveNodes()) }

// AliveNodes are the names of the nodes alive at the last look, sorted.
func (n *Node) AliveNodes() []string {
	names := n.aliveNodes()
	slices.Sort(names)
	return names
}

// RemoteDevices is how many devices are online here through another node.
func (n *Node) RemoteDevices() int {
	n.rmu.Lock()
	defer n.rmu.Unlock()
	return len(n.remote)
}

func (n *Node) aliveNodes() []string {
	n.rmu.Lock()
	defer n.rmu.Unlock()
	var out []string
	for k := range n.alive {
		out = append(out, k)
	}
	return out
}

// sweep reads the leases, then drops what depended on nodes that have
// none any more (or have gone silent: liveness.go).
func (n *Node) sweep(ctx context.Context) error {
	keys, err := n.nodes.ListKeys(ctx)
	if err != nil {
		return err
	}
	leased := map[string]bool{}
	for k := range keys.Keys() {
		if name, ok := unkey(k); ok {
			leased[name] = true
		}
	}
	n.rmu.Lock()
	n.leased = leased
	n.rmu.Unlock()
	n.recompute(ctx)
	return nil
}

// recompute decides which nodes are alive (a lease, and not silent) and
// drops the links through the others, removing their presence claims.
func (n *Node) recompute(ctx context.Context) {
	n.judging.Lock() // the lease loop and the heartbeat loop both judge
	defer n.judging.Unlock()
	now := time.Now()
	judge := n.nc.Status() == nats.CONNECTED && now.Sub(n.connectedSince()) > beatTimeout
	n.rmu.Lock()
	alive := map[string]bool{n.name: true}
	for name := range n.leased {
		if !judge || !n.silentLocked(name, now) {
			alive[name] = true
		} else if n.alive[name] {
			n.log.Warn("hub node silent: taken for dead", "node", name, "silentFor", now.Sub(n.lastHeardLocked(name)).Round(time.Second))
		}
	}
	changed := !maps.Equal(alive, n.alive)
	n.alive = alive
	var dead []*remoteLink
	for _, l := range n.remote {
		if !alive[l.node] {
			dead = append(dead, l)
		}
	}
	n.rmu.Unlock()
	for _, l := range dead {
		n.log.Info("node gone: its device is offline until it reconnects", "device", l.id, "node", l.node)
		reason := "the hub node " + l.node + " holding the device's connection stopped answering"
		n.dropRemote(l, reason)
		if e, err := n.pres.Get(ctx, key(l.id)); err == nil {
			var p claim
			if json.Unmarshal(e.Value(), &p) == nil && p.Node == l.node {
				if n.pres.Delete(ctx, key(l.id), jetstream.LastRevision(e.Revision())) == nil {
					// The node that removes the claim (one does: compare
					// and set) records the device's going, which its dead
					// holder could not.
					n.reg.RecordOnly(hub.EventOffline, l.id, map[string]string{"reason": reason})
				}
			}
		}
		n.releasedBy(l)
	}
	if changed {
		n.membershipChanged()
	}
}

// onLease notes a node that joined or left (a lease written or deleted).
func (n *Node) onLease(e jetstream.KeyValueEntry) {
	name, ok := unkey(e.Key())
	if !ok || name == n.name {
		return
	}
	n.rmu.Lock()
	if e.Operation() == jetstream.KeyValuePut {
		n.leased[name] = true
		if t := e.Created(); t.After(n.heard[name]) {
			n.heard[name] = t // it was running when it wrote its lease
		}
	} else {
		delete(n.leased, name)
	}
	n.rmu.Unlock()
	signal(n.beatWake)
}

// leaseExists reads a node's lease (a node that started after the last
// sweep), and notes it.
func (n *Node) leaseExists(node string) bool {
	ctx, cancel := context.WithTimeout(n.ctx, 2*time.Second)
	defer cancel()
	if _, err := n.nodes.Get(ctx, key(node)); err != nil {
		return false
	}
	n.rmu.Lock()
	n.alive[node], n.leased[node] = true, true
	n.heard[node] = time.Now() // it claimed a device: it is running
	n.rmu.Unlock()
	return true
}

func (n *Node) isAlive(node string) bool {
	n.rmu.Lock()
	defer n.rmu.Unlock()
	return n.alive[node]
}

// retry runs f until it succeeds, ctx ends or d has passed.
func retry(ctx context.Context, d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
