package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

func mcpTool(name string) hub.Tool {
	return hub.Tool{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func toolNames(ts []hub.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// held is a store write of one kind held by a hook until released.
type held struct {
	arrived chan struct{} // closed when the write reaches the store
	release chan struct{}
	once    sync.Once
}

// hold makes the next write op of device id wait (the ones after it pass).
func hold(h *registrytest.Hub, op, id string) *held {
	w := &held{arrived: make(chan struct{}), release: make(chan struct{})}
	h.Store.SetHook(func(ctx context.Context, o, dev string) error {
		if o != op || dev != id {
			return nil
		}
		first := false
		w.once.Do(func() { first = true })
		if !first {
			return nil
		}
		close(w.arrived)
		<-w.release
		return nil
	})
	return w
}

func (w *held) wait(t *testing.T) {
	t.Helper()
	select {
	case <-w.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the write never reached the store")
	}
}

// failing makes every write op of any device fail.
func failing(h *registrytest.Hub, op string) {
	h.Store.SetHook(func(ctx context.Context, o, dev string) error {
		if o == op {
			return errors.New("database or disk is full")
		}
		return nil
	})
}

// stored returns the device as the store has it after a restart, or false.
func stored(t *testing.T, h *registrytest.Hub, id string) (hub.Snapshot, bool) {
	t.Helper()
	snaps, err := h.DB.LoadAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if s.Device.ID == id {
			return s, true
		}
	}
	return hub.Snapshot{}, false
}

// TestLinkLifecycle: what a device's connection reports reaches memory and
// the store only while it is the device's current connection, and a
// person's changes are durable before anyone can see them.
func TestLinkLifecycle(t *testing.T) {
	ctx := context.Background()
	a, b := mcpTool("self.a"), mcpTool("self.b")
	tests := []struct {
		name string
		run  func(t *testing.T, h *registrytest.Hub)
	}{
		{"tool list of a replaced connection is dropped", func(t *testing.T, h *registrytest.Hub) {
			old := h.Connect(t, "d1", a)
			cur := h.Connect(t, "d1", a)
			if got := old.Closes(); len(got) != 1 || !strings.Contains(got[0], "replaced") {
				t.Errorf("old connection closed with %q, want one close naming the replacement", got)
			}
			if _, err := old.Link.SetTools(ctx, []hub.Tool{b}); err != nil {
				t.Fatal(err)
			}
			if tools, _, _ := h.Reg.Tools("d1"); !slices.Equal(toolNames(tools), []string{"self.a"}) {
				t.Errorf("tools %v after a superseded list, want [self.a]", toolNames(tools))
			}
			if s, _ := stored(t, h, "d1"); !slices.Equal(toolNames(s.Tools), []string{"self.a"}) {
				t.Errorf("stored tools %v, want [self.a]", toolNames(s.Tools))
			}
			if _, err := cur.Link.SetTools(ctx, []hub.Tool{b}); err != nil {
				t.Fatal(err)
			}
			if tools, _, _ := h.Reg.Tools("d1"); !slices.Equal(toolNames(tools), []string{"self.b"}) {
				t.Errorf("tools %v from the current connection, want [self.b]", toolNames(tools))
			}
		}},
		{"tool list after a disconnect is kept", func(t *testing.T, h *registrytest.Hub) {
			d := h.Connect(t, "d1", a)
			d.Disconnect()
			if _, err := d.Link.SetTools(ctx, []hub.Tool{b}); err != nil {
				t.Fatal(err)
			}
			if s, _ := stored(t, h, "d1"); !slices.Equal(toolNames(s.Tools), []string{"self.b"}) {
				t.Errorf("stored tools %v, want the newest news [self.b]", toolNames(s.Tools))
			}
		}},
		{"tool list after a delete does not bring the device back", func(t *testing.T, h *registrytest.Hub) {
			d := h.Connect(t, "d1", a)
			if err := h.Reg.DeleteDevice(ctx, "d1"); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Link.SetTools(ctx, []hub.Tool{b}); err != nil {
				t.Fatal(err)
			}
			if err := d.Link.DescribeThings(ctx, []hub.Thing{{Name: "Lamp"}}); err != nil {
				t.Fatal(err)
			}
			d.Link.Disconnect(ctx, "gone")
			if _, err := h.Reg.Device("d1"); hub.ErrorCode(err) != hub.ENOTFOUND {
				t.Errorf("device after delete: %v, want ENOTFOUND", err)
			}
			if _, ok := stored(t, h, "d1"); ok {
				t.Error("a late report wrote the deleted device back to the store")
			}
		}},
		{"delete during a tool update", func(t *testing.T, h *registrytest.Hub) {
			d := h.Connect(t, "d1", a)
			w := hold(h, "SaveTools", "d1")
			setDone := make(chan error, 1)
			go func() { _, err := d.Link.SetTools(ctx, []hub.Tool{b}); setDone <- err }()
			w.wait(t)
			delDone := make(chan error, 1)
			go func() { delDone <- h.Reg.DeleteDevice(ctx, "d1") }()
			close(w.release)
			if err := <-setDone; err != nil {
				t.Fatal(err)
			}
			if err := <-delDone; err != nil {
				t.Fatal(err)
			}
			if _, err := h.Reg.Device("d1"); hub.ErrorCode(err) != hub.ENOTFOUND {
				t.Errorf("device after delete: %v, want ENOTFOUND", err)
			}
			if _, ok := stored(t, h, "d1"); ok {
				t.Error("the store still has the deleted device")
			}
			if len(d.Closes()) != 1 {
				t.Errorf("connection closed %d times, want once", len(d.Closes()))
			}
		}},
		{"register rolls back when the store fails", func(t *testing.T, h *registrytest.Hub) {
			failing(h, "SaveDevice")
			name := "kitchen"
			if _, err := h.Reg.Register(ctx, "d1", hub.DevicePatch{Name: &name}); err == nil {
				t.Fatal("register succeeded with a failing store")
			}
			if _, err := h.Reg.Device("d1"); hub.ErrorCode(err) != hub.ENOTFOUND {
				t.Errorf("device after a failed register: %v, want ENOTFOUND", err)
			}
			if n := len(h.Reg.Devices()); n != 0 {
				t.Errorf("%d devices listed, want 0", n)
			}
		}},
		{"register of a known device keeps it when the store fails", func(t *testing.T, h *registrytest.Hub) {
			h.Connect(t, "d1", a)
			failing(h, "SaveDevice")
			name := "kitchen"
			if _, err := h.Reg.Register(ctx, "d1", hub.DevicePatch{Name: &name}); err == nil {
				t.Fatal("register succeeded with a failing store")
			}
			d, err := h.Reg.Device("d1")
			if err != nil || !d.Online || d.Name != "" {
				t.Errorf("device %+v, %v; want it online and unnamed", d, err)
			}
		}},
		{"patch is durable before it is visible", func(t *testing.T, h *registrytest.Hub) {
			h.Connect(t, "d1", a)
			w := hold(h, "SaveDevice", "d1")
			name := "kitchen"
			done := make(chan error, 1)
			go func() { _, err := h.Reg.UpdateDevice(ctx, "d1", hub.DevicePatch{Name: &name}); done <- err }()
			w.wait(t)
			if d, _ := h.Reg.Device("d1"); d.Name != "" {
				t.Errorf("name %q visible before it is stored", d.Name)
			}
			close(w.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if d, _ := h.Reg.Device("d1"); d.Name != "kitchen" {
				t.Errorf("name %q after the write, want kitchen", d.Name)
			}
		}},
		{"failed patch changes nothing", func(t *testing.T, h *registrytest.Hub) {
			h.Connect(t, "d1", a)
			failing(h, "SaveDevice")
			name := "kitchen"
			if _, err := h.Reg.UpdateDevice(ctx, "d1", hub.DevicePatch{Name: &name}); err == nil {
				t.Fatal("patch succeeded with a failing store")
			}
			if d, _ := h.Reg.Device("d1"); d.Name != "" {
				t.Errorf("name %q after a failed patch, want none", d.Name)
			}
		}},
		{"delete is durable before it is visible", func(t *testing.T, h *registrytest.Hub) {
			d := h.Connect(t, "d1", a)
			w := hold(h, "DeleteDevice", "d1")
			done := make(chan error, 1)
			go func() { done <- h.Reg.DeleteDevice(ctx, "d1") }()
			w.wait(t)
			if dev, err := h.Reg.Device("d1"); err != nil || !dev.Online {
				t.Errorf("device during the delete: %+v, %v; want it still known and online", dev, err)
			}
			close(w.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if _, err := h.Reg.Device("d1"); hub.ErrorCode(err) != hub.ENOTFOUND {
				t.Errorf("device after delete: %v, want ENOTFOUND", err)
			}
			if len(d.Closes()) != 1 {
				t.Errorf("connection closed %d times, want once", len(d.Closes()))
			}
		}},
		{"failed delete keeps the device connected", func(t *testing.T, h *registrytest.Hub) {
			d := h.Connect(t, "d1", a)
			failing(h, "DeleteDevice")
			if err := h.Reg.DeleteDevice(ctx, "d1"); err == nil {
				t.Fatal("delete succeeded with a failing store")
			}
			if dev, err := h.Reg.Device("d1"); err != nil || !dev.Online {
				t.Errorf("device after a failed delete: %+v, %v; want it online", dev, err)
			}
			if len(d.Closes()) != 0 {
				t.Errorf("connection closed: %q", d.Closes())
			}
			h.Store.SetHook(nil)
			if _, err := h.Reg.CallTool(ctx, registry.CallRequest{DeviceID: "d1", Tool: "self.a"}); err != nil {
				t.Errorf("call after a failed delete: %v", err)
			}
		}},
		{"reconnect serves the cache marked stale", func(t *testing.T, h *registrytest.Hub) {
			h.Connect(t, "d1", a, b).Disconnect()
			h.Restart(t)
			if d, _ := h.Reg.Device("d1"); d.Online || d.ToolsStale {
				t.Errorf("after restart: online %v stale %v, want offline and not stale", d.Online, d.ToolsStale)
			}
			c := registrytest.NewConn("d1")
			l := h.Reg.Connect(registry.ConnectInfo{DeviceID: "d1", MCP: true}, c)
			tools, stale, err := h.Reg.Tools("d1")
			if err != nil || !stale || !slices.Equal(toolNames(tools), []string{"self.a", "self.b"}) {
				t.Errorf("on reconnect: tools %v stale %v err %v; want the cached two, stale", toolNames(tools), stale, err)
			}
			if _, err := h.Reg.CallTool(ctx, registry.CallRequest{DeviceID: "d1", Tool: "self.b"}); err != nil {
				t.Errorf("call of a cached tool while stale: %v", err)
			}
			if _, err := l.SetTools(ctx, []hub.Tool{a}); err != nil {
				t.Fatal(err)
			}
			if tools, stale, _ := h.Reg.Tools("d1"); stale || len(tools) != 1 {
				t.Errorf("after the fetch: %v stale %v; want [self.a], fresh", toolNames(tools), stale)
			}
		}},
		{"a legacy device's reconnect is not stale", func(t *testing.T, h *registrytest.Hub) {
			h.Connect(t, "d1").Disconnect()
			h.Connect(t, "d1")
			if d, _ := h.Reg.Device("d1"); d.ToolsStale {
				t.Error("a device without MCP is marked stale")
			}
		}},
		{"tool errors are recorded until the list is fetched", func(t *testing.T, h *registrytest.Hub) {
			d := h.Connect(t, "d1", a)
			d.Link.ToolsFailed(registry.DiscoveryFailure{Step: "tools/list", Attempt: 3, Err: errors.New("timeout")})
			if dev, _ := h.Reg.Device("d1"); !strings.Contains(dev.ToolsError, "gave up") {
				t.Errorf("tools error %q, want one saying the hub gave up", dev.ToolsError)
			}
			if _, err := d.Link.SetTools(ctx, []hub.Tool{b}); err != nil {
				t.Fatal(err)
			}
			if dev, _ := h.Reg.Device("d1"); dev.ToolsError != "" {
				t.Errorf("tools error %q after a fetch, want none", dev.ToolsError)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, registrytest.New(t, registry.Options{})) })
	}
}
