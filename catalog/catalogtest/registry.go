package catalogtest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

// NewRegistry returns a loaded registry over a SQLite store in the test's
// temporary directory; both are closed at the end of the test.
func NewRegistry(tb testing.TB) *registry.Registry { return registrytest.NewRegistry(tb) }

// NewHome returns a registry with every device of specs connected.
func NewHome(tb testing.TB, specs []Spec) (*registry.Registry, map[string]*Device) {
	tb.Helper()
	reg := NewRegistry(tb)
	devs := map[string]*Device{}
	for _, s := range specs {
		devs[s.ID] = Connect(tb, reg, s)
	}
	return reg, devs
}

// Connect connects a fake device described by s to reg: it registers the
// connection, sets the name and room, and reports tools, things and state.
func Connect(tb testing.TB, reg *registry.Registry, s Spec) *Device {
	tb.Helper()
	d := &Device{Spec: s, reg: reg, state: map[string]map[string]any{}}
	for thing, st := range s.State {
		d.state[thing] = map[string]any{}
		for k, v := range st {
			d.state[thing][k] = v
		}
	}
	d.Reconnect(tb)
	return d
}

// Reconnect connects the device (again), as a session does after hello.
func (d *Device) Reconnect(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	s := d.Spec
	conn := registrytest.NewConn(s.ID)
	conn.Handle(d.callTool)
	conn.HandleIoT(d.sendIoT)
	d.mu.Lock()
	d.conn = conn
	d.conns = append(d.conns, conn)
	d.mu.Unlock()
	link := d.reg.Connect(registry.ConnectInfo{DeviceID: s.ID, ProtocolVersion: 1, MCP: len(s.Tools) > 0}, conn)
	if err := link.Save(ctx); err != nil {
		tb.Fatal(err)
	}
	d.mu.Lock()
	d.link = link
	d.mu.Unlock()
	name, room, aliases := s.Name, s.Room, s.Aliases
	if aliases == nil {
		aliases = []string{}
	}
	if _, err := d.reg.UpdateDevice(ctx, s.ID, hub.DevicePatch{Name: &name, Room: &room, Aliases: &aliases}); err != nil {
		tb.Fatal(err)
	}
	if len(s.Tools) > 0 {
		link.SetServerInfo(s.Board, "2.4.2")
		if _, err := link.SetTools(ctx, s.Tools); err != nil {
			tb.Fatal(err)
		}
	}
	if len(s.Things) > 0 {
		if err := link.DescribeThings(ctx, s.Things); err != nil {
			tb.Fatal(err)
		}
		if err := d.report(ctx, nil); err != nil {
			tb.Fatal(err)
		}
	}
}

// Disconnect marks the device offline, as a session does when its
// connection ends.
func (d *Device) Disconnect() {
	d.mu.Lock()
	link, conn := d.link, d.conn
	d.mu.Unlock()
	conn.Hangup()
	link.Disconnect(context.Background(), "test disconnect")
}

func (d *Device) report(ctx context.Context, only []string) error {
	d.mu.Lock()
	var states []registry.ThingState
	for thing, st := range d.state {
		if only != nil && !slices.Contains(only, thing) {
			continue
		}
		m := map[string]json.RawMessage{}
		for k, v := range st {
			b, _ := json.Marshal(v)
			m[k] = b
		}
		states = append(states, registry.ThingState{Name: thing, State: m})
	}
	link := d.link
	d.mu.Unlock()
	return link.ReportStates(ctx, states)
}
