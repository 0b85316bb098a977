package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/iot"
)

// Conn is a live device connection, as the registry uses it. Package session
// implements it. Errors are *hub.Error values: ETIMEOUT, EDEVICE (the device
// answered with an error), EGONE (the connection ended during the call).
type Conn interface {
	CallTool(ctx context.Context, name string, args json.RawMessage) (hub.CallResult, error)
	SendIoT(ctx context.Context, cmds []hub.IoTCommand) error
	// Close ends the connection, telling the device why where possible.
	Close(reason string)
}

// ConnectInfo is what a device told the hub when it connected.
type ConnectInfo struct {
	DeviceID        string
	ClientID        string
	ProtocolVersion int
	Features        json.RawMessage
	MCP             bool
	Transport       string // "websocket" or "mqtt"
	// Node, when set, is the hub node (of a cluster) that holds the
	// device's connection: the link's Conn forwards to it. The device's
	// cached fields and tools are kept as they are (they come from the
	// cluster's shared state), not replaced from what this info says.
	Node string
}

// Link is one connection's handle on its device entry. The session reports
// what the device says through it, and calls Disconnect when it ends.
type Link struct {
	r    *Registry
	e    *entry
	id   string
	conn Conn
}

// Connect registers a live connection for a device that sent its hello,
// creating the device if it is new. It does no I/O, so the session can call
// it before answering the hello (the firmware waits only 10 s); Save
// persists the device afterwards. An earlier connection of the same device
// is closed: a device has one live connection. A cached tool list is served
// at once, marked stale until SetTools.
func (r *Registry) Connect(info ConnectInfo, c Conn) *Link {
	now := r.opts.Now()
	e, _ := r.lockedEntry(info.DeviceID, hub.Device{ID: info.DeviceID, FirstSeen: now, Aliases: []string{}})
	old := e.link
	l := &Link{r: r, e: e, id: info.DeviceID, conn: c}
	r.setLinkLocked(e, l, info.Node)
	if info.Node == "" {
		e.dev.ClientID = info.ClientID
		e.dev.ProtocolVersion = info.ProtocolVersion
		e.dev.Features = info.Features
		e.dev.MCP = info.MCP
		e.dev.LastSeen = now
		e.stale = info.MCP // until the device's list is fetched again
		e.failed = ""
	}
	e.dev.Transport = info.Transport
	view := r.viewLocked(e)
	e.mu.Unlock()
	if r.opts.Presence != nil {
		r.opts.Presence(info.DeviceID, true, info.Node)
	}

	if old != nil {
		old.conn.Close("replaced by a newer connection from the same device")
	}
	if info.Node != "" {
		r.echo(hub.EventOnline, info.DeviceID, view)
	} else {
		r.publish(hub.EventOnline, info.DeviceID, view)
	}
	return l
}

// Save persists the device's identity and connection metadata, after the
// device's writes queued before it.
func (l *Link) Save(ctx context.Context) error { return l.saveDevice(ctx) }

// SaveLater persists the device's identity and connection metadata in the
// background (in order with its other writes; failures are logged), so
// that nothing the device waits for waits on the store. Disconnect and
// Registry.Close write whatever is still queued.
func (l *Link) SaveLater() { l.saveLater() }

// liveLocked reports whether l is still the device's current connection (a
// newer connection, or a delete, makes an old link's reports moot); l.e.mu
// is held.
func (l *Link) liveLocked() bool { return l.e.link == l && !l.e.gone }

// supersededLocked reports whether a newer connection or a delete has
// replaced l. A link whose device merely went offline is not superseded:
// what the device said before hanging up is still the newest news. l.e.mu
// is held.
func (l *Link) supersededLocked() bool {
	return l.e.gone || (l.e.link != nil && l.e.link != l)
}

// writeNow runs one store write for the device, serialised with its other
// writes, and not at all once the device has been deleted (so that a late
// write cannot bring a deleted device back). Writes reach it through the
// device's queue (writes.go), which keeps their order.
func (l *Link) writeNow(op func() error) error {
	l.e.saveMu.Lock()
	defer l.e.saveMu.Unlock()
	l.e.mu.Lock()
	gone := l.e.gone
	l.e.mu.Unlock()
	if gone {
		return nil
	}
	return op()
}

func (l *Link) saveDevice(ctx context.Context) error {
	return l.write(func() error { return l.storeDevice(ctx) })
}

// storeDevice writes the device row; call it through write or writeNow.
func (l *Link) storeDevice(ctx context.Context) error {
	l.e.mu.Lock()
	d := l.e.dev // the newest state, taken under saveMu
	l.e.mu.Unlock()
	if err := l.r.store.SaveDevice(ctx, d); err != nil {
		return fmt.Errorf("save device %s: %w", l.id, err)
	}
	return nil
}

// SetServerInfo records the board and firmware from the initialize reply:
// in memory at once, in the store in the background (SaveLater), so that
// discovery goes on to tools/list without waiting for a commit.
func (l *Link) SetServerInfo(board, firmware string) {
	l.e.mu.Lock()
	l.e.dev.Board, l.e.dev.Firmware = board, firmware
	l.e.mu.Unlock()
	l.saveLater()
}

// SetTools replaces the device's tool list with a complete one just fetched,
// clears the stale mark, and returns what changed. The list is stored
// when it returns, and tools_changed published.
func (l *Link) SetTools(ctx context.Context, tools []hub.Tool) (hub.ToolChange, error) {
	u := l.applyTools(tools)
	if u == nil {
		return hub.ToolChange{}, nil
	}
	if err := l.write(func() error { return u.save(ctx) }); err != nil {
		return u.change, err
	}
	u.publish()
	return u.change, nil
}

// SetToolsLater is SetTools with the write in the background: the list
// is served from memory at once, stored after the device's earlier writes
// (failures are logged, as SaveLater's), and tools_changed published once
// it is, so that discovery does not wait for a commit. Disconnect and
// Registry.Close write whatever is still queued.
func (l *Link) SetToolsLater(tools []hub.Tool) hub.ToolChange {
	u := l.applyTools(tools)
	if u == nil {
		return hub.ToolChange{}
	}
	l.writeLater("tools", u.save, u.publish)
	return u.change
}

// toolsUpdate is a tool list applied in memory, to be stored and then
// announced.
type toolsUpdate struct {
	l      *Link
	hash   string
	tools  []hub.Tool
	change hub.ToolChange
}

// applyTools puts tools in memory, or returns nil when nothing is to be
// stored (the link is superseded, or the list is the cached one).
func (l *Link) applyTools(tools []hub.Tool) *toolsUpdate {
	r := l.r
	hash := r.hashes.hash(tools)
	tools = r.prepare(tools)
	e := l.e
	e.mu.Lock()
	if l.supersededLocked() {
		e.mu.Unlock()
		return nil
	}
	var old []hub.Tool
	if e.tools != nil {
		old = e.tools.tools
	}
	same := e.tools != nil && e.tools.hash == hash
	e.failed = ""
	if !same {
		r.release(e.tools)
		e.tools = r.intern(hash, tools)
	}
	e.stale = false
	e.mu.Unlock()
	if same {
		return nil
	}
	return &toolsUpdate{l: l, hash: hash, tools: tools, change: diffTools(old, tools)}
}

// save stores the list; call it through write or writeNow.
func (u *toolsUpdate) save(ctx context.Context) error {
	if err := u.l.r.store.SaveTools(ctx, u.l.id, u.hash, u.tools); err != nil {
		return fmt.Errorf("save tools of %s: %w", u.l.id, err)
	}
	return nil
}

// publish announces the stored list.
func (u *toolsUpdate) publish() {
	u.l.r.publishToolsChanged(u.l.id, u.change, len(u.tools), u.hash, u.l.r.publish)
}

// publishToolsChanged publishes tools_changed: what changed, how many
// tools the device has now, and the list's hash.
func (r *Registry) publishToolsChanged(id string, change hub.ToolChange, count int, hash string, publish func(string, string, any)) {
	publish(hub.EventToolsChanged, id, struct {
		hub.ToolChange
		Count int    `json:"count"`
		Hash  string `json:"hash"`
	}{change, count, hash})
}

// SetPartialTools handles a tool list the device could not give in full
// (a page failed after others were read; asking again gives the same
// list). A cached list is kept: it is the better guess. A device with no
// cache gets what could be read. It reports whether tools was applied.
// The caller records the failure itself (ToolsFailed).
func (l *Link) SetPartialTools(ctx context.Context, tools []hub.Tool) (change hub.ToolChange, applied bool, err error) {
	if l.hasTools() {
		return hub.ToolChange{}, false, nil
	}
	change, err = l.SetTools(ctx, tools)
	return change, true, err
}

// SetPartialToolsLater is SetPartialTools with the write in the
// background, as SetToolsLater's.
func (l *Link) SetPartialToolsLater(tools []hub.Tool) (change hub.ToolChange, applied bool) {
	if l.hasTools() {
		return hub.ToolChange{}, false
	}
	return l.SetToolsLater(tools), true
}

// hasTools reports whether the device has a tool list that is not empty.
func (l *Link) hasTools() bool {
	l.e.mu.Lock()
	defer l.e.mu.Unlock()
	return l.e.tools != nil && len(l.e.tools.tools) > 0
}

// DiscoveryFailure is one failed attempt at a discovery step.
type DiscoveryFailure struct {
	Step    string        // "initialize" or "tools/list"
	Attempt int           // from 1
	Err     error         // what went wrong
	RetryIn time.Duration // the wait before the next attempt; 0: the hub gave up
}

// ToolsFailed records that fetching the tool list failed, in the device's
// record (ToolsError, until the list is fetched) and as a tools_error
// event; the cached list (if any) stays, still marked stale.
func (l *Link) ToolsFailed(f DiscoveryFailure) {
	msg := fmt.Sprintf("%s attempt %d failed: %v", f.Step, f.Attempt, f.Err)
	data := map[string]any{"error": f.Err.Error(), "step": f.Step, "attempt": f.Attempt}
	if f.RetryIn > 0 {
		msg += fmt.Sprintf("; retrying in %v", f.RetryIn)
		data["retryInMs"] = f.RetryIn.Milliseconds()
	} else {
		msg += "; gave up until the device reconnects or reports a tool change"
		data["gaveUp"] = true
	}
	l.e.mu.Lock()
	if l.liveLocked() {
		l.e.failed = msg
	}
	l.e.mu.Unlock()
	data["message"] = msg
	l.r.publish(hub.EventToolsError, l.id, data)
}

// DescribeThings adds or replaces IoT things by name (firmware sends one
// descriptor per message, and may send a thing again).
func (l *Link) DescribeThings(ctx context.Context, descs []hub.Thing) error {
	r := l.r
	saved := make([]hub.Thing, 0, len(descs))
	now := r.opts.Now()
	l.e.mu.Lock()
	for _, d := range descs {
		t := iot.Describe(d, l.e.things[d.Name])
		if early := l.e.early.Take(t.Name); early != nil {
			iot.MergeState(&t, early, now) // states that came first
		}
		l.e.things[t.Name] = &t
		saved = append(saved, iot.Clone(t))
	}
	l.e.mu.Unlock()
	var errs []error
	for _, t := range saved {
		if err := l.write(func() error { return r.store.SaveThing(ctx, l.id, t) }); err != nil {
			errs = append(errs, fmt.Errorf("save thing %s of %s: %w", t.Name, l.id, err))
		}
		r.publish(hub.EventIoTChanged, l.id, map[string]any{"thing": t.Name, "descriptor": true})
	}
	return errors.Join(errs...)
}

// ThingState is a state report for one thing.
type ThingState struct {
	Name  string
	State map[string]json.RawMessage
}

// ReportStates merges full or delta states into the cached things. The
// state of a thing with no descriptor yet is kept aside (bounded, see
// iot.Early) and merged when its descriptor arrives.
func (l *Link) ReportStates(ctx context.Context, states []ThingState) error {
	r := l.r
	now := r.opts.Now()
	type changed struct {
		thing  hub.Thing
		fields []string
	}
	var out []changed
	var dropped []string
	l.e.mu.Lock()
	for _, s := range states {
		t := l.e.things[s.Name]
		if t == nil {
			if !l.e.early.Keep(s.Name, s.State) {
				dropped = append(dropped, s.Name)
			}
			continue
		}
		if fields := iot.MergeState(t, s.State, now); len(fields) > 0 {
			out = append(out, changed{iot.Clone(*t), fields})
		}
	}
	l.e.mu.Unlock()
	var errs []error
	for _, c := range out {
		if err := l.write(func() error { return r.store.SaveThing(ctx, l.id, c.thing) }); err != nil {
			errs = append(errs, fmt.Errorf("save state of %s.%s: %w", l.id, c.thing.Name, err))
		}
		changes := map[string]json.RawMessage{}
		for _, f := range c.fields {
			changes[f] = c.thing.State[f]
		}
		r.publish(hub.EventIoTChanged, l.id, map[string]any{"thing": c.thing.Name, "state": changes})
	}
	if len(dropped) > 0 {
		errs = append(errs, fmt.Errorf("states of undescribed things %v of %s dropped: more than %d things or %d values wait for a descriptor",
			dropped, l.id, iot.MaxEarlyThings, iot.MaxEarlyValues))
	}
	return errors.Join(errs...)
}

// Event records something the device said that the hub does not act on
// (listen, abort, unknown types, notifications) or a protocol error, within
// the device's bounds of rate and size (devevents.go).
func (l *Link) Event(typ string, data any) {
	m := l.r.opts.Metrics
	if !l.e.budget.take(l.r.opts.Now()) {
		m.DeviceEventLimited("dropped")
		return
	}
	data, truncated := boundEventData(data)
	if truncated {
		m.DeviceEventLimited("truncated")
	}
	l.r.publish(typ, l.id, data)
}

// setLinkLocked makes l (nil: none) e's live connection, held by node (""
// for this hub), keeping linked and the online count with it; e.mu is
// held.
func (r *Registry) setLinkLocked(e *entry, l *Link, node string) {
	switch {
	case e.link == nil && l != nil:
		r.online.Add(1)
	case e.link != nil && l == nil:
		r.online.Add(-1)
	}
	e.link, e.node = l, node
	e.linked.Store(l != nil)
}

// Disconnect marks the device offline, unless a newer connection has taken
// over already.
func (l *Link) Disconnect(ctx context.Context, reason string) {
	r := l.r
	l.e.mu.Lock()
	if !l.liveLocked() {
		l.e.mu.Unlock()
		return
	}
	node := l.e.node
	r.setLinkLocked(l.e, nil, "")
	if node == "" {
		l.e.dev.LastSeen = r.opts.Now()
	}
	l.e.mu.Unlock()
	if r.opts.Presence != nil {
		r.opts.Presence(l.id, false, node)
	}
	if node == "" { // a remote link's device is saved by the node that held it
		if err := l.saveDevice(ctx); err != nil {
			r.log.Warn("could not save device at disconnect", "device", l.id, "err", err)
		}
	}
	if node != "" {
		r.echo(hub.EventOffline, l.id, map[string]string{"reason": reason})
	} else {
		r.publish(hub.EventOffline, l.id, map[string]string{"reason": reason})
	}
}
