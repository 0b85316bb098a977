// Package iot holds the rules of the legacy IoT protocol of firmware ≤ 1.7
// (docs/protocol.md §9): things are described one per message and
// accumulate, states arrive in full and then as deltas and are merged, and
// commands are checked against the descriptors before they are sent, because
// the device never answers a command and crashes on some bad ones.
package iot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// Describe returns the thing a descriptor describes, keeping the state of
// prev (the thing of the same name already known) for the properties the
// new descriptor still has. A re-sent descriptor replaces the old one.
func Describe(desc hub.Thing, prev *hub.Thing) hub.Thing {
	t := hub.Thing{
		Name:        desc.Name,
		Description: desc.Description,
		Properties:  desc.Properties,
		Methods:     desc.Methods,
		State:       map[string]json.RawMessage{},
	}
	if t.Properties == nil {
		t.Properties = map[string]hub.ThingProperty{}
	}
	if t.Methods == nil {
		t.Methods = map[string]hub.ThingMethod{}
	}
	if prev != nil {
		for k, v := range prev.State {
			if _, ok := t.Properties[k]; ok {
				t.State[k] = v
			}
		}
		t.StateUpdated = prev.StateUpdated
	}
	return t
}

// MergeState merges a reported state into t and returns the names of the
// values that changed, sorted. Values for properties the descriptor does not
// declare are kept too: the device is the authority on its state.
func MergeState(t *hub.Thing, state map[string]json.RawMessage, now time.Time) []string {
	if t.State == nil {
		t.State = map[string]json.RawMessage{}
	}
	var changed []string
	for k, v := range state {
		if old, ok := t.State[k]; ok && bytes.Equal(old, v) {
			continue
		}
		t.State[k] = append(json.RawMessage(nil), v...)
		changed = append(changed, k)
	}
	t.StateUpdated = now
	slices.Sort(changed)
	return changed
}

// Clone returns a deep copy of t, safe to hand out while t keeps changing.
func Clone(t hub.Thing) hub.Thing {
	t.State = maps.Clone(t.State)
	return t
}

// ValidateCommands checks commands against the known things. Every declared
// parameter is required, its JSON type must match the declared type, and no
// undeclared parameter may be sent (objects and arrays crash old firmware).
func ValidateCommands(things map[string]*hub.Thing, cmds []hub.IoTCommand) error {
	if len(cmds) == 0 {
		return hub.Errorf(hub.EINVALID, "no commands: send {\"commands\":[{\"name\":…,\"method\":…,\"parameters\":{…}}]}")
	}
	for i, c := range cmds {
		if err := validateCommand(things, c); err != nil {
			return hub.Errorf(hub.EINVALID, "command %d: %s", i, err)
		}
	}
	return nil
}

func validateCommand(things map[string]*hub.Thing, c hub.IoTCommand) error {
	t, ok := things[c.Name]
	if !ok {
		return fmt.Errorf("unknown thing %q (known: %s)", c.Name, strings.Join(slices.Sorted(maps.Keys(things)), ", "))
	}
	m, ok := t.Methods[c.Method]
	if !ok {
		return fmt.Errorf("thing %q has no method %q (methods: %s)", c.Name, c.Method, strings.Join(slices.Sorted(maps.Keys(t.Methods)), ", "))
	}
	params := map[string]json.RawMessage{}
	if len(c.Parameters) > 0 && string(c.Parameters) != "null" {
		if err := json.Unmarshal(c.Parameters, &params); err != nil {
			return fmt.Errorf("%s.%s: parameters must be a JSON object", c.Name, c.Method)
		}
	}
	for name, p := range m.Parameters {
		v, ok := params[name]
		if !ok {
			return fmt.Errorf("%s.%s: missing parameter %q (%s)", c.Name, c.Method, name, p.Type)
		}
		if !typeMatches(p.Type, v) {
			return fmt.Errorf("%s.%s: parameter %q must be a %s, got %s", c.Name, c.Method, name, p.Type, v)
		}
	}
	for name := range params {
		if _, ok := m.Parameters[name]; !ok {
			return fmt.Errorf("%s.%s: unknown parameter %q", c.Name, c.Method, name)
		}
	}
	return nil
}

func typeMatches(typ string, v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	switch typ {
	case "boolean":
		return string(v) == "true" || string(v) == "false"
	case "number":
		var f float64
		return json.Unmarshal(v, &f) == nil
	case "string":
		return v[0] == '"'
	default:
		// An unknown declared type: allow scalars only.
		return v[0] != '{' && v[0] != '['
	}
}
