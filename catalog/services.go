package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/search"
)

// Services are the outside MCP services whose tools the catalog offers
// beside the devices' (services.Manager implements it). Which services a
// principal sees, and what it may call, is theirs to say: the catalog asks
// Services and Service with the principal, and CallService applies its
// rights again.
type Services interface {
	// Services returns the services p sees (nil: all), by name.
	Services(p *hub.Principal) []hub.ServiceView
	// Service returns one service p sees, or ENOTFOUND.
	Service(p *hub.Principal, name string) (hub.ServiceView, error)
	// CallService runs a tool as the principal in ctx.
	CallService(ctx context.Context, c hub.ServiceCall) (hub.CallResult, error)
	// Generation counts the changes of what the services offer; Changed
	// is closed at the next change after since.
	Generation() uint64
	Changed(since uint64) <-chan struct{}
}

// ServicePrefix starts the device_id under which agents see a service (in
// search_devices, get_device and call_device_tool) and under which its
// calls are recorded: "service:calc".
const ServicePrefix = hub.ServicePrefix

// svcDocPrefix starts a service's id in the search index: a NUL, which no
// device id contains, so that a device cannot pose as a service there.
const svcDocPrefix = "\x00" + ServicePrefix

// ServiceKey returns the key that prefixes the agent names of a service's
// tools: "s" and the service's name with "_" written "U". Service names are
// [a-z0-9_-], so the key is reversible, holds no "_" (the name splits at
// its first "_", as a device's does) and never starts like a device key
// ("d…"): "scalc_calculator", "smyUtools_add".
func ServiceKey(service string) string { return "s" + strings.ReplaceAll(service, "_", "U") }

// serviceTools is the cached catalog of one service.
type serviceTools struct {
	view   hub.ServiceView
	tools  []Tool
	byName map[string]int
}

// refreshServicesLocked brings the services' part of the cache and of the
// search index up to date with the services' generation; c.mu is held.
func (c *Catalog) refreshServicesLocked() {
	s := c.opts.Services
	if s == nil {
		return
	}
	gen := s.Generation() // before reading: a change after it is seen next time
	if c.svcBuilt && gen == c.svcGen {
		return
	}
	c.svcBuilt, c.svcGen = true, gen
	all := s.Services(nil)
	fresh := make(map[string]*serviceTools, len(all))
	keys := make(map[string]string, len(all))
	for _, v := range all {
		st := c.buildService(v)
		fresh[v.Name] = st
		keys[ServiceKey(v.Name)] = v.Name
		c.index.Put(search.Doc{ID: svcDocPrefix + v.Name, Name: v.Name, Tools: c.visible(v.Tools)}, toolsDigest(v.Tools))
	}
	for name := range c.svcs {
		if fresh[name] == nil {
			c.index.Remove(svcDocPrefix + name)
		}
	}
	c.svcs, c.svcKeys = fresh, keys
}

// toolsDigest identifies a tool list as the search index sees it.
func toolsDigest(tools []hub.Tool) string {
	b, _ := json.Marshal(tools)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// buildService makes the agent tools of one service: its MCP tools, named
// by ServiceKey, described as the service's.
func (c *Catalog) buildService(v hub.ServiceView) *serviceTools {
	st := &serviceTools{view: v, byName: map[string]int{}}
	var out []Tool
	for _, t := range c.visible(v.Tools) {
		schema, ok := agentSchema(t)
		if !ok {
			continue
		}
		out = append(out, Tool{Kind: KindService, DeviceID: ServicePrefix + v.Name, Service: v.Name, Target: t.Name,
			Description: "Service " + v.Name + ": " + t.Description, InputSchema: schema, UserOnly: t.UserOnly})
	}
	sortTools(out)
	st.tools = nameTools(ServiceKey(v.Name), out, st.byName)
	return st
}

// servicesLocked returns the cached services the principal in ctx sees,
// by name; c.mu is held and the cache is fresh.
func (c *Catalog) servicesLocked(ctx context.Context) []*serviceTools {
	if c.opts.Services == nil {
		return nil
	}
	var out []*serviceTools
	for _, v := range c.opts.Services.Services(hub.PrincipalFrom(ctx)) {
		if st := c.svcs[v.Name]; st != nil {
			out = append(out, st)
		}
	}
	return out
}

// serviceLocked returns one cached service the principal in ctx sees;
// c.mu is held.
func (c *Catalog) serviceLocked(ctx context.Context, name string) *serviceTools {
	st := c.svcs[name]
	if st == nil || c.opts.Services == nil {
		return nil
	}
	if _, err := c.opts.Services.Service(hub.PrincipalFrom(ctx), name); err != nil {
		return nil
	}
	return st
}

// Services returns the services the principal in ctx sees, by name (none
// without Options.Services). The views are shared: callers must not
// modify them.
func (c *Catalog) Services(ctx context.Context) []hub.ServiceView {
	c.devicesFor(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []hub.ServiceView
	for _, st := range c.servicesLocked(ctx) {
		out = append(out, st.view)
	}
	return out
}

// offered reports whether a service's tools count and are offered in
// direct mode.
func (c *Catalog) offered(st *serviceTools) bool { return st.view.Online || c.opts.IncludeOffline }

// lookupService returns the tool with an agent name among a service's the
// principal in ctx sees; c.mu is held.
func (c *Catalog) lookupServiceLocked(ctx context.Context, key, name string) (Tool, bool) {
	st := c.serviceLocked(ctx, c.svcKeys[key])
	if st == nil {
		return Tool{}, false
	}
	i, ok := st.byName[name]
	if !ok {
		return Tool{}, false
	}
	return st.tools[i], true
}

// resolveService finds a service's tool by agent name or its own name.
func (c *Catalog) resolveService(ctx context.Context, service, tool string) (Tool, error) {
	c.devicesFor(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.serviceLocked(ctx, service)
	if st == nil {
		return Tool{}, hub.Errorf(hub.ENOTFOUND, "device %q is not known to the hub (use search_devices to find device ids)", ServicePrefix+service)
	}
	if i, ok := st.byName[tool]; ok {
		return st.tools[i], nil
	}
	names := make([]string, 0, len(st.tools))
	for _, t := range st.tools {
		if t.Target == tool {
			return t, nil
		}
		names = append(names, t.Target)
	}
	return Tool{}, hub.Errorf(hub.ENOTFOUND, "service %q has no tool %q offered to agents; its tools: %s",
		service, tool, strings.Join(names, ", "))
}

// callService runs a service's tool as the principal in ctx.
func (c *Catalog) callService(ctx context.Context, t Tool, args json.RawMessage) Result {
	return callResult(c.opts.Services.CallService(ctx, hub.ServiceCall{Service: t.Service, Tool: t.Target, Arguments: args,
		Timeout: c.opts.CallTimeout, Caller: c.opts.Caller}))
}

// serviceInfo describes a service as search_devices and get_device show
// it: as a device whose id is ServicePrefix and its name.
func (c *Catalog) serviceInfo(st *serviceTools, direct bool, descLimit int) DeviceInfo {
	info := DeviceInfo{ID: ServicePrefix + st.view.Name, Name: st.view.Name, Online: st.view.Online, Kind: "service"}
	for _, t := range c.visible(st.view.Tools) {
		ti := ToolInfo{Name: t.Name, Description: shorten(t.Description, descLimit), InputSchema: t.InputSchema}
		if direct && c.offered(st) {
			for _, ct := range st.tools {
				if ct.Target == t.Name {
					ti.AgentTool = ct.Name
				}
			}
		}
		info.Tools = append(info.Tools, ti)
	}
	return info
}
