package catalog_test

import (
	"context"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

// Two users of the same devices (the agent and the MCP server) share one
// cache of their tools: a change is seen by both, each offers the tools
// with its own limits, and each call is recorded as its own.
func TestWithSharesTheDevicesNotTheSettings(t *testing.T) {
	reg, _ := ct.NewHome(t, []ct.Spec{spec(1), spec(2)})
	agent := catalog.New(reg, catalog.Options{Caller: "agent"})
	mcp := agent.With(catalog.Options{Caller: "mcp", DirectLimit: -1, AllowUserOnly: true})
	ctx := context.Background()

	if !agent.Direct(ctx0) || mcp.Direct(ctx0) {
		t.Fatalf("direct mode: agent %v, mcp %v; want each its own limit", agent.Direct(ctx0), mcp.Direct(ctx0))
	}
	tools, err := mcp.DeviceTools(ctx0, "aa:00:00:00:00:01")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.UserOnly {
			t.Errorf("%s offered: the shared cache's tools are the first catalog's, without user-only ones", tool.Target)
		}
	}

	name := "书房台灯"
	if _, err := reg.UpdateDevice(ctx, "aa:00:00:00:00:01", hub.DevicePatch{Name: &name}); err != nil {
		t.Fatal(err)
	}
	agent.Tools(ctx0) // one of them refreshes
	if got := mcp.Search(ctx0, "书房", 1); len(got.Results) != 1 || got.Results[0].ID != "aa:00:00:00:00:01" {
		t.Errorf("the other does not find the renamed device: %+v", got)
	}

	for _, c := range []*catalog.Catalog{agent, mcp} {
		tools, _ := c.DeviceTools(ctx0, "aa:00:00:00:00:01")
		if r := c.Call(ctx, find(t, tools, "self.lamp.turn_on").Name, nil); r.IsError {
			t.Fatalf("%s: %+v", c.Options().Caller, r)
		}
	}
	calls, err := reg.Calls(ctx, hub.CallFilter{DeviceID: "aa:00:00:00:00:01"})
	if err != nil {
		t.Fatal(err)
	}
	var callers []string
	for _, rec := range calls {
		callers = append(callers, rec.Caller)
	}
	if len(callers) != 2 || callers[0] != "mcp" || callers[1] != "agent" {
		t.Errorf("callers, newest first: %v, want [mcp agent]", callers)
	}
}
