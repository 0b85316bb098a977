// Package catalog turns the hub's devices into tools for AI agents: every
// MCP tool of every device, and every method of every legacy IoT thing,
// under a name valid for OpenAI and Anthropic function calling (see Name),
// plus the hub's own tools (search_devices, get_device, call_device_tool,
// send_iot_commands) for homes with too many devices to list. Both the MCP
// server for outside agents (package mcpserver) and the built-in agent
// (package agent) use it, so both see the same tools with the same
// semantics.
//
// User-only tools (reboot, firmware upgrade, …) are never offered unless
// Options.AllowUserOnly is set. Calls go through the registry, which
// validates arguments against the tool's schema and records every call.
//
// Every view and call is a person's: the principal the context carries
// (hub.PrincipalFrom) is offered only the devices it sees
// (hub.Principal.Sees), and any other device is, to it, unknown. Calls
// pass the context on, so the registry applies the principal's rights
// (hub.Principal.MayCall) and records who asked. A context without a
// principal is the hub's own work and sees every device.
//
// With Options.Services, the services' tools (outside MCP servers, package
// services) are offered beside the devices': each under its own name
// (ServiceKey: "scalc_calculator") while the catalog is small, and always
// through search_devices, get_device and call_device_tool as device_id
// "service:<name>". Which services a principal sees and may call is the
// services' to say (services.Manager), asked with the principal each time.
package catalog

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/search"
)

// Kind says what a catalog tool does.
type Kind string

const (
	KindDevice   Kind = "device"    // an MCP tool of a device
	KindIoT      Kind = "iot"       // a method of a legacy IoT thing
	KindIoTState Kind = "iot_state" // reads a thing's last reported state, without a device round trip
	KindHub      Kind = "hub"       // one of the hub's own tools
	KindService  Kind = "service"   // an MCP tool of a service (Options.Services)
)

// Tool is one tool offered to agents.
type Tool struct {
	Name        string          `json:"name"` // matches NamePattern
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"` // a JSON Schema object with "type":"object"
	Kind        Kind            `json:"kind"`
	// DeviceID is the device's id, or ServicePrefix and the service's name.
	DeviceID string `json:"deviceId,omitempty"`
	// Service is the service's name, for a KindService tool.
	Service string `json:"service,omitempty"`
	// Target is the device's own name for the tool: the MCP tool name,
	// "Thing.Method" for an IoT method, "Thing" for an IoT state tool.
	Target   string `json:"target,omitempty"`
	UserOnly bool   `json:"userOnly,omitempty"`
}

// Options configure a Catalog. The zero value is usable.
type Options struct {
	// AllowUserOnly offers user-only device tools (reboot, firmware
	// upgrade, unlock, …) to agents. Off by default.
	AllowUserOnly bool
	// DirectLimit is the largest number of devices for which agents are
	// offered every device tool directly; with more, they get the hub tools
	// (search_devices, get_device, call_device_tool, send_iot_commands).
	// 0 means 8; a negative value means never. Direct mode also needs the
	// devices to offer at most 100 tools in all.
	DirectLimit int
	// IncludeOffline offers the tools of offline devices too in direct
	// mode (calling them fails until the device connects). Xiaozhi devices
	// are often connected only during a conversation.
	IncludeOffline bool
	// MaxResultBytes caps the text of one tool result (default 16 KiB).
	MaxResultBytes int
	// Caller is recorded with each device call (default "agent").
	Caller string
	// CallTimeout bounds each device call (0: the registry's default).
	CallTimeout time.Duration
	// Services, if set, are offered beside the devices: each service's
	// tools under their own names (ServiceKey) while the catalog is small
	// enough for direct mode (services count as devices against
	// DirectLimit, their tools against the tools' limit), and through
	// search_devices, get_device and call_device_tool (device_id
	// "service:<name>") always.
	Services Services
	// IoTWait is how long an IoT command waits for the device's next state
	// report, to tell the agent the new state (default 1 s; negative: no
	// wait). Legacy devices never acknowledge commands.
	IoTWait time.Duration
}

func (o Options) withDefaults() Options {
	if o.DirectLimit == 0 {
		o.DirectLimit = 8
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 16 << 10
	}
	if o.Caller == "" {
		o.Caller = "agent"
	}
	if o.IoTWait == 0 {
		o.IoTWait = time.Second
	}
	return o
}

// Catalog is the registry's devices as agent tools. It keeps a cache keyed
// by each device's content, shared by every principal, and each set of
// homes' devices (a view) beside it. The cache is refreshed on use when the
// registry's generation (Registry.Generation) has changed since the last
// refresh, so it needs no goroutine. Catalogs made With one another share
// it. It is safe for concurrent use.
type Catalog struct {
	*cache
	opts Options
}

// cache is what a catalog knows of the devices and services: the same for
// every catalog that offers the same tools (Options.AllowUserOnly and
// Services), whatever it names its caller, its limits and its timeouts.
type cache struct {
	reg   *registry.Registry
	index *search.Index

	mu      sync.Mutex
	built   bool         // the cache has been built once
	gen     uint64       // the registry's generation the cache was built at
	devices []hub.Device // as of the last refresh; shared, read-only
	devs    map[string]*deviceTools
	keys    map[string]string // device key → device id
	// views are the devices of a set of homes (homesKey), as of the
	// generation of devices; at most maxViews, emptied when full.
	views map[string][]hub.Device

	// The services' part (services.go), refreshed at their generation.
	svcBuilt bool
	svcGen   uint64
	svcs     map[string]*serviceTools // by service name
	svcKeys  map[string]string        // ServiceKey → service name
}

// maxViews bounds the cached views: one per distinct set of homes asking
// between two changes of the devices.
const maxViews = 256

// deviceTools is the cached catalog of one device.
type deviceTools struct {
	dev   hub.Device
	fp    string
	key   string
	tools []Tool
}

// named returns the place of the tool called name among tools. A device
// has a few tools: a scan costs less than a map kept for each device.
func named(tools []Tool, name string) (int, bool) {
	for i := range tools {
		if tools[i].Name == name {
			return i, true
		}
	}
	return -1, false
}

// New returns a catalog over reg.
func New(reg *registry.Registry, opts Options) *Catalog {
	return &Catalog{opts: opts.withDefaults(), cache: &cache{reg: reg, index: search.NewIndex(),
		devs: map[string]*deviceTools{}, keys: map[string]string{}, views: map[string][]hub.Device{}}}
}

// With returns a catalog over c's cache of the devices and services (one
// copy of each device's tools and one search index, refreshed once for
// both) with opts' caller, limits and timeouts. The tools it offers are
// c's: opts' AllowUserOnly and Services are replaced by c's.
func (c *Catalog) With(opts Options) *Catalog {
	opts.AllowUserOnly, opts.Services = c.opts.AllowUserOnly, c.opts.Services
	return &Catalog{cache: c.cache, opts: opts.withDefaults()}
}

// Close releases nothing: the catalog holds no subscription or goroutine.
// It is kept for the packages that own a catalog and close what they own.
func (c *Catalog) Close() {}

// Options returns the catalog's options with defaults filled in.
func (c *Catalog) Options() Options { return c.opts }

// devicesFor brings the cache up to date and returns the devices the
// principal in ctx sees, sorted by room, name and id. The slice is shared:
// callers must not modify it.
func (c *Catalog) devicesFor(ctx context.Context) []hub.Device {
	p := hub.PrincipalFrom(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshServicesLocked()
	all := c.refreshLocked()
	if p == nil || p.Admin {
		return all
	}
	key := homesKey(p)
	if v, ok := c.views[key]; ok {
		return v
	}
	v := []hub.Device{}
	for _, d := range all {
		if p.Sees(d.Home) {
			v = append(v, d)
		}
	}
	if len(c.views) >= maxViews {
		clear(c.views)
	}
	c.views[key] = v
	return v
}

// ViewKey names the devices p sees: equal keys, equal devices (nil and
// the admin: every device).
func ViewKey(p *hub.Principal) string {
	if p == nil || p.Admin {
		return "*"
	}
	return homesKey(p)
}

// homesKey names the set of homes p sees: each id ends with a 0 byte, so
// that no homes ("") and the home "" ("\x00") differ.
func homesKey(p *hub.Principal) string {
	ids := slices.Sorted(maps.Keys(p.Homes))
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(id)
		b.WriteByte(0)
	}
	return b.String()
}

// sees reports whether the principal in ctx sees a device of home.
func sees(ctx context.Context, home string) bool {
	p := hub.PrincipalFrom(ctx)
	return p == nil || p.Sees(home)
}

// refreshLocked brings the cache and the search index up to date with the
// registry and returns every device, sorted by room, name and id.
func (c *Catalog) refreshLocked() []hub.Device {
	gen := c.reg.Generation() // before reading: a change after it is seen next time
	if c.built && gen == c.gen {
		return c.devices
	}
	c.built, c.gen = true, gen
	devs := c.reg.Devices()
	c.devices = devs
	clear(c.views)
	seen := make(map[string]bool, len(devs))
	keysChanged := len(c.devs) != len(devs)
	for _, d := range devs {
		seen[d.ID] = true
		dt := c.devs[d.ID]
		if dt == nil {
			keysChanged = true
		}
		fp := fingerprint(d)
		var things []hub.Thing
		if d.ThingCount > 0 {
			things, _ = c.reg.Things(d.ID)
			fp += thingsDigest(things)
		}
		if dt != nil && dt.fp == fp {
			dt.dev = d // online state and the like
			continue
		}
		tools, _, _ := c.reg.Tools(d.ID)
		c.index.Put(search.Doc{ID: d.ID, Name: d.Name, Room: d.Room, Aliases: d.Aliases, Board: d.Board,
			Tools: c.visible(tools), Things: things}, fp)
		key := DeviceKey(d.ID)
		if dt != nil {
			key = dt.key
		}
		c.devs[d.ID] = c.build(d, fp, key, tools, things)
	}
	for id := range c.devs {
		if !seen[id] {
			delete(c.devs, id)
		}
	}
	if keysChanged {
		c.index.Retain(func(id string) bool { return seen[id] || strings.HasPrefix(id, svcDocPrefix) })
		c.assignKeysLocked()
	}
	return devs
}

// fingerprint changes whenever a device's tools, as agents see them, change.
func fingerprint(d hub.Device) string {
	return strings.Join([]string{d.Name, d.Room, strings.Join(d.Aliases, "\x01"), d.Board, d.ToolsHash}, "\x00")
}

// thingsDigest identifies IoT descriptors (not their state).
func thingsDigest(things []hub.Thing) string {
	h := sha256.New()
	for _, t := range things {
		t.State, t.StateUpdated = nil, time.Time{}
		b, _ := json.Marshal(t)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// assignKeysLocked gives every device its key. Two device ids whose short
// keys collide (about one pair in 2^40) both keep working: the larger id
// gets a longer key. Names are therefore stable unless such a device joins.
func (c *Catalog) assignKeysLocked() {
	ids := make([]string, 0, len(c.devs))
	for id := range c.devs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	c.keys = make(map[string]string, len(ids))
	for _, id := range ids {
		dt := c.devs[id]
		key := DeviceKey(id)
		if _, taken := c.keys[key]; taken {
			key = longDeviceKey(id)
		}
		c.keys[key] = id
		if dt.key != key {
			tools, _, _ := c.reg.Tools(id)
			things, _ := c.reg.Things(id)
			c.devs[id] = c.build(dt.dev, dt.fp, key, tools, things)
		}
	}
}

func (c *Catalog) visible(tools []hub.Tool) []hub.Tool {
	if c.opts.AllowUserOnly {
		return tools
	}
	out := make([]hub.Tool, 0, len(tools))
	for _, t := range tools {
		if !t.UserOnly {
			out = append(out, t)
		}
	}
	return out
}

// Direct reports whether agents are offered device tools directly (few
// devices) rather than the hub tools.
func (c *Catalog) Direct(ctx context.Context) bool { return c.direct(ctx, c.devicesFor(ctx)) }

// direct decides the mode for the devices and the services the principal
// in ctx sees (each service counts as a device).
func (c *Catalog) direct(ctx context.Context, devs []hub.Device) bool {
	if c.opts.DirectLimit < 0 {
		return false
	}
	n, tools := 0, 0
	c.mu.Lock()
	for _, st := range c.servicesLocked(ctx) {
		if c.offered(st) {
			n++
			tools += len(st.tools)
		}
	}
	for _, d := range devs {
		if d.Online || c.opts.IncludeOffline {
			n++
			if dt := c.devs[d.ID]; dt != nil {
				tools += len(dt.tools)
			}
		}
	}
	c.mu.Unlock()
	return n <= c.opts.DirectLimit && tools <= maxDirectTools
}

// maxDirectTools keeps direct mode within what LLM APIs accept (OpenAI
// allows 128 tools per request) and what models choose from well.
const maxDirectTools = 100

// Tools returns the tools to offer an agent now: with few devices, every
// device tool plus search_devices and get_device; with many, the four hub
// tools. Sorted by name. Only the devices the principal in ctx sees count.
func (c *Catalog) Tools(ctx context.Context) []Tool {
	devs := c.devicesFor(ctx)
	direct := c.direct(ctx, devs)
	out := HubTools(direct)
	if direct {
		c.mu.Lock()
		for _, d := range devs {
			if dt := c.devs[d.ID]; dt != nil && (d.Online || c.opts.IncludeOffline) {
				out = append(out, dt.tools...)
			}
		}
		for _, st := range c.servicesLocked(ctx) {
			if c.offered(st) {
				out = append(out, st.tools...)
			}
		}
		c.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// DeviceTools returns the agent tools of one device, or ENOTFOUND (also
// for a device the principal in ctx does not see).
func (c *Catalog) DeviceTools(ctx context.Context, id string) ([]Tool, error) {
	c.devicesFor(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	dt := c.devs[id]
	if dt == nil || !sees(ctx, dt.dev.Home) {
		return nil, hub.Errorf(hub.ENOTFOUND, "device %q is not known to the hub (search_devices lists devices)", id)
	}
	return slices.Clone(dt.tools), nil
}

// Devices returns the devices the principal in ctx sees, sorted by room,
// name and id. The slice is shared: callers must not modify it.
func (c *Catalog) Devices(ctx context.Context) []hub.Device { return c.devicesFor(ctx) }

// Lookup returns the tool with an agent name (device or hub tool) among
// those of the principal in ctx.
func (c *Catalog) Lookup(ctx context.Context, name string) (Tool, bool) {
	if t, ok := hubTool(name); ok {
		// Only what Tools offers now is callable: in direct mode the
		// device tools stand in for call_device_tool and send_iot_commands.
		return t, !fixedOnly(name) || !c.Direct(ctx)
	}
	c.devicesFor(ctx)
	return c.lookupCached(ctx, name)
}

func (c *Catalog) lookupCached(ctx context.Context, name string) (Tool, bool) {
	key, _, ok := strings.Cut(name, "_")
	if !ok {
		return Tool{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.HasPrefix(key, "s") {
		return c.lookupServiceLocked(ctx, key, name)
	}
	dt := c.devs[c.keys[key]]
	if dt == nil || !sees(ctx, dt.dev.Home) {
		return Tool{}, false
	}
	i, ok := named(dt.tools, name)
	if !ok {
		return Tool{}, false
	}
	return dt.tools[i], true
}

// resolve finds a device's tool by agent name or by the device's own name
// for it (MCP tool name, "Thing.Method", "Thing"), among the devices the
// principal in ctx sees.
func (c *Catalog) resolve(ctx context.Context, deviceID, tool string) (Tool, hub.Device, error) {
	c.devicesFor(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	dt := c.devs[deviceID]
	if dt == nil || !sees(ctx, dt.dev.Home) {
		return Tool{}, hub.Device{}, hub.Errorf(hub.ENOTFOUND, "device %q is not known to the hub (use search_devices to find device ids)", deviceID)
	}
	if i, ok := named(dt.tools, tool); ok {
		return dt.tools[i], dt.dev, nil
	}
	for _, t := range dt.tools {
		if t.Target == tool || (t.Kind == KindIoTState && t.Target+".get_state" == tool) {
			return t, dt.dev, nil
		}
	}
	names := make([]string, 0, len(dt.tools))
	for _, t := range dt.tools {
		names = append(names, t.Target)
	}
	return Tool{}, dt.dev, hub.Errorf(hub.ENOTFOUND, "device %q has no tool %q offered to agents; its tools: %s",
		deviceID, tool, strings.Join(names, ", "))
}

func sortTools(ts []Tool) {
	slices.SortFunc(ts, func(a, b Tool) int {
		return cmp.Or(strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.Target, b.Target))
	})
}
