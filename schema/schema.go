// Package schema validates tool arguments against a tool's inputSchema before
// the call reaches the device, so that a bad call gets a clear answer from
// the hub instead of the firmware's terse "Missing valid argument: x" (or a
// silent fallback to a default, which the firmware does for optional
// arguments of the wrong type).
package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/xiaozhi-hub/hub"
)

// Validator compiles each distinct schema once and caches it by content, so
// that thousands of devices with the same firmware share compiled schemas.
// The zero value is not usable; call New.
type Validator struct {
	mu       sync.RWMutex
	compiled map[[32]byte]*jsonschema.Schema
	broken   map[[32]byte]error
}

// New returns an empty Validator.
func New() *Validator {
	return &Validator{compiled: map[[32]byte]*jsonschema.Schema{}, broken: map[[32]byte]error{}}
}

// ErrBadSchema is returned (wrapped) by Compile when a tool's own schema
// cannot be compiled. Validate does not fail on it: the device validates too.
var ErrBadSchema = errors.New("tool schema cannot be compiled")

// Validate checks args (a JSON object; empty means {}) against schema. A
// mismatch is a *hub.Error with code hub.EINVALID naming every problem.
// A schema that cannot be compiled is not the caller's fault and is skipped.
func (v *Validator) Validate(schema, args json.RawMessage) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return hub.Errorf(hub.EINVALID, "arguments are not valid JSON: %v", err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return hub.Errorf(hub.EINVALID, "arguments must be a JSON object, got %s", kind(inst))
	}
	s, err := v.Compile(schema)
	if err != nil {
		return nil
	}
	if err := s.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return hub.Errorf(hub.EINVALID, "arguments do not match the tool's inputSchema: %s", describe(ve))
		}
		return hub.Errorf(hub.EINVALID, "arguments do not match the tool's inputSchema: %v", err)
	}
	return nil
}

// Compile returns the compiled form of schema, from the cache when possible.
func (v *Validator) Compile(schema json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	key := sha256.Sum256(schema)
	v.mu.RLock()
	s, ok := v.compiled[key]
	bad := v.broken[key]
	v.mu.RUnlock()
	if ok {
		return s, nil
	}
	if bad != nil {
		return nil, bad
	}
	s, err := compile(schema)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("%w: %v", ErrBadSchema, err)
		v.broken[key] = err
		return nil, err
	}
	v.compiled[key] = s
	return s, nil
}

func compile(schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://tool.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("mem://tool.json")
}

// describe flattens a validation error into "at '/volume': maximum: got 150, want 100; …".
func describe(ve *jsonschema.ValidationError) string {
	var parts []string
	var walk func(u jsonschema.OutputUnit)
	walk = func(u jsonschema.OutputUnit) {
		if u.Error != nil && len(u.Errors) == 0 {
			loc := u.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			parts = append(parts, fmt.Sprintf("at '%s': %s", loc, u.Error.String()))
		}
		for _, e := range u.Errors {
			walk(e)
		}
	}
	walk(*ve.BasicOutput())
	if len(parts) == 0 {
		return ve.Error()
	}
	return strings.Join(parts, "; ")
}

func kind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	default:
		return "a number"
	}
}
