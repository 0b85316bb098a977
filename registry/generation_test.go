package registry_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
)

// TestGeneration: every change an agent can see moves the generation;
// calls and device chatter do not; IoT state reports move Generation but
// not ToolsGeneration, and ToolsChanged wakes a waiter on a tools change.
func TestGeneration(t *testing.T) {
	ctx := context.Background()
	h := registrytest.New(t, registry.Options{})
	reg := h.Reg
	type gens struct{ all, tools uint64 }
	now := func() gens { return gens{reg.Generation(), reg.ToolsGeneration()} }
	var d *registrytest.Device
	name := "kitchen"
	steps := []struct {
		name              string
		do                func()
		wantAll, wantTool bool
	}{
		{"connect", func() { d = h.Connect(t, "d1", mcpTool("self.a")) }, true, true},
		{"same tools again", func() { d.Link.SetTools(ctx, []hub.Tool{mcpTool("self.a")}) }, false, false},
		{"new tools", func() { d.Link.SetTools(ctx, []hub.Tool{mcpTool("self.b")}) }, true, true},
		{"call", func() { reg.CallTool(ctx, registry.CallRequest{DeviceID: "d1", Tool: "self.b"}) }, false, false},
		{"device message", func() { d.Link.Event(hub.EventDeviceMessage, map[string]string{"type": "listen"}) }, false, false},
		{"thing described", func() { d.Link.DescribeThings(ctx, []hub.Thing{{Name: "Lamp"}}) }, true, true},
		{"thing state", func() {
			d.Link.ReportStates(ctx, []registry.ThingState{{Name: "Lamp", State: map[string]json.RawMessage{"power": json.RawMessage("true")}}})
		}, true, false},
		{"rename", func() { reg.UpdateDevice(ctx, "d1", hub.DevicePatch{Name: &name}) }, true, true},
		{"disconnect", func() { d.Disconnect() }, true, true},
		{"delete", func() { reg.DeleteDevice(ctx, "d1") }, true, true},
	}
	for _, st := range steps {
		before := now()
		woken := reg.ToolsChanged(before.tools)
		st.do()
		after := now()
		if (after.all != before.all) != st.wantAll || (after.tools != before.tools) != st.wantTool {
			t.Errorf("%s: generation %v → %v; want change of all %v, of tools %v", st.name, before, after, st.wantAll, st.wantTool)
		}
		select {
		case <-woken:
			if !st.wantTool {
				t.Errorf("%s: ToolsChanged woke without a tools change", st.name)
			}
		default:
			if st.wantTool {
				t.Errorf("%s: ToolsChanged did not wake", st.name)
			}
		}
	}
}
