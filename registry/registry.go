// Package registry knows every device by id, whether or not it is connected:
// its metadata, its cached MCP tools and IoT things, and — while it is
// online — the live connection through which it can be called. Reads are
// served from memory; every change is written through to a durable Store, so
// that a restarted hub (even after kill -9) serves the same cache at once.
package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/iot"
	"github.com/xiaozhi-hub/hub/metrics"
	"github.com/xiaozhi-hub/hub/schema"
)

// Options configures a Registry. The zero value is usable.
type Options struct {
	Logger  *slog.Logger
	Metrics *metrics.Metrics // may be nil
	// DefaultCallTimeout applies when a call names none (default 30 s);
	// MaxCallTimeout caps what a call may ask for (default 300 s, the
	// firmware's own limit).
	DefaultCallTimeout time.Duration
	MaxCallTimeout     time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Presence, if set, hears of every connection the registry links and
	// unlinks (node "" for this hub's own, else the cluster node holding
	// it), in order, on the goroutine that made the change: it must not
	// block (package cluster queues the news).
	Presence func(deviceID string, online bool, node string)
}

// Registry is the set of all known devices. Its methods are safe for
// concurrent use. Create it with New, fill it with Load, stop it with Close.
type Registry struct {
	store Store
	opts  Options
	log   *slog.Logger
	val   *schema.Validator
	bus   *broker
	rec   *recorder
	// hashes memoizes HashTools for SetTools.
	hashes hashMemo
	// callID is the id of the last call record given out (see finish).
	callID atomic.Int64
	// gen counts the changes agents can see (generation.go).
	gen generation

	onDelete []func(ctx context.Context, id string) error
	bg       bgWrites // devices' background writes

	devices *deviceMap   // every known device (devicemap.go: the lock order)
	online  atomic.Int64 // devices with a link

	tsMu     sync.Mutex
	toolsets map[string]*toolset // by hash, shared between devices; under tsMu
}

// entry is one device. Its fields are guarded by mu, except linked
// (atomic), budget (its own lock), writes (its own lock) and saveMu,
// which serialises the device's store writes so that an older snapshot
// never overwrites a newer one.
type entry struct {
	mu     sync.Mutex
	gone   bool       // taken out of the registry (deleted, forgotten): a new entry stands for the device
	dev    hub.Device // persisted fields plus LastSeen etc.
	tools  *toolset   // nil until a tool list is known
	stale  bool
	things map[string]*hub.Thing
	link   *Link       // the live connection, nil when offline
	linked atomic.Bool // link != nil, set with it (setLinkLocked); read without mu to skip connected devices (eachLocked)
	node   string      // with link: the cluster node holding the connection, "" for this hub
	saveMu sync.Mutex
	failed string      // why discovery failed on the current connection
	early  iot.Early   // IoT states that came before their thing's descriptor
	budget eventBudget // the device's events (Link.Event)
	writes writeQueue  // the device's store writes, in order (writes.go)
}

// New returns a Registry over store. It starts nothing: Load starts
// background persistence, so call Load before serving.
func New(store Store, opts Options) *Registry {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DefaultCallTimeout <= 0 {
		opts.DefaultCallTimeout = 30 * time.Second
	}
	if opts.MaxCallTimeout <= 0 {
		opts.MaxCallTimeout = 300 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Registry{
		store:    store,
		opts:     opts,
		log:      opts.Logger,
		val:      schema.New(),
		bus:      newBroker(),
		devices:  newDeviceMap(),
		toolsets: map[string]*toolset{},
	}
	r.rec = newRecorder(store, opts.Logger, opts.Metrics)
	return r
}

// Load reads every stored device into memory. All devices start offline.
func (r *Registry) Load(ctx context.Context) error {
	snaps, err := r.store.LoadAll(ctx)
	if err != nil {
		return fmt.Errorf("load devices: %w", err)
	}
	last, err := r.store.LastCallID(ctx)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	r.callID.Store(last)
	prepared := map[string][]hub.Tool{} // by hash: marks are set once per list
	for i, s := range snaps {
		if s.ToolsHash == "" {
			continue
		}
		if p, ok := prepared[s.ToolsHash]; ok {
			snaps[i].Tools = p
			continue
		}
		snaps[i].Tools = r.prepare(s.Tools)
		prepared[s.ToolsHash] = snaps[i].Tools
	}
	for _, s := range snaps {
		e := newEntry(s.Device)
		if s.ToolsHash != "" {
			e.tools = r.intern(s.ToolsHash, s.Tools)
		}
		for i := range s.Things {
			t := s.Things[i]
			e.things[t.Name] = &t
		}
		r.devices.add(s.Device.ID, e)
	}
	r.log.Debug("registry loaded", "devices", len(snaps))
	return nil
}

// Close closes every live connection and ends event subscriptions. It does
// not close the Store, whose Close flushes the records still queued.
func (r *Registry) Close() {
	var links []*Link
	r.devices.eachLocked(false, func(e *entry) {
		if e.link != nil {
			links = append(links, e.link)
		}
	})
	for _, l := range links {
		l.conn.Close("hub shutting down")
	}
	r.bg.wait()
	r.bus.close()
	r.val.Close()
}

// EndSubscriptions closes every event subscription (ending SSE streams, so
// that an HTTP server shutdown need not wait for them). New subscriptions
// get a closed channel.
func (r *Registry) EndSubscriptions() { r.bus.close() }

// Devices returns every known device, sorted by room, name and id.
func (r *Registry) Devices() []hub.Device {
	out := make([]hub.Device, 0, r.KnownCount())
	r.devices.eachLocked(false, func(e *entry) { out = append(out, r.viewLocked(e)) })
	sortDevices(out)
	return out
}

// sortDevices sorts by room, name and id.
func sortDevices(ds []hub.Device) {
	slices.SortFunc(ds, func(a, b hub.Device) int {
		return cmp.Or(strings.Compare(a.Room, b.Room), strings.Compare(a.Name, b.Name), strings.Compare(a.ID, b.ID))
	})
}

// DevicesOf returns the devices p sees (Principal.Sees; nil: every
// device), sorted as Devices sorts them. Devices p does not see are not
// copied.
func (r *Registry) DevicesOf(p *hub.Principal) []hub.Device {
	if p == nil || p.Admin {
		return r.Devices()
	}
	out := make([]hub.Device, 0, 16)
	r.devices.eachLocked(false, func(e *entry) {
		if p.Sees(e.dev.Home) {
			out = append(out, r.viewLocked(e))
		}
	})
	sortDevices(out)
	return out
}

// DeviceAs returns device id as p sees it: a device p does not see is
// the same ENOTFOUND error, with the same message, as an unknown one.
func (r *Registry) DeviceAs(p *hub.Principal, id string) (hub.Device, error) {
	d, err := r.Device(id)
	if err == nil && p != nil && !p.Sees(d.Home) {
		return hub.Device{}, notFound(id)
	}
	return d, err
}

// Device returns one device, or an ENOTFOUND error.
func (r *Registry) Device(id string) (hub.Device, error) {
	e := r.entryLocked(id)
	if e == nil {
		return hub.Device{}, notFound(id)
	}
	defer e.mu.Unlock()
	return r.viewLocked(e), nil
}

// KnownCount is how many devices the hub knows, online or not.
func (r *Registry) KnownCount() int { return int(r.devices.count.Load()) }

// OnlineCount returns how many devices are connected.
func (r *Registry) OnlineCount() int { return int(r.online.Load()) }

// Tools returns a device's cached tools and whether the cache is stale (the
// device reconnected and its list is being fetched again). The slice is
// shared: callers must not modify it.
func (r *Registry) Tools(id string) (tools []hub.Tool, stale bool, err error) {
	e := r.entryLocked(id)
	if e == nil {
		return nil, false, notFound(id)
	}
	defer e.mu.Unlock()
	if e.tools == nil {
		return []hub.Tool{}, e.stale, nil
	}
	return e.tools.tools, e.stale, nil
}

// Things returns a device's IoT things with their current state, by name.
func (r *Registry) Things(id string) ([]hub.Thing, error) {
	e := r.entryLocked(id)
	if e == nil {
		return nil, notFound(id)
	}
	defer e.mu.Unlock()
	out := make([]hub.Thing, 0, len(e.things))
	for _, t := range e.things {
		out = append(out, iot.Clone(*t))
	}
	slices.SortFunc(out, func(a, b hub.Thing) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdateDevice applies a person's changes (name, room, aliases).
func (r *Registry) UpdateDevice(ctx context.Context, id string, p hub.DevicePatch) (hub.Device, error) {
	if err := validatePatch(p); err != nil {
		return hub.Device{}, err
	}
	e := r.devices.get(id)
	if e == nil {
		return hub.Device{}, notFound(id)
	}
	return r.update(ctx, e, id, p)
}

// Register makes a device known before it first connects (to name it, or
// to approve it), applying p; for a known device it is UpdateDevice.
func (r *Registry) Register(ctx context.Context, id string, p hub.DevicePatch) (hub.Device, error) {
	if err := validatePatch(p); err != nil {
		return hub.Device{}, err
	}
	e, created := r.lockedEntry(id, hub.Device{ID: id, FirstSeen: r.opts.Now(), Aliases: []string{}})
	e.mu.Unlock()
	if created && p == (hub.DevicePatch{}) {
		p.Name = new(string) // write the new device even with nothing to change
	}
	d, err := r.update(ctx, e, id, p)
	if err != nil && created {
		e.mu.Lock()
		if e.link == nil {
			r.devices.removeLocked(id, e)
		}
		e.mu.Unlock()
	}
	return d, err
}

func (r *Registry) update(ctx context.Context, e *entry, id string, p hub.DevicePatch) (hub.Device, error) {
	if p == (hub.DevicePatch{}) {
		e.mu.Lock()
		defer e.mu.Unlock()
		return r.viewLocked(e), nil
	}
	e.mu.Lock()
	before := e.dev.Home
	e.mu.Unlock()
	view, err := r.mutate(ctx, e, func(d *hub.Device) { applyPatch(d, p) })
	if err != nil {
		return hub.Device{}, err
	}
	r.left(id, before, view.Home)
	r.send(hub.Event{Type: hub.EventDeviceUpdated, DeviceID: id, Data: view, Home: view.Home,
		By: hub.PrincipalFrom(ctx).Actor()}, true)
	return view, nil
}

// SetSystemInfo records the system information a known device reported at
// its OTA check (board, chip, network…). An unknown device is ENOTFOUND: the
// OTA endpoint does not create devices.
func (r *Registry) SetSystemInfo(ctx context.Context, id string, info json.RawMessage) error {
	e := r.devices.get(id)
	if e == nil {
		return notFound(id)
	}
	_, err := r.mutate(ctx, e, func(d *hub.Device) { d.SystemInfo = info })
	return err
}

// mutate changes a device durably first, then in memory, so that a failed
// write never leaves memory saying otherwise.
func (r *Registry) mutate(ctx context.Context, e *entry, change func(*hub.Device)) (hub.Device, error) {
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	e.mu.Lock()
	d := e.dev
	e.mu.Unlock()
	change(&d)
	if err := r.store.SaveDevice(ctx, d); err != nil {
		return hub.Device{}, fmt.Errorf("save device %s: %w", d.ID, err)
	}
	e.mu.Lock()
	change(&e.dev)
	view := r.viewLocked(e)
	e.mu.Unlock()
	return view, nil
}

func applyPatch(d *hub.Device, p hub.DevicePatch) {
	if p.Name != nil {
		d.Name = strings.TrimSpace(*p.Name)
	}
	if p.Room != nil {
		d.Room = strings.TrimSpace(*p.Room)
	}
	if p.Aliases != nil {
		d.Aliases = cleanAliases(*p.Aliases)
	}
	if p.Voice != nil {
		d.Voice = strings.TrimSpace(*p.Voice)
	}
	if p.Home != nil {
		d.Home = *p.Home
	}
}

// OnDelete registers f to run at the start of every DeleteDevice (for
// example to revoke the device's tokens); an error from f stops the delete.
// Call it before serving.
func (r *Registry) OnDelete(f func(ctx context.Context, id string) error) {
	r.onDelete = append(r.onDelete, f)
}

// Disconnect closes a device's live connection, telling it why; it reports
// whether the device was connected. The device stays known.
func (r *Registry) Disconnect(id, reason string) bool {
	var link *Link
	if e := r.entryLocked(id); e != nil {
		link = e.link
		e.mu.Unlock()
	}
	if link == nil {
		return false
	}
	link.conn.Close(reason)
	return true
}

// Record publishes and records an event observed outside a device's
// connection (the OTA endpoint refusing an identity, for example), like the
// registry's own events: streamed to subscribers and kept in the bounded
// event log.
func (r *Registry) Record(typ, deviceID string, data any) { r.publish(typ, deviceID, data) }

// RecordOnly records an event without sending it to subscribers (they had
// its news already, as an echo: a cluster node recording what a dead node
// could not).
func (r *Registry) RecordOnly(typ, deviceID string, data any) {
	r.rec.event(hub.Event{Type: typ, DeviceID: deviceID, Time: r.opts.Now(), Data: data})
}

// DeleteDevice forgets a device and everything cached for it. A connected
// device is disconnected; it will be registered afresh if it comes back
// (and the OnDelete hooks decide whether it may).
func (r *Registry) DeleteDevice(ctx context.Context, id string) error {
	return r.deleteDevice(ctx, id, true)
}

// ApplyDelete is DeleteDevice for a deletion another hub node made (and
// recorded).
func (r *Registry) ApplyDelete(ctx context.Context, id string) error {
	return r.deleteDevice(ctx, id, false)
}

// deleteDevice forgets id; record says whether this node records the
// event (see publish and echo).
func (r *Registry) deleteDevice(ctx context.Context, id string, record bool) error {
	e := r.devices.get(id)
	if e == nil {
		return notFound(id)
	}
	for _, f := range r.onDelete {
		if err := f(ctx, id); err != nil {
			return fmt.Errorf("delete device %s: %w", id, err)
		}
	}
	// Holding saveMu keeps this device's other writes out until it is gone
	// from memory too; they check membership and are dropped after that.
	e.saveMu.Lock()
	if err := r.store.DeleteDevice(ctx, id); err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
		e.saveMu.Unlock()
		return fmt.Errorf("delete device %s: %w", id, err)
	}
	e.mu.Lock()
	var tools *toolset // the reference to drop, once
	if r.devices.removeLocked(id, e) {
		tools = e.tools
	}
	link, node, home := e.link, e.node, e.dev.Home
	r.setLinkLocked(e, nil, "")
	e.mu.Unlock()
	r.release(tools)
	e.saveMu.Unlock()
	if link != nil {
		if r.opts.Presence != nil {
			r.opts.Presence(id, false, node)
		}
		link.conn.Close("device deleted from the hub")
	}
	r.send(hub.Event{Type: hub.EventDeviceDeleted, DeviceID: id, Home: home, By: hub.PrincipalFrom(ctx).Actor()}, record)
	return nil
}

// Subscribe returns a channel of events and a function that ends the
// subscription. A subscriber that falls behind loses events rather than
// slowing the hub; the channel carries a synthetic "events_dropped" event
// when that happens.
//
// With types, only events of those types are delivered (plus the
// "events_dropped" notice): a subscriber that cares about device changes
// is then not flooded by call_finished events under call load.
func (r *Registry) Subscribe(types ...string) (<-chan hub.Event, func()) {
	return r.bus.subscribe(types...)
}

// Calls returns recent call records, newest first.
func (r *Registry) Calls(ctx context.Context, f hub.CallFilter) ([]hub.CallRecord, error) {
	return r.store.Calls(ctx, f)
}

// Events returns recent recorded events, newest first.
func (r *Registry) Events(ctx context.Context, deviceID string, limit int) ([]hub.Event, error) {
	return r.store.Events(ctx, deviceID, limit)
}

// viewLocked returns the device with its derived fields filled in; e.mu
// is held.
func (r *Registry) viewLocked(e *entry) hub.Device {
	d := e.dev
	d.Aliases = slices.Clone(d.Aliases)
	if d.Aliases == nil {
		d.Aliases = []string{}
	}
	d.Online = e.link != nil
	d.Node = e.node
	d.ThingCount = len(e.things)
	d.ToolsStale = e.stale
	d.ToolsError = e.failed
	if e.tools != nil {
		d.ToolCount = len(e.tools.tools)
		d.ToolsHash = e.tools.hash
	}
	return d
}

// publish sends an event of this node to subscribers and records it.
func (r *Registry) publish(typ, deviceID string, data any) { r.emit(typ, deviceID, data, true) }

// echo sends subscribers the news of what another hub node did (a change
// applied from the cluster's shared state, a device held by another
// node coming or going): that node records it, so it is recorded once.
func (r *Registry) echo(typ, deviceID string, data any) { r.emit(typ, deviceID, data, false) }

func (r *Registry) emit(typ, deviceID string, data any, record bool) {
	r.send(hub.Event{Type: typ, DeviceID: deviceID, Data: data, Home: r.homeOf(deviceID)}, record)
}

// left tells the people of the home a device left that it is gone for
// them (hub.Event.Left): to them it is now a device that does not exist.
func (r *Registry) left(id, from, to string) {
	if from != to {
		r.send(hub.Event{Type: hub.EventDeviceDeleted, DeviceID: id, Home: from, Left: true, LeftFor: to}, false)
	}
}

// send stamps ev with the time and sends it to subscribers, recording it
// if record. ev.Home is the device's home (for the streams' filters).
func (r *Registry) send(ev hub.Event, record bool) {
	ev.Time = r.opts.Now()
	r.gen.note(ev)
	r.bus.publish(ev)
	if record {
		r.rec.event(ev)
	}
}

// homeOf is the home of device id ("" when it has none or is unknown).
func (r *Registry) homeOf(id string) string {
	if id == "" {
		return ""
	}
	e := r.entryLocked(id)
	if e == nil {
		return ""
	}
	defer e.mu.Unlock()
	return e.dev.Home
}

func notFound(id string) error {
	return &hub.Error{Code: hub.ENOTFOUND, Message: fmt.Sprintf("device %q is not known to the hub", id), Err: ErrUnknownDevice}
}

func validatePatch(p hub.DevicePatch) error {
	const maxLen = 64
	check := func(field, v string) error {
		if utf8.RuneCountInString(v) > maxLen {
			return hub.Errorf(hub.EINVALID, "%s is longer than %d characters", field, maxLen)
		}
		if !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl) {
			return hub.Errorf(hub.EINVALID, "%s must be one line of text without control characters", field)
		}
		return nil
	}
	if p.Name != nil {
		if err := check("name", *p.Name); err != nil {
			return err
		}
	}
	if p.Room != nil {
		if err := check("room", *p.Room); err != nil {
			return err
		}
	}
	if p.Voice != nil {
		if err := check("voice", *p.Voice); err != nil {
			return err
		}
	}
	if p.Aliases != nil {
		if len(*p.Aliases) > 32 {
			return hub.Errorf(hub.EINVALID, "at most 32 aliases, got %d", len(*p.Aliases))
		}
		for _, a := range *p.Aliases {
			if err := check("alias", a); err != nil {
				return err
			}
		}
	}
	return nil
}

func cleanAliases(in []string) []string {
	out := []string{}
	for _, a := range in {
		a = strings.TrimSpace(a)
		if a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
