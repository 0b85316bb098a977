package iot

import (
	"encoding/json"
	"maps"
)

// Bounds of Early: things kept, and values kept per thing.
const (
	MaxEarlyThings = 32
	MaxEarlyValues = 64
)

// Early holds the states of things reported before their descriptor.
// Firmware 1.7.7 sends its first states on "listen start" (§9), which can
// come before the descriptors reach the hub; a thing made from a state
// alone would have no methods or descriptions. The states wait here until
// the descriptor arrives (see Describe) and are merged then. It is bounded:
// at most MaxEarlyThings things and MaxEarlyValues values each. The zero
// value is ready to use; it is not safe for concurrent use.
type Early struct {
	states map[string]map[string]json.RawMessage
}

// Keep merges the state of a thing that has no descriptor yet. It reports
// false, keeping nothing new, when the bounds are reached.
func (e *Early) Keep(name string, state map[string]json.RawMessage) bool {
	kept, ok := e.states[name]
	if !ok {
		if len(e.states) >= MaxEarlyThings {
			return false
		}
		if e.states == nil {
			e.states = map[string]map[string]json.RawMessage{}
		}
		kept = map[string]json.RawMessage{}
	}
	all := true
	for k, v := range state {
		if _, seen := kept[k]; !seen && len(kept) >= MaxEarlyValues {
			all = false
			continue
		}
		kept[k] = append(json.RawMessage(nil), v...)
	}
	e.states[name] = kept
	return all
}

// Take removes and returns the state kept for name (nil when none).
func (e *Early) Take(name string) map[string]json.RawMessage {
	s, ok := e.states[name]
	if !ok {
		return nil
	}
	delete(e.states, name)
	return maps.Clone(s)
}
