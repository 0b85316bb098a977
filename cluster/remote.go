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

// remoteConn is registry.Conn for a device connected to another node: each
// call is a NATS request to the device's subject, answered by that node.
type remoteConn struct {
	n        *Node
	id, node string
	ctx      context.Context // ends when the link does: calls in flight fail
	cancel   context.CancelFunc
}

func newRemoteConn(n *Node, id, node string) *remoteConn {
	ctx, cancel := context.WithCancel(n.ctx)
	return &remoteConn{n: n, id: id, node: node, ctx: ctx, cancel: cancel}
}

func (c *remoteConn) end() { c.cancel() }

// Close is the registry ending the link (a newer one replaced it, or the
// device was deleted): the connection itself belongs to the other node.
func (c *remoteConn) Close(string) { c.cancel() }

func (c *remoteConn) CallTool(ctx context.Context, name string, args json.RawMessage) (hub.CallResult, error) {
	var r reply
	if err := c.do(ctx, request{Op: "call", Tool: name, Arguments: args}, &r); err != nil {
		return hub.CallResult{}, err
	}
	return r.result(func() string { return fmt.Sprintf("the call on %s (hub node %s)", c.id, c.node) })
}

func (c *remoteConn) SendIoT(ctx context.Context, cmds []hub.IoTCommand) error {
	var r reply
	if err := c.do(ctx, request{Op: "iot", Commands: cmds}, &r); err != nil {
		return err
	}
	return r.err()
}

func (c *remoteConn) do(ctx context.Context, req request, out *reply) error {
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMs = max(1, time.Until(dl).Milliseconds())
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	m, err := c.request(ctx, b)
	switch {
	case err == nil:
	case errors.Is(err, nats.ErrNoResponders):
		return hub.Errorf(hub.EGONE, "device %q is no longer connected to hub node %s", c.id, c.node)
	case c.ctx.Err() != nil:
		return hub.Errorf(hub.EGONE, "the hub node %s holding device %q's connection went away during the call", c.node, c.id)
	case errors.Is(err, context.DeadlineExceeded):
		return hub.Errorf(hub.ETIMEOUT, "device %q (on hub node %s) did not answer in time", c.id, c.node)
	default:
		return fmt.Errorf("cluster request to %s for %s: %w", c.node, c.id, err)
	}
	if err := json.Unmarshal(m.Data, out); err != nil {
		return hub.Errorf(hub.EINTERNAL, "hub node %s answered with malformed JSON: %v", c.node, err)
	}
	return nil
}

// noResponderRetries bound how long a request waits for the holder's
// subscription to reach this node's NATS server: a device that has just
// moved to another node is named its holder in the shared state (a
// key-value watch) a moment before the interest in its subject crosses
// the NATS routes. "No responders" means nobody received the request, so
// asking again cannot run a call twice.
var noResponderRetries = []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}

// request sends one request for the device, asking again while no node
// has the device's subject yet (within noResponderRetries and ctx).
func (c *remoteConn) request(ctx context.Context, b []byte) (*nats.Msg, error) {
	m, err := c.n.nc.RequestWithContext(ctx, subject(c.id), b)
	for _, wait := range noResponderRetries {
		if !errors.Is(err, nats.ErrNoResponders) {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		m, err = c.n.nc.RequestWithContext(ctx, subject(c.id), b)
	}
	return m, err
}
