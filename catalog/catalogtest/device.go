package catalogtest

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

// Device is a fake device with state, connected to the registry through the
// registry's shared fake connection (registrytest.Conn), a new one per
// connection. MCP tools named self.<kind>.<verb> act on the state of <kind>:
// turn_on/turn_off set "power", set_power sets it from "on", set_<x> stores
// its argument, get_state returns the kind's state. IoT commands
// TurnOn/TurnOff/SetVolume (any case) change the thing's state, which is
// then reported.
type Device struct {
	Spec Spec
	reg  *registry.Registry

	mu    sync.Mutex
	link  *registry.Link
	conn  *registrytest.Conn   // the current connection
	conns []*registrytest.Conn // every connection, in order
	state map[string]map[string]any
	// handle, if set, answers MCP calls instead of the default behaviour.
	handle func(ctx context.Context, name string, args map[string]any) (hub.CallResult, error)
}

// Call is one call the device received.
type Call = registrytest.Call

// Calls returns the calls received so far, on every connection.
func (d *Device) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Call
	for _, c := range d.conns {
		out = append(out, c.Calls()...)
	}
	return out
}

// State returns a value of the state of kind (an MCP tool family such as
// "lamp", or an IoT thing such as "Lamp").
func (d *Device) State(kind, key string) any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state[kind][key]
}

// Hold makes MCP calls on the current connection wait until the returned
// function is called (or the call's context ends, or the device
// disconnects).
func (d *Device) Hold() (release func()) {
	d.mu.Lock()
	c := d.conn
	d.mu.Unlock()
	return c.Hold()
}

// Handle replaces the default behaviour of MCP calls.
func (d *Device) Handle(h func(ctx context.Context, name string, args map[string]any) (hub.CallResult, error)) {
	d.mu.Lock()
	d.handle = h
	d.mu.Unlock()
}

// Text is a successful result with one text item.
func Text(s string) hub.CallResult { return registrytest.Text(s) }

// callTool answers the MCP calls of every connection of the device.
func (d *Device) callTool(ctx context.Context, name string, raw json.RawMessage) (hub.CallResult, error) {
	d.mu.Lock()
	handle := d.handle
	d.mu.Unlock()
	var args map[string]any
	_ = json.Unmarshal(raw, &args)
	if handle != nil {
		return handle(ctx, name, args)
	}
	return d.act(name, args)
}

func (d *Device) act(name string, args map[string]any) (hub.CallResult, error) {
	known := false
	for _, t := range d.Spec.Tools {
		known = known || t.Name == name
	}
	if !known {
		return hub.CallResult{}, hub.Errorf(hub.EDEVICE, "Unknown tool: %s", name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if name == "self.get_device_status" {
		b, _ := json.Marshal(map[string]any{"audio_speaker": map[string]any{"volume": d.get("audio_speaker", "volume", 70)},
			"screen": map[string]any{"brightness": d.get("screen", "brightness", 100), "theme": d.get("screen", "theme", "light")}})
		return Text(string(b)), nil
	}
	parts := strings.Split(strings.TrimPrefix(name, "self."), ".")
	kind, verb := parts[0], parts[len(parts)-1]
	st := d.state[kind]
	if st == nil {
		st = map[string]any{}
		d.state[kind] = st
	}
	switch {
	case verb == "turn_on":
		st["power"] = true
	case verb == "turn_off":
		st["power"] = false
	case verb == "set_power":
		st["power"] = args["on"]
	case strings.HasPrefix(verb, "get_"):
		b, _ := json.Marshal(st)
		return Text(string(b)), nil
	case strings.HasPrefix(verb, "set_"):
		maps.Copy(st, args)
	default:
		st["last"] = verb
	}
	return Text("true"), nil
}

func (d *Device) get(kind, key string, def any) any {
	if v, ok := d.state[kind][key]; ok {
		return v
	}
	return def
}

// sendIoT applies IoT commands and reports the new state, as firmware does
// at its next state report.
func (d *Device) sendIoT(ctx context.Context, cmds []hub.IoTCommand) error {
	var things []string
	d.mu.Lock()
	for _, c := range cmds {
		st := d.state[c.Name]
		if st == nil {
			st = map[string]any{}
			d.state[c.Name] = st
		}
		var params map[string]any
		_ = json.Unmarshal(c.Parameters, &params)
		switch strings.ToLower(strings.ReplaceAll(c.Method, "_", "")) {
		case "turnon":
			st["power"] = true
		case "turnoff":
			st["power"] = false
		default:
			maps.Copy(st, params)
		}
		things = append(things, c.Name)
	}
	d.mu.Unlock()
	return d.report(ctx, things)
}
