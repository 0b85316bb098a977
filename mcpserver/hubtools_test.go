package mcpserver_test

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xiaozhi-hub/hub/catalog"
)

// With few devices (direct mode) tools/list offers the device tools, and
// call_device_tool and send_iot_commands are not offered. What is callable
// is what is listed: calling them anyway is an error, not a hidden path.
func TestDirectModeCallsOnlyListedTools(t *testing.T) {
	url, lamp := startHubWithLamp(t)
	cs := connectGo(t, url, make(chan struct{}, 1))
	ctx := context.Background()
	list, err := cs.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if slices.Contains(names, catalog.ToolCallDeviceTool) || !slices.Contains(names, catalog.Name(lamp.ID(), "self.lamp.turn_on")) {
		t.Fatalf("direct mode lists %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: catalog.ToolCallDeviceTool,
		Arguments: map[string]any{"device_id": lamp.ID(), "tool": "self.lamp.turn_on"}})
	if err == nil && !res.IsError {
		t.Fatalf("call_device_tool, not in tools/list, ran: %+v (lamp on: %v)", res, lamp.LampOn())
	}
	if lamp.LampOn() {
		t.Fatal("the lamp was turned on through a tool that is not offered")
	}
}
