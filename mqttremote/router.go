package mqttremote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
)

// The external broker's devices. Alone, a hub serves every device the
// broker reports. In a cluster every node hears every connect and gets
// any message through the shared subscription, but one node holds each
// device's session (package cluster, sharedbroker.go, decides which): a
// node serves the devices it owns and passes the others' messages to their
// holders.

// Nodes are the hub nodes that share the broker, as this node sees them
// (cluster.Node).
type Nodes interface {
	// Name is this node's name.
	Name() string
	// Owner is the node that should hold a device no node holds.
	Owner(deviceID string) string
	// Holder is the node holding the device's session, or "".
	Holder(deviceID string) string
	// Pass hands a device's message to the node holding the device.
	Pass(node, deviceID string, payload []byte) error
	// ServePassed calls fn with the messages other nodes pass to this one.
	ServePassed(fn func(deviceID string, payload []byte)) (stop func(), err error)
	// OnReleased and OnMembership tell of devices that lost their holder
	// and of nodes that joined or left (nil: no longer).
	OnReleased(fn func(deviceID, transport string))
	OnMembership(fn func())
}

// Sessions are the device sessions on this node (mqttlink.Link).
type Sessions interface {
	Connected(id protocol.Identity, remote, local string)
	Offer(deviceID string, payload []byte) bool
	Holds(deviceID string) bool
	Disconnected(deviceID, reason string)
}

// Router serves the broker's devices that this node is to hold and, in a
// cluster, passes the messages of the others to the node holding them.
type Router struct {
	client   *Client
	nodes    Nodes // nil: a hub alone
	sessions Sessions
	log      *slog.Logger
	now      chan struct{} // rebalance now
	unshare  func()        // set by Serve in a cluster
	out, in  atomic.Uint64 // messages passed to other nodes, and from them
}

// NewRouter returns the router of the broker cfg names; the router sets
// cfg's callbacks. nodes is nil for a hub alone. It connects nothing until
// Run.
func NewRouter(cfg Config, nodes Nodes) (*Router, error) {
	r := &Router{nodes: nodes, log: cfg.Logger, now: make(chan struct{}, 1)}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	cfg.OnConnect, cfg.OnMessage = r.connected, r.message
	cfg.OnDisconnect = func(id, reason string) { r.sessions.Disconnected(id, reason) }
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	r.client = c
	return r, nil
}

// Client is the router's client of the broker: the bus of the sessions.
func (r *Router) Client() *Client { return r.client }

// Serve makes s the sessions of the devices this node holds and, in a
// cluster, starts taking the messages other nodes pass to this one. Call
// it once, before Run.
func (r *Router) Serve(s Sessions) error {
	if s == nil {
		return errors.New("mqttremote: Serve needs sessions")
	}
	r.sessions = s
	if r.nodes == nil {
		return nil
	}
	stop, err := r.nodes.ServePassed(r.passedHere)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	r.nodes.OnReleased(r.released)
	r.nodes.OnMembership(func() { r.rebalanceNow() })
	r.unshare = func() {
		r.nodes.OnReleased(nil)
		r.nodes.OnMembership(nil)
		stop()
	}
	return nil
}

// Run serves the broker until ctx ends (after Serve). On the way out this
// node first stops taking devices from the other nodes, then leaves the
// broker: the sessions of its devices end.
func (r *Router) Run(ctx context.Context) error {
	if r.sessions == nil {
		return errors.New("mqttremote: Run before Serve")
	}
	inner, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if r.nodes != nil {
		wg.Go(func() { r.rebalance(inner) })
	}
	var err error
	wg.Go(func() { err = r.client.Run(inner) })
	<-ctx.Done()
	if r.unshare != nil {
		r.unshare()
	}
	cancel()
	wg.Wait()
	return err
}

// Passed counts the device messages passed to the node holding the device
// (out) and passed here by other nodes (in).
func (r *Router) Passed() (out, in uint64) { return r.out.Load(), r.in.Load() }

// connected: the broker reports the device connected (or its message came
// first).
func (r *Router) connected(d Device) {
	if r.nodes != nil && r.nodes.Owner(d.DeviceID) != r.nodes.Name() {
		return // its owner serves it; this node links to it when it claims it
	}
	r.serve(d)
}

// serve starts the device's session on this node.
func (r *Router) serve(d Device) {
	r.sessions.Connected(protocol.MQTTIdentity(d.ClientID, d.DeviceID), "mqtt "+d.Remote, "")
}

// message routes a message the broker gave this node. One connection
// carries every device: a session that is behind loses the message
// rather than holding up the others (Offer).
func (r *Router) message(id string, p []byte) {
	if r.nodes == nil || r.sessions.Holds(id) {
		r.sessions.Offer(id, p)
		return
	}
	to := r.nodes.Holder(id)
	if to == "" {
		to = r.nodes.Owner(id)
	}
	if to == r.nodes.Name() {
		r.passed(id, p)
		return
	}
	r.out.Add(1)
	if err := r.nodes.Pass(to, id, p); err != nil {
		r.log.Warn("could not pass a device's MQTT message to the hub node holding it", "device", id, "node", to, "err", err)
	}
}

// passedHere takes a message another node passed to this one.
func (r *Router) passedHere(id string, p []byte) {
	r.in.Add(1)
	r.passed(id, p)
}

// passed takes a device message for this node (from the broker or another
// node): the device's session gets it, starting first if this node is the
// one to hold it.
func (r *Router) passed(id string, p []byte) {
	if !r.sessions.Holds(id) {
		me, holder := r.nodes.Name(), r.nodes.Holder(id)
		if holder != "" && holder != me || holder == "" && r.nodes.Owner(id) != me {
			r.log.Debug("a passed MQTT message for a device another node holds dropped", "device", id)
			return
		}
		d, ok := r.client.Reopen(id)
		if !ok {
			d = Device{DeviceID: id}
		}
		r.serve(d)
	}
	r.sessions.Offer(id, p)
}

// released: the node holding the device released it or died. If the
// device is still at the broker, the owner among the nodes alive takes it
// over (rebalance).
func (r *Router) released(id, transport string) {
	if transport != "mqtt" {
		return
	}
	r.client.Reopen(id) // this node's session may have ended when the other took it
	r.rebalanceNow()
}

func (r *Router) rebalanceNow() {
	select {
	case r.now <- struct{}{}:
	default:
	}
}

// rebalance serves every device at the broker that no node holds and
// this node owns, when told that holders or nodes changed and every
// 10 s (a missed event costs a device no more than that).
func (r *Router) rebalance(ctx context.Context) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.now:
		}
		me := r.nodes.Name()
		for _, d := range r.client.Devices() {
			if ctx.Err() == nil && !r.sessions.Holds(d.DeviceID) && r.nodes.Holder(d.DeviceID) == "" && r.nodes.Owner(d.DeviceID) == me {
				r.log.Info("serving an MQTT device no hub node holds", "device", d.DeviceID)
				r.serve(d)
			}
		}
	}
}
