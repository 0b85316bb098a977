package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// build makes the agent tools of one device.
func (c *Catalog) build(d hub.Device, fp, key string, tools []hub.Tool, things []hub.Thing) *deviceTools {
	dt := &deviceTools{dev: d, fp: fp, key: key}
	var out []Tool
	for _, t := range c.visible(tools) {
		schema, ok := agentSchema(t)
		if !ok {
			continue // agents cannot call a tool whose arguments are not an object
		}
		out = append(out, Tool{Kind: KindDevice, DeviceID: d.ID, Target: t.Name, Description: t.Description,
			InputSchema: schema, UserOnly: t.UserOnly})
	}
	for _, th := range things {
		for _, name := range slices.Sorted(maps.Keys(th.Methods)) {
			out = append(out, iotMethodTool(d, th, name, th.Methods[name]))
		}
		if len(th.Properties) > 0 || len(th.State) > 0 {
			out = append(out, iotStateTool(d, th))
		}
	}
	sortTools(out)
	out = nameTools(key, out, map[string]int{})

	rw := newRewriter(out)
	prefix := deviceContext(d)
	for i := range out {
		out[i].Description = prefix + rw.rewrite(out[i].Description)
	}
	dt.tools = out
	return dt
}

// nameTools gives each tool (sorted by sortTools) its agent name, key and
// its tool part, filling byName, and returns those named: two targets with
// one name (an MCP tool "Lamp.TurnOn" next to an IoT method, or a hash
// collision) are told apart by a longer hash of kind and target for the
// later one, in a fixed order; a third is dropped.
func nameTools(key string, tools []Tool, byName map[string]int) []Tool {
	maxPart := MaxNameLen - len(key) - 1
	kept := tools[:0]
	for _, t := range tools {
		target := t.Target
		if t.Kind == KindIoTState {
			target += ".get_state"
		}
		name := key + "_" + toolPart(target, maxPart, hashLen)
		if _, taken := byName[name]; taken {
			name = key + "_" + toolPart(string(t.Kind)+":"+target, maxPart, longLen)
			if _, taken := byName[name]; taken {
				continue
			}
		}
		t.Name = name
		byName[name] = len(kept)
		kept = append(kept, t)
	}
	return kept
}

// deviceContext introduces a device in each of its tools' descriptions, since
// the tool names themselves are opaque.
func deviceContext(d hub.Device) string {
	name := d.Name
	if name == "" {
		name = "Device"
	}
	if d.Room != "" {
		return fmt.Sprintf("%s in %s (device %s): ", name, d.Room, d.ID)
	}
	return fmt.Sprintf("%s (device %s): ", name, d.ID)
}

// agentSchema returns the inputSchema agents are given for a tool (see
// objectSchema and uncheckedSchema), or false when its arguments are not an
// object at all.
func agentSchema(t hub.Tool) (json.RawMessage, bool) {
	if t.Unchecked != "" {
		return uncheckedSchema(t.InputSchema), true
	}
	return objectSchema(t.InputSchema)
}

// objectSchema returns a tool's inputSchema in a form both LLM APIs accept
// ("type":"object"), or false when the arguments are not an object at all.
func objectSchema(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`), true
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	switch m["type"] {
	case "object":
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil && !bytes.Equal(b.Bytes(), raw) {
			return b.Bytes(), true
		}
		return raw, true // compact already (as firmware sends it): shared with the registry's tool set
	case nil:
		m["type"] = "object"
		b, _ := json.Marshal(m)
		return b, true
	}
	return nil, false
}

// iotMethodTool makes a callable tool of an IoT method. The wire format has
// no "required" flag and the firmware ignores commands that miss a
// parameter, so every parameter is required.
func iotMethodTool(d hub.Device, th hub.Thing, method string, m hub.ThingMethod) Tool {
	props := map[string]any{}
	required := []string{}
	for _, name := range slices.Sorted(maps.Keys(m.Parameters)) {
		p := m.Parameters[name]
		prop := map[string]any{}
		if t := jsonType(p.Type); t != "" {
			prop["type"] = t
		}
		if p.Description != "" {
			prop["description"] = p.Description
		}
		props[name] = prop
		required = append(required, name)
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	desc := "IoT thing " + th.Name
	if th.Description != "" {
		desc += " (" + th.Description + ")"
	}
	desc += ", method " + method
	if m.Description != "" {
		desc += ": " + m.Description
	}
	desc += ". Legacy devices do not acknowledge commands; the result reports the state the device sends back."
	return Tool{Kind: KindIoT, DeviceID: d.ID, Target: th.Name + "." + method, Description: desc, InputSchema: schema}
}

// iotStateTool reads a thing's properties from the hub's cache.
func iotStateTool(d hub.Device, th hub.Thing) Tool {
	desc := "Read the last reported state of IoT thing " + th.Name
	if th.Description != "" {
		desc += " (" + th.Description + ")"
	}
	var props []string
	for _, name := range slices.Sorted(maps.Keys(th.Properties)) {
		p := th.Properties[name]
		s := name + " (" + p.Type + ")"
		if p.Description != "" {
			s += ": " + p.Description
		}
		props = append(props, s)
	}
	if len(props) > 0 {
		desc += "; properties: " + strings.Join(props, "; ")
	}
	desc += ". Answered by the hub from the device's last report, without a round trip."
	return Tool{Kind: KindIoTState, DeviceID: d.ID, Target: th.Name, Description: desc,
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)}
}

func jsonType(t string) string {
	switch t {
	case "number", "boolean", "string", "integer":
		return t
	}
	return ""
}

// rewriter replaces a device's own tool names, where descriptions quote them
// ("call `self.get_device_status` first"), with their agent names, so that
// the model never calls a name it was not offered. Longer names are tried
// first, so self.lamp.turn_on_all is never cut down to self.lamp.turn_on,
// and only whole names are replaced.
type rewriter struct {
	olds []string
	news map[string]string
}

func newRewriter(tools []Tool) rewriter {
	r := rewriter{news: map[string]string{}}
	for _, t := range tools {
		if t.Kind == KindDevice && t.Target != "" {
			r.olds = append(r.olds, t.Target)
			r.news[t.Target] = t.Name
		}
	}
	slices.SortFunc(r.olds, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return r
}

func (r rewriter) rewrite(s string) string {
	if len(r.olds) == 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if i == 0 || !identByte(s[i-1]) && s[i-1] != '.' {
			if o := r.match(s, i); o != "" {
				b.WriteString(r.news[o])
				i += len(o)
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func (r rewriter) match(s string, i int) string {
	for _, o := range r.olds {
		if !strings.HasPrefix(s[i:], o) {
			continue
		}
		j := i + len(o)
		if j < len(s) && (identByte(s[j]) || s[j] == '.' && j+1 < len(s) && identByte(s[j+1])) {
			continue // part of a longer name
		}
		return o
	}
	return ""
}

func identByte(c byte) bool { return wordByte(c) }
