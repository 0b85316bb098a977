package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/mcpserver"
	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/sim"
)

// startHubWithLamp runs the real hub (server.Open) with one simulated lamp
// on firmware 2.x, named 吸顶灯 in 客厅, and serves /mcp over its registry.
func startHubWithLamp(t *testing.T) (mcpURL string, lamp *sim.Device) {
	t.Helper()
	h, _ := servertest.Start(t, nil)
	lamp = sim.New(sim.Config{URL: h.DeviceURL(), DeviceID: "02:00:00:00:00:01", Lamp: true, NoScreen: true})
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := lamp.Connect(cctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lamp.Close() })
	name, room := "吸顶灯", "客厅"
	if _, err := h.Registry.UpdateDevice(context.Background(), lamp.ID(), hub.DevicePatch{Name: &name, Room: &room}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, _ := h.Registry.Device(lamp.ID())
		if d.ToolCount > 0 && !d.ToolsStale {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lamp's tools were not discovered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return startServer(t, h.Registry, mcpserver.Options{}), lamp
}

func TestE2ETypeScriptClientTurnsOnSimulatedLamp(t *testing.T) {
	url, lamp := startHubWithLamp(t)
	node := startNode(t, url)
	var l listed
	node.do(map[string]any{"op": "list"}, &l)
	turnOn := catalog.Name(lamp.ID(), "self.lamp.turn_on")
	if !slices.Contains(l.names(), turnOn) {
		t.Fatalf("tools %v lack %s", l.names(), turnOn)
	}
	for _, tool := range l.Tools {
		if tool.Name == turnOn && tool.Description != "吸顶灯 in 客厅 (device 02:00:00:00:00:01): Turn on the lamp" {
			t.Errorf("description %q", tool.Description)
		}
	}
	var c called
	node.do(map[string]any{"op": "call", "name": turnOn}, &c)
	if c.Result.IsError || !lamp.LampOn() {
		t.Fatalf("call %+v; lamp on: %v", c, lamp.LampOn())
	}
	var closed struct{ Closed bool }
	node.do(map[string]any{"op": "close"}, &closed)
}

func TestE2EGoClientSearchesAndCalls(t *testing.T) {
	url, lamp := startHubWithLamp(t)
	cs := connectGo(t, url, make(chan struct{}, 1))
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_devices", Arguments: map[string]any{"query": "客厅的灯"}})
	if err != nil || res.IsError || !strings.Contains(text(res), `"device_id":"02:00:00:00:00:01"`) {
		t.Fatalf("search: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: catalog.Name(lamp.ID(), "self.lamp.turn_on")})
	if err != nil || res.IsError || !lamp.LampOn() {
		t.Fatalf("turn_on: %v %+v", err, res)
	}
}
