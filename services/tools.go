package services

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/xiaozhi-hub/hub"
)

// Bounds on a service's tool list, beyond those of the list's transfer
// (pages, bytes: see listLimits): what is kept and offered.
const (
	maxTools           = 256
	maxToolName        = 128
	maxToolDescription = 4 << 10
)

// listLimits bound one tools/list: pages, bytes across the pages, tools.
const (
	maxListPages = 64
	maxListBytes = 4 << 20
)

// bound returns the tools a service gave as the hub keeps them: at most
// maxTools, each with a name of at most maxToolName bytes (longer ones are
// dropped: a name cannot be shortened without changing what is called), a
// description cut to maxToolDescription bytes, and the hub's mark on
// schemas it does not check (schema.Check: too big, too deep, refers
// outside itself), which it then leaves to the service.
func (m *Manager) bound(tools []hub.Tool) []hub.Tool {
	out := make([]hub.Tool, 0, min(len(tools), maxTools))
	seen := map[string]bool{}
	for _, t := range tools {
		if len(out) == maxTools {
			m.log.Warn("a service gave more tools than the hub keeps", "kept", maxTools, "given", len(tools))
			break
		}
		if t.Name == "" || len(t.Name) > maxToolName || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		if len(t.Description) > maxToolDescription {
			t.Description = hub.Truncate([]byte(t.Description), maxToolDescription)
		}
		if len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
			t.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		t.Unchecked = ""
		if err := m.val.Prepare(t.InputSchema); err != nil {
			t.Unchecked = err.Error()
		}
		out = append(out, t)
	}
	return out
}

// sameTools reports whether two tool lists are equal.
func sameTools(a, b []hub.Tool) bool {
	return slices.EqualFunc(a, b, func(x, y hub.Tool) bool {
		return x.Name == y.Name && x.Description == y.Description && x.UserOnly == y.UserOnly &&
			x.Unchecked == y.Unchecked && bytes.Equal(x.InputSchema, y.InputSchema) && bytes.Equal(x.Annotations, y.Annotations)
	})
}
