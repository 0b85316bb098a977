package catalog_test

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

func spec(id int) ct.Spec {
	for _, s := range ct.Home() {
		if s.ID == "aa:00:00:00:00:"+[]string{"", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11"}[id] {
			return s
		}
	}
	panic("no such device")
}

func find(t *testing.T, tools []catalog.Tool, target string) catalog.Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Target == target {
			return tool
		}
	}
	t.Fatalf("no tool with target %q", target)
	return catalog.Tool{}
}

func TestDeviceToolsAndPolicy(t *testing.T) {
	reg, _ := ct.NewHome(t, []ct.Spec{spec(1), spec(2)})
	cat := catalog.New(reg, catalog.Options{})
	tools := cat.Tools(ctx0)
	byTarget := map[string]catalog.Tool{}
	for _, tool := range tools {
		if !catalog.NamePattern.MatchString(tool.Name) {
			t.Errorf("invalid name %q", tool.Name)
		}
		byTarget[cmp.Or(tool.Target, tool.Name)] = tool
	}
	for _, want := range []string{"self.lamp.turn_on", "self.get_device_status", "Lamp.TurnOn", "Lamp", "Speaker.SetVolume", "Speaker"} {
		if _, ok := byTarget[want]; !ok {
			t.Errorf("missing %s in %v", want, keys(byTarget))
		}
	}
	for _, hidden := range []string{"self.reboot", "self.upgrade_firmware"} {
		if _, ok := byTarget[hidden]; ok {
			t.Errorf("user-only tool %s offered without the policy", hidden)
		}
	}
	if _, ok := byTarget["search_devices"]; !ok {
		t.Error("search_devices missing in direct mode")
	}
	if _, ok := byTarget["call_device_tool"]; ok {
		t.Error("call_device_tool offered in direct mode")
	}
	// The volume tool's description quotes self.get_device_status: rewritten.
	vol := byTarget["self.audio_speaker.set_volume"]
	status := byTarget["self.get_device_status"]
	if !strings.Contains(vol.Description, "`"+status.Name+"`") || strings.Contains(vol.Description, "self.get_device_status") {
		t.Errorf("description not rewritten: %q", vol.Description)
	}
	if !strings.HasPrefix(vol.Description, "吸顶灯 in 客厅 (device aa:00:00:00:00:01): ") {
		t.Errorf("description lacks device context: %q", vol.Description)
	}
	// IoT methods: every parameter required.
	var schema struct {
		Required []string `json:"required"`
		Type     string   `json:"type"`
	}
	if err := json.Unmarshal(byTarget["Speaker.SetVolume"].InputSchema, &schema); err != nil || schema.Type != "object" ||
		len(schema.Required) != 1 || schema.Required[0] != "volume" {
		t.Errorf("IoT schema %s", byTarget["Speaker.SetVolume"].InputSchema)
	}

	allowed := catalog.New(reg, catalog.Options{AllowUserOnly: true})
	dt, err := allowed.DeviceTools(ctx0, "aa:00:00:00:00:01")
	if err != nil {
		t.Fatal(err)
	}
	if tool := find(t, dt, "self.reboot"); !tool.UserOnly {
		t.Error("reboot not marked user-only")
	}
}

func keys(m map[string]catalog.Tool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCallsAndErrors(t *testing.T) {
	reg, devs := ct.NewHome(t, []ct.Spec{spec(1), spec(2)})
	cat := catalog.New(reg, catalog.Options{})
	ctx := context.Background()
	lamp, _ := cat.DeviceTools(ctx0, "aa:00:00:00:00:01")

	r := cat.Call(ctx, find(t, lamp, "self.lamp.turn_on").Name, nil)
	if r.IsError || r.Text != "true" || devs["aa:00:00:00:00:01"].State("lamp", "power") != true {
		t.Fatalf("turn_on: %+v", r)
	}
	r = cat.Call(ctx, find(t, lamp, "self.audio_speaker.set_volume").Name, json.RawMessage(`{"volume":150}`))
	if !r.IsError || r.Code != hub.EINVALID || !strings.Contains(r.Text, "maximum") {
		t.Fatalf("invalid volume: %+v", r)
	}
	r = cat.Call(ctx, "dnope_x", nil)
	if !r.IsError || r.Code != hub.ENOTFOUND {
		t.Fatalf("unknown tool: %+v", r)
	}

	// IoT: a method changes the state; the state tool answers from the cache.
	floor, _ := cat.DeviceTools(ctx0, "aa:00:00:00:00:02")
	r = cat.Call(ctx, find(t, floor, "Lamp.TurnOn").Name, json.RawMessage(`{}`))
	if r.IsError || !strings.Contains(r.Text, `"reported_state":{"Lamp":{"power":true}}`) {
		t.Fatalf("Lamp.TurnOn: %+v", r)
	}
	calls := len(devs["aa:00:00:00:00:02"].Calls())
	r = cat.Call(ctx, find(t, floor, "Lamp").Name, nil)
	if r.IsError || !strings.Contains(r.Text, `"power":true`) || len(devs["aa:00:00:00:00:02"].Calls()) != calls {
		t.Fatalf("Lamp state: %+v", r)
	}
	r = cat.Call(ctx, find(t, floor, "Speaker.SetVolume").Name, json.RawMessage(`{"volume":"loud"}`))
	if !r.IsError || r.Code != hub.EINVALID {
		t.Fatalf("bad IoT parameter: %+v", r)
	}

	// Offline: a clear error, and the tools are no longer offered.
	devs["aa:00:00:00:00:01"].Disconnect()
	r = cat.Call(ctx, find(t, lamp, "self.lamp.turn_off").Name, nil)
	if !r.IsError || r.Code != hub.EOFFLINE {
		t.Fatalf("offline: %+v", r)
	}
	for _, tool := range cat.Tools(ctx0) {
		if tool.DeviceID == "aa:00:00:00:00:01" {
			t.Fatalf("offline device's tool %s still offered", tool.Target)
		}
	}
}

func TestHubToolsWithManyDevices(t *testing.T) {
	reg, devs := ct.NewHome(t, ct.Home())
	cat := catalog.New(reg, catalog.Options{})
	ctx := context.Background()
	tools := cat.Tools(ctx0)
	if len(tools) != 4 || cat.Direct(ctx0) {
		t.Fatalf("with %d devices want the 4 hub tools, got %d", len(ct.Home()), len(tools))
	}
	r := cat.Call(ctx, catalog.ToolSearchDevices, json.RawMessage(`{"query":"客厅 灯","limit":2}`))
	var sr catalog.SearchResult
	if r.IsError || json.Unmarshal([]byte(r.Text), &sr) != nil || len(sr.Results) != 2 || sr.Results[0].ID != "aa:00:00:00:00:01" {
		t.Fatalf("search: %+v", r)
	}
	if len(sr.Results[0].Tools) == 0 || len(sr.Results[0].Matched) == 0 {
		t.Fatalf("search result lacks tools or explanation: %+v", sr.Results[0])
	}
	r = cat.Call(ctx, catalog.ToolCallDeviceTool, json.RawMessage(`{"device_id":"aa:00:00:00:00:01","tool":"self.lamp.turn_on"}`))
	if r.IsError || devs["aa:00:00:00:00:01"].State("lamp", "power") != true {
		t.Fatalf("call_device_tool: %+v", r)
	}
	r = cat.Call(ctx, catalog.ToolCallDeviceTool, json.RawMessage(`{"device_id":"aa:00:00:00:00:01","tool":"self.reboot"}`))
	if !r.IsError || r.Code != hub.ENOTFOUND {
		t.Fatalf("user-only tool through call_device_tool: %+v", r)
	}
	r = cat.Call(ctx, catalog.ToolCallDeviceTool, json.RawMessage(`{"device_id":"aa:00:00:00:00:01","tool":"self.lamp.turn_on","args":{}}`))
	if !r.IsError || r.Code != hub.EINVALID || !strings.Contains(r.Text, "args") {
		t.Fatalf("misspelt argument: %+v", r)
	}
	r = cat.Call(ctx, catalog.ToolSendIoTCommands, json.RawMessage(`{"device_id":"aa:00:00:00:00:21","commands":[{"name":"Lamp","method":"TurnOn"}]}`))
	if r.IsError || devs["aa:00:00:00:00:21"].State("Lamp", "power") != true {
		t.Fatalf("send_iot_commands: %+v", r)
	}
	small := catalog.New(reg, catalog.Options{MaxResultBytes: 1000})
	r = small.Call(ctx, catalog.ToolGetDevice, json.RawMessage(`{"device_id":"aa:00:00:00:00:03"}`))
	if r.IsError || !r.Truncated || len(r.Text) > 1100 {
		t.Fatalf("get_device should be cut to MaxResultBytes: truncated=%v len=%d", r.Truncated, len(r.Text))
	}
	r = cat.Call(ctx, catalog.ToolSearchDevices, json.RawMessage(`{}`))
	if !r.IsError || r.Code != hub.EINVALID {
		t.Fatalf("search without query: %+v", r)
	}
}
