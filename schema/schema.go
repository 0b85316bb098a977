// Package schema validates tool arguments against a tool's inputSchema before
// the call reaches the device, so that a bad call gets a clear answer from
// the hub instead of the firmware's terse "Missing valid argument: x" (or a
// silent fallback to a default, which the firmware does for optional
// arguments of the wrong type).
package schema

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/xiaozhi-hub/hub"
)

// Validator checks each distinct schema once (Check), compiles it once in
// the background, and caches both by content, so that thousands of devices
// with the same firmware share them. The zero value is not usable; call
// New, and Close when done.
type Validator struct {
	mu      sync.Mutex
	entries map[[32]byte]*entry
	pending []*entry
	closed  bool
	started bool          // the worker runs (from the first schema to compile)
	wake    chan struct{} // has a value when pending may be non-empty
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// entry is one distinct schema. ready is closed once s or err is set.
type entry struct {
	raw   json.RawMessage
	ready chan struct{}
	nodes int   // expanded size, from check
	bound error // from check, set before the entry is shared
	s     *jsonschema.Schema
	err   error // bound, or a compile error; read after ready
}

// maxEntries bounds the cache; when full it starts over (schemas in use
// are compiled again when next needed).
const maxEntries = 4096

// MaxValidationWork bounds one validation: the argument's count of JSON
// values times the schema's expanded size (MaxSchemaNodes). Arguments
// above it are refused with EINVALID instead of being checked for long.
const MaxValidationWork = 1 << 17

// New returns an empty Validator. Its compiling worker starts with the
// first schema to compile, so New starts nothing.
func New() *Validator {
	v := &Validator{
		entries: map[[32]byte]*entry{},
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	return v
}

// Close stops the worker and waits for it. Validations waiting for a
// compile that had not run skip the hub's check.
func (v *Validator) Close() {
	v.once.Do(func() {
		v.mu.Lock()
		started := v.started
		v.started = true // no worker from now on
		if !started {
			v.closed = true
		}
		v.mu.Unlock()
		close(v.quit)
		if started {
			<-v.done
		}
	})
}

// ErrBadSchema is returned (wrapped) by Compile when a tool's own schema
// cannot be compiled. Validate does not fail on it: the device validates too.
var ErrBadSchema = errors.New("tool schema cannot be compiled")

var errDropped = errors.New("schema dropped from the cache before it was compiled")

// Prepare checks schema (see Check) and, when it is within bounds and new,
// queues it for compiling in the background. It does not wait for the
// compile. The error, wrapping ErrUnchecked, says why the hub will not
// check arguments for this schema.
func (v *Validator) Prepare(schema json.RawMessage) error {
	return v.entry(schema).bound
}

// Validate checks args, a JSON object (registry.Arguments turns nothing or
// null into {} before), against schema. A
// mismatch is a *hub.Error with code hub.EINVALID naming every problem.
// A schema outside Check's bounds, or that cannot be compiled, is not the
// caller's fault and is skipped: the device validates too. If ctx ends
// while the schema is still being compiled, the error is ETIMEOUT.
func (v *Validator) Validate(ctx context.Context, schema, args json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return hub.Errorf(hub.EINVALID, "arguments are not valid JSON: %v", err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return hub.Errorf(hub.EINVALID, "arguments must be a JSON object, got %s", kind(inst))
	}
	e := v.entry(schema)
	select {
	case <-e.ready:
	case <-ctx.Done():
		return hub.Errorf(hub.ETIMEOUT, "the call's time ran out while the hub was preparing the tool's inputSchema; try again")
	}
	if e.err != nil {
		return nil
	}
	n, bad := count(inst)
	if bad != "" {
		return hub.Errorf(hub.EINVALID, "arguments have the number %s, too long or too large for the hub to check", shorten(bad))
	}
	if n*e.nodes > MaxValidationWork {
		return hub.Errorf(hub.EINVALID, "arguments have %d JSON values, more than the %d the hub checks against this tool's inputSchema",
			n, MaxValidationWork/e.nodes)
	}
	if err := ctx.Err(); err != nil {
		return hub.Errorf(hub.ETIMEOUT, "the call's time ran out before its arguments were checked: %v", err)
	}
	if err := safeValidate(e.s, inst); err != nil {
		if errors.Is(err, errPanic) {
			return nil // the library's fault, not the caller's: the device checks
		}
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return hub.Errorf(hub.EINVALID, "arguments do not match the tool's inputSchema: %s", describe(ve))
		}
		return hub.Errorf(hub.EINVALID, "arguments do not match the tool's inputSchema: %v", err)
	}
	return nil
}

// Compile returns the compiled form of schema, waiting for the background
// compile when needed. A schema outside Check's bounds is an ErrUnchecked
// error, one the library refuses an ErrBadSchema error.
func (v *Validator) Compile(ctx context.Context, schema json.RawMessage) (*jsonschema.Schema, error) {
	e := v.entry(schema)
	select {
	case <-e.ready:
		return e.s, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// entry returns the cache entry for schema, creating it (checked, and
// queued for compiling when within bounds) if it is new.
func (v *Validator) entry(schema json.RawMessage) *entry {
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	key := sha256.Sum256(schema)
	v.mu.Lock()
	e, ok := v.entries[key]
	v.mu.Unlock()
	if ok {
		return e
	}
	e = &entry{raw: bytes.Clone(schema), ready: make(chan struct{})}
	e.nodes, e.bound = check(schema)
	e.err = e.bound
	v.mu.Lock()
	defer v.mu.Unlock()
	if old, ok := v.entries[key]; ok {
		return old
	}
	if len(v.entries) >= maxEntries {
		v.entries = map[[32]byte]*entry{}
		v.dropPendingLocked()
	}
	v.entries[key] = e
	if e.err != nil || v.closed {
		if e.err == nil {
			e.err = errDropped
		}
		close(e.ready)
		return e
	}
	v.pending = append(v.pending, e)
	if !v.started {
		v.started = true
		go v.work()
	}
	select {
	case v.wake <- struct{}{}:
	default:
	}
	return e
}

func (v *Validator) dropPendingLocked() {
	for _, e := range v.pending {
		e.err = errDropped
		close(e.ready)
	}
	v.pending = nil
}

// work compiles queued schemas one at a time until Close.
func (v *Validator) work() {
	defer close(v.done)
	for {
		select {
		case <-v.quit:
			v.mu.Lock()
			v.closed = true
			v.dropPendingLocked()
			v.mu.Unlock()
			return
		case <-v.wake:
		}
		for {
			v.mu.Lock()
			if len(v.pending) == 0 {
				v.mu.Unlock()
				break
			}
			e := v.pending[0]
			v.pending[0] = nil
			v.pending = v.pending[1:]
			v.mu.Unlock()
			s, err := compile(e.raw)
			if err != nil {
				err = fmt.Errorf("%w: %v", ErrBadSchema, err)
			}
			e.s, e.err = s, err
			close(e.ready)
		}
	}
}

// refuseLoader is the compiler's URLLoader: a tool's schema may refer only
// to itself. The library's default would open local files (file:///…),
// and a device writes the schema. The standard drafts' meta-schemas are
// built into the library and never reach a loader.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("the hub loads no schema from outside the tool's inputSchema (%s)", shorten(url))
}

var errPanic = errors.New("the schema library failed")

// safeValidate is s.Validate, with a panic in the library (it has some on
// odd numbers) turned into an error instead of a crash of the hub.
func safeValidate(s *jsonschema.Schema, inst any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	return s.Validate(inst)
}

func compile(schema json.RawMessage) (s *jsonschema.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource("mem://tool.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("mem://tool.json")
}

// count returns how many JSON values v holds, itself included, and the
// first number in it that is not saneNumber.
func count(v any) (n int, bad string) {
	n = 1
	add := func(x any) {
		m, b := count(x)
		n += m
		if bad == "" {
			bad = b
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			add(x)
		}
	case []any:
		for _, x := range v {
			add(x)
		}
	case json.Number:
		if !saneNumber(string(v)) {
			bad = string(v)
		}
	}
	return n, bad
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
