package catalog_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

// What is callable is what Tools offers: in direct mode (few devices)
// call_device_tool and send_iot_commands are not offered, and calling them
// anyway (the built-in agent's model may try) is refused with what to do,
// as the MCP server refuses tools it does not list.
func TestDirectModeRefusesHubToolsItDoesNotOffer(t *testing.T) {
	reg, devs := ct.NewHome(t, []ct.Spec{spec(1), spec(2)})
	cat := catalog.New(reg, catalog.Options{})
	if !cat.Direct(ctx0) {
		t.Fatal("two devices: want direct mode")
	}
	ctx := context.Background()
	r := cat.Call(ctx, catalog.ToolCallDeviceTool, json.RawMessage(`{"device_id":"aa:00:00:00:00:01","tool":"self.lamp.turn_on"}`))
	if !r.IsError || r.Code != hub.ENOTFOUND || !strings.Contains(r.Text, "device's own tool") {
		t.Fatalf("call_device_tool in direct mode: %+v", r)
	}
	if devs["aa:00:00:00:00:01"].State("lamp", "power") == true {
		t.Fatal("the lamp was turned on through a tool that is not offered")
	}
	r = cat.Call(ctx, catalog.ToolSendIoTCommands, json.RawMessage(`{"device_id":"aa:00:00:00:00:02","commands":[{"name":"Lamp","method":"TurnOn"}]}`))
	if !r.IsError || r.Code != hub.ENOTFOUND {
		t.Fatalf("send_iot_commands in direct mode: %+v", r)
	}
	// search_devices and get_device are offered in both modes.
	if r := cat.Call(ctx, catalog.ToolSearchDevices, json.RawMessage(`{"query":"灯"}`)); r.IsError {
		t.Fatalf("search_devices in direct mode: %+v", r)
	}
}
