package catalog

import (
	"encoding/json"
	"maps"
	"slices"
)

// A tool whose inputSchema the hub does not check (hub.Tool.Unchecked: too
// big, too deep, recursive, or referring outside itself) is offered to
// agents with a summary of its schema instead: the top-level argument
// names with their type and description. The device's schema could be a
// bomb for the LLM provider too (size, or references it refuses), and an
// agent needs little more than the names to make a call the device checks.

const (
	maxSummaryBytes = 64 << 10 // larger schemas are not read at all
	maxSummaryProps = 32
	maxSummaryText  = 200
)

// uncheckedSchema summarizes raw as described above.
func uncheckedSchema(raw json.RawMessage) json.RawMessage {
	out := map[string]any{"type": "object"}
	var m struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []json.RawMessage          `json:"required"`
	}
	if len(raw) > maxSummaryBytes || json.Unmarshal(raw, &m) != nil {
		b, _ := json.Marshal(out)
		return b
	}
	props := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(m.Properties)) {
		if len(props) == maxSummaryProps {
			break
		}
		var p struct {
			Type        json.RawMessage `json:"type"`
			Description json.RawMessage `json:"description"`
		}
		json.Unmarshal(m.Properties[name], &p) // a non-object leaves both empty
		prop := map[string]any{}
		var typ, desc string
		if json.Unmarshal(p.Type, &typ) == nil && typ != "" {
			prop["type"] = typ
		}
		if json.Unmarshal(p.Description, &desc) == nil && desc != "" {
			prop["description"] = shorten(desc, maxSummaryText)
		}
		props[name] = prop
	}
	out["properties"] = props
	var required []string
	for _, r := range m.Required {
		var s string
		if json.Unmarshal(r, &s) == nil {
			if _, ok := props[s]; ok {
				required = append(required, s)
			}
		}
	}
	if len(required) > 0 {
		out["required"] = required
	}
	b, _ := json.Marshal(out)
	return b
}
