package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/iot"
)

// The methods here apply what another hub node of a cluster changed
// (package cluster reads it from the shared state): written to the local
// store and served like the registry's own changes, with the same events.

// Stored is the part of a device the store keeps and the cluster shares:
// d without what the registry derives or only this connection knows.
func Stored(d hub.Device) hub.Device {
	d.Online, d.Node, d.Transport = false, "", ""
	d.ToolCount, d.ThingCount, d.ToolsHash, d.ToolsStale, d.ToolsError = 0, 0, "", false, ""
	if d.Aliases == nil {
		d.Aliases = []string{}
	}
	return d
}

// Reported is d with what a device reports about itself on its connection
// (its hello's client id, framing, features and MCP, when it was last
// seen, its board and firmware from initialize) taken from from: the node
// holding the device's connection is the authority on those.
func Reported(d, from hub.Device) hub.Device {
	d.ClientID, d.ProtocolVersion, d.Features, d.MCP = from.ClientID, from.ProtocolVersion, from.Features, from.MCP
	d.LastSeen, d.Board, d.Firmware = from.LastSeen, from.Board, from.Firmware
	return d
}

// heldReportedLocked is d with the device's reports from e's record when
// its connection is held here: a report may be in memory with its write
// still queued, and another node's record, written without it, must not
// take it back. e.mu is held.
func heldReportedLocked(d hub.Device, e *entry) hub.Device {
	if e.link == nil || e.node != "" {
		return d
	}
	return Reported(d, e.dev)
}

// Apply makes the device's stored fields those of d, creating the device
// if it is new here. It publishes device_updated when something changed.
// current, if not nil, is asked with the device's writes held off, just
// before d is written: false means d has been overtaken by a newer change
// (made here meanwhile), and nothing is applied. When the device's
// connection is held here, its reports are kept (see Reported).
func (r *Registry) Apply(ctx context.Context, d hub.Device, current func() bool) error {
	d = Stored(d)
	e, created := r.lockedEntry(d.ID, hub.Device{ID: d.ID, Aliases: []string{}})
	e.mu.Unlock()
	ok := !created
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	e.mu.Lock()
	d = heldReportedLocked(d, e)
	same := ok && reflect.DeepEqual(Stored(e.dev), d)
	e.mu.Unlock()
	if same || (current != nil && !current()) {
		return nil
	}
	if err := r.store.SaveDevice(ctx, d); err != nil {
		return fmt.Errorf("save device %s: %w", d.ID, err)
	}
	e.mu.Lock()
	transport, before := e.dev.Transport, e.dev.Home
	e.dev = heldReportedLocked(d, e) // a report may have come during the write
	e.dev.Transport = transport
	view := r.viewLocked(e)
	e.mu.Unlock()
	if ok {
		r.left(d.ID, before, view.Home)
	}
	r.echo(hub.EventDeviceUpdated, d.ID, view)
	return nil
}

// ApplyTools makes tools (whose content hash is hash) the device's cached
// list, as fresh, and publishes tools_changed.
func (r *Registry) ApplyTools(ctx context.Context, id, hash string, tools []hub.Tool) error {
	tools = r.prepare(tools)
	e := r.entryLocked(id)
	if e == nil {
		return notFound(id)
	}
	if e.tools != nil && e.tools.hash == hash {
		e.stale = false
		e.mu.Unlock()
		return nil
	}
	var old []hub.Tool
	if e.tools != nil {
		old = e.tools.tools
	}
	r.release(e.tools)
	e.tools = r.intern(hash, tools)
	e.stale, e.failed = false, ""
	e.mu.Unlock()
	e.saveMu.Lock()
	err := r.store.SaveTools(ctx, id, hash, tools)
	e.saveMu.Unlock()
	if err != nil {
		return fmt.Errorf("save tools of %s: %w", id, err)
	}
	r.publishToolsChanged(id, diffTools(old, tools), len(tools), hash, r.echo)
	return nil
}

// ApplyThing adds or replaces one IoT thing (descriptor and state).
func (r *Registry) ApplyThing(ctx context.Context, id string, t hub.Thing) error {
	e := r.entryLocked(id)
	if e == nil {
		return notFound(id)
	}
	if cur := e.things[t.Name]; cur != nil && reflect.DeepEqual(*cur, t) {
		e.mu.Unlock()
		return nil
	}
	c := iot.Clone(t)
	e.things[t.Name] = &c
	e.mu.Unlock()
	e.saveMu.Lock()
	err := r.store.SaveThing(ctx, id, t)
	e.saveMu.Unlock()
	if err != nil {
		return fmt.Errorf("save thing %s of %s: %w", t.Name, id, err)
	}
	r.echo(hub.EventIoTChanged, id, map[string]any{"thing": t.Name, "state": t.State})
	return nil
}

// Forward runs a tool on a device connected to this hub itself, for
// another node of the cluster, which has checked and will record the call.
// A device that is not connected here is EOFFLINE.
func (r *Registry) Forward(ctx context.Context, id, tool string, args json.RawMessage) (hub.CallResult, error) {
	conn, err := r.localConn(id)
	if err != nil {
		return hub.CallResult{}, err
	}
	return conn.CallTool(ctx, tool, args)
}

// ForwardIoT sends IoT commands to a device connected to this hub itself,
// for another node of the cluster.
func (r *Registry) ForwardIoT(ctx context.Context, id string, cmds []hub.IoTCommand) error {
	conn, err := r.localConn(id)
	if err != nil {
		return err
	}
	return conn.SendIoT(ctx, cmds)
}

func (r *Registry) localConn(id string) (Conn, error) {
	e := r.entryLocked(id)
	if e == nil {
		return nil, notFound(id)
	}
	defer e.mu.Unlock()
	if e.link == nil || e.node != "" {
		return nil, offline(id, e.dev.Transport)
	}
	return e.link.conn, nil
}

// AnnounceCalls tells this node's subscribers (the event stream) of calls
// another node made, copied from the cluster's history, as the
// call_finished events that node sent its own: each names its node, and
// the call history lists it under the same node and id. They are neither
// recorded here (that node recorded them) nor counted.
func (r *Registry) AnnounceCalls(recs []hub.CallRecord) {
	for _, rec := range recs {
		r.bus.publish(hub.Event{Type: hub.EventCallFinished, DeviceID: rec.DeviceID, Time: r.opts.Now(), Data: rec, Node: rec.Node,
			By: rec.By, Home: r.homeOf(rec.DeviceID)})
	}
}
