package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/xiaozhi-hub/hub"
)

// A service's program connects to one node; its calls may be made on any
// (docs/services.md, "In a cluster"). The node holding the connection
// answers on the service's subject, in one queue group, so that a program
// connected to two nodes at once runs each call once; the node asked
// checks the caller's rights and records the call, as for a device.

func serviceSubject(name string) string { return "xzhub.svc." + key(name) }

// serviceQueue is the queue group every holder answers in.
const serviceQueue = "xzhub.svc"

// A node's subscription reaches the other nodes' NATS servers through the
// route a moment after it is made, and its end a moment after it ends;
// the state bucket (JetStream) may tell them of a service's connection
// sooner. So a call that finds no node answering asks again for up to
// interestWait before it is offline, and a node keeps answering a service
// whose program has left it (offline, at once) for offlineLinger before it
// unsubscribes: a call forwarded to it in between would otherwise wait
// for its deadline.
const (
	interestWait  = 300 * time.Millisecond
	interestPoll  = 50 * time.Millisecond
	offlineLinger = 2 * time.Second
)

// HeldServices is the services' Manager as a node answers the other
// nodes' calls with it (services.Manager).
type HeldServices interface {
	// Held names the endpoint services connected here.
	Held() []string
	// CallHeld runs a call on the connection held here.
	CallHeld(ctx context.Context, name, tool string, args []byte) (hub.CallResult, error)
	Generation() uint64
	Changed(since uint64) <-chan struct{}
}

// ServiceCalls makes the calls to services connected to other nodes
// (services.Elsewhere).
type ServiceCalls struct{ n *Node }

// ServiceCalls returns the node's services.Elsewhere.
func (n *Node) ServiceCalls() ServiceCalls { return ServiceCalls{n} }

// Call asks the node holding service's connection to run tool; EOFFLINE
// when no node holds it.
func (c ServiceCalls) Call(ctx context.Context, service, tool string, args []byte) (hub.CallResult, error) {
	req := request{Op: "call", Tool: tool, Arguments: args}
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMs = max(1, time.Until(dl).Milliseconds())
	}
	b, err := json.Marshal(req)
	if err != nil {
		return hub.CallResult{}, err
	}
	m, err := c.n.nc.RequestWithContext(ctx, serviceSubject(service), b)
	for wait := interestWait; errors.Is(err, nats.ErrNoResponders) && wait > 0; wait -= interestPoll {
		// No node answers on the subject yet: a program that has just
		// connected to another node is known here through the state
		// bucket a moment before its node's subscription has crossed
		// the route.
		select {
		case <-ctx.Done():
			return hub.CallResult{}, hub.Errorf(hub.ETIMEOUT, "service %q (on another hub node) did not answer in time", service)
		case <-time.After(interestPoll):
		}
		m, err = c.n.nc.RequestWithContext(ctx, serviceSubject(service), b)
	}
	switch {
	case err == nil:
	case errors.Is(err, nats.ErrNoResponders):
		return hub.CallResult{}, hub.Errorf(hub.EOFFLINE, "service %q is connected to no hub node", service)
	case errors.Is(err, context.DeadlineExceeded):
		return hub.CallResult{}, hub.Errorf(hub.ETIMEOUT, "service %q (on another hub node) did not answer in time", service)
	default:
		return hub.CallResult{}, fmt.Errorf("cluster request for service %s: %w", service, err)
	}
	var r reply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return hub.CallResult{}, hub.Errorf(hub.EINTERNAL, "a hub node answered a call to service %q with malformed JSON: %v", service, err)
	}
	return r.result(func() string { return fmt.Sprintf("a call to service %q", service) })
}

// ServeServiceCalls answers the other nodes' calls to the services
// connected here, following m's changes until the node closes.
func (n *Node) ServeServiceCalls(m HeldServices) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		subs := map[string]*nats.Subscription{}
		left := map[string]time.Time{} // subscribed, no longer held: answered offline until then
		defer func() {
			for _, s := range subs {
				_ = s.Unsubscribe()
			}
		}()
		for {
			gen := m.Generation()
			held := map[string]bool{}
			for _, name := range m.Held() {
				held[name] = true
				delete(left, name)
				if subs[name] != nil {
					continue
				}
				s, err := n.nc.QueueSubscribe(serviceSubject(name), serviceQueue, n.serveService(m, name))
				if err != nil {
					n.log.Warn("could not answer the other nodes' calls to a service connected here", "service", name, "err", err)
					continue
				}
				subs[name] = s
			}
			now := time.Now()
			next := time.Duration(-1) // until the next lingering subscription ends
			for name, s := range subs {
				if held[name] {
					continue
				}
				until, ok := left[name]
				if !ok {
					until = now.Add(offlineLinger)
					left[name] = until
				}
				if d := until.Sub(now); d > 0 {
					if next < 0 || d < next {
						next = d
					}
					continue
				}
				_ = s.Unsubscribe()
				delete(subs, name)
				delete(left, name)
			}
			var expire <-chan time.Time
			var timer *time.Timer
			if next >= 0 {
				timer = time.NewTimer(next)
				expire = timer.C
			}
			select {
			case <-n.ctx.Done():
				return
			case <-m.Changed(gen):
			case <-expire:
			}
			if timer != nil {
				timer.Stop()
			}
		}
	}()
}

// serveService answers calls to service name, each on its own goroutine
// (a call may take minutes).
func (n *Node) serveService(m HeldServices, name string) nats.MsgHandler {
	return func(msg *nats.Msg) {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			var req request
			if err := json.Unmarshal(msg.Data, &req); err != nil || req.Op != "call" {
				respond(msg, reply{Error: &replyError{Code: hub.EBADREQUEST, Message: "malformed cluster request for a service"}})
				return
			}
			ctx, cancel := context.WithTimeout(n.ctx, req.timeout())
			defer cancel()
			var out reply
			if res, err := m.CallHeld(ctx, name, req.Tool, req.Arguments); err != nil {
				out.Error = toReplyError(err)
			} else {
				out.Result = &res
			}
			respond(msg, out)
		}()
	}
}
