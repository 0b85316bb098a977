package catalog

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// DeviceInfo is a device as search_devices and get_device show it to an
// agent.
type DeviceInfo struct {
	ID string `json:"device_id"`
	// Kind is "service" for a service (ID "service:<name>"), else empty.
	Kind     string   `json:"kind,omitempty"`
	Name     string   `json:"name"`
	Room     string   `json:"room,omitempty"`
	Aliases  []string `json:"aliases,omitempty"`
	Online   bool     `json:"online"`
	Board    string   `json:"board,omitempty"`
	Firmware string   `json:"firmware,omitempty"`
	// Score and Matched explain a search hit.
	Score   float64     `json:"score,omitempty"`
	Matched []string    `json:"matched,omitempty"`
	Tools   []ToolInfo  `json:"tools,omitempty"`
	Things  []ThingInfo `json:"things,omitempty"`
}

// ToolInfo is one device tool. Name is what call_device_tool takes; when
// device tools are offered directly, AgentTool is the tool to call instead.
type ToolInfo struct {
	Name        string          `json:"name"`
	AgentTool   string          `json:"agent_tool,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// ThingInfo is one legacy IoT thing with its last reported state.
type ThingInfo struct {
	Name        string                       `json:"name"`
	Description string                       `json:"description,omitempty"`
	Properties  map[string]hub.ThingProperty `json:"properties,omitempty"`
	Methods     map[string]hub.ThingMethod   `json:"methods,omitempty"`
	State       map[string]json.RawMessage   `json:"state,omitempty"`
	ReportedAt  string                       `json:"reported_at,omitempty"`
}

// SearchResult is the answer of search_devices.
type SearchResult struct {
	Results      []DeviceInfo `json:"results"`
	TotalDevices int          `json:"total_devices"`
	// TotalServices counts the services seen, when there are any.
	TotalServices int    `json:"total_services,omitempty"`
	Hint          string `json:"hint,omitempty"`
}

const searchDescLimit = 160 // characters of a tool description in search results

// Search finds devices and services among those the principal in ctx
// sees (see package search); an empty query lists them, devices first.
func (c *Catalog) Search(ctx context.Context, query string, limit int) SearchResult {
	if limit <= 0 {
		limit = 5
	}
	devs := c.devicesFor(ctx)
	direct := c.direct(ctx, devs)
	c.mu.Lock()
	svcs := c.servicesLocked(ctx)
	c.mu.Unlock()
	out := SearchResult{Results: []DeviceInfo{}, TotalDevices: len(devs), TotalServices: len(svcs)}
	byID := make(map[string]hub.Device, len(devs))
	for _, d := range devs {
		byID[d.ID] = d
	}
	bySvc := make(map[string]*serviceTools, len(svcs))
	for _, st := range svcs {
		bySvc[svcDocPrefix+st.view.Name] = st
	}
	add := func(id string, score float64, why []string) {
		var info DeviceInfo
		if d, ok := byID[id]; ok {
			info = c.info(d, direct, searchDescLimit, false)
		} else if st, ok := bySvc[id]; ok {
			info = c.serviceInfo(st, direct, searchDescLimit)
		} else {
			return
		}
		info.Score, info.Matched = score, why
		out.Results = append(out.Results, info)
	}
	if query == "" {
		for _, d := range devs[:min(limit, len(devs))] {
			add(d.ID, 0, nil)
		}
		for _, st := range svcs[:min(limit-len(out.Results), len(svcs))] {
			add(svcDocPrefix+st.view.Name, 0, nil)
		}
		return out
	}
	seen := func(id string) bool { _, d := byID[id]; _, s := bySvc[id]; return d || s }
	for _, r := range c.index.SearchWhere(query, limit, seen) {
		add(r.ID, r.Score, r.Why)
	}
	if len(out.Results) == 0 {
		out.Hint = "no device matched; try a room and a kind of device (\"客厅 灯\", \"bedroom lamp\"), or an empty query to list devices"
	}
	return out
}

// Describe returns one device with all its tools and things, if the
// principal in ctx sees it.
func (c *Catalog) Describe(ctx context.Context, id string) (DeviceInfo, error) {
	devs := c.devicesFor(ctx)
	if name, ok := strings.CutPrefix(id, ServicePrefix); ok && c.opts.Services != nil {
		c.mu.Lock()
		st := c.serviceLocked(ctx, name)
		c.mu.Unlock()
		if st != nil {
			return c.serviceInfo(st, c.direct(ctx, devs), 0), nil
		}
	}
	for _, d := range devs {
		if d.ID == id {
			return c.info(d, c.direct(ctx, devs), 0, true), nil
		}
	}
	return DeviceInfo{}, hub.Errorf(hub.ENOTFOUND, "device %q is not known to the hub (search_devices finds device ids)", id)
}

// info describes a device; descLimit > 0 shortens tool descriptions.
func (c *Catalog) info(d hub.Device, direct bool, descLimit int, full bool) DeviceInfo {
	info := DeviceInfo{ID: d.ID, Name: d.Name, Room: d.Room, Aliases: d.Aliases, Online: d.Online}
	if full {
		info.Board, info.Firmware = d.Board, d.Firmware
	}
	tools, _, _ := c.reg.Tools(d.ID)
	c.mu.Lock()
	dt := c.devs[d.ID]
	c.mu.Unlock()
	for _, t := range c.visible(tools) {
		ti := ToolInfo{Name: t.Name, Description: shorten(t.Description, descLimit), InputSchema: t.InputSchema}
		if direct && dt != nil && (d.Online || c.opts.IncludeOffline) {
			for _, ct := range dt.tools {
				if ct.Kind == KindDevice && ct.Target == t.Name {
					ti.AgentTool = ct.Name
				}
			}
		}
		info.Tools = append(info.Tools, ti)
	}
	if d.ThingCount > 0 {
		things, _ := c.reg.Things(d.ID)
		for _, t := range things {
			ti := ThingInfo{Name: t.Name, Description: t.Description, Methods: t.Methods, State: t.State}
			if full {
				ti.Properties = t.Properties
			}
			if !t.StateUpdated.IsZero() {
				ti.ReportedAt = t.StateUpdated.UTC().Format(time.RFC3339)
			}
			info.Things = append(info.Things, ti)
		}
	}
	return info
}

func shorten(s string, limit int) string {
	if limit <= 0 {
		return s
	}
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	return string(r[:limit]) + "…"
}
