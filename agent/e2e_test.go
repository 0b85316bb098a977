package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/sim"
)

// These tests run the seed's example end to end against the real hub
// (server.Open: SQLite store, registry, device WebSocket sessions) and
// simulated devices that speak the firmware's protocols, with a local
// stand-in for the LLM API. The agent is attached to the hub's registry
// and served over HTTP by the admin API (package api), as the hub mounts it.

type e2eHome struct {
	hub     *server.Hub
	devices map[string]*sim.Device
}

func startE2E(t *testing.T) *e2eHome {
	t.Helper()
	h, _ := servertest.Start(t, nil)
	home := &e2eHome{hub: h, devices: map[string]*sim.Device{}}
	for _, d := range []struct {
		cfg        sim.Config
		name, room string
	}{
		{sim.Config{DeviceID: "02:00:00:00:00:01", Lamp: true, NoScreen: true, Board: "lamp-controller"}, "吸顶灯", "客厅"},
		{sim.Config{DeviceID: "02:00:00:00:00:02", Board: "esp-box-3"}, "小智音箱", "客厅"},
		{sim.Config{DeviceID: "02:00:00:00:00:03", Lamp: true, NoScreen: true}, "床头灯", "主卧"},
		{sim.Config{DeviceID: "02:00:00:00:00:04", Mode: sim.ModeIoT}, "台灯", "次卧"},
	} {
		d.cfg.URL = h.DeviceURL()
		dev := sim.New(d.cfg)
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := dev.Connect(cctx); err != nil {
			t.Fatalf("connect %s: %v", d.cfg.DeviceID, err)
		}
		ccancel()
		t.Cleanup(func() { dev.Close() })
		name, room := d.name, d.room
		if _, err := h.Registry.UpdateDevice(context.Background(), d.cfg.DeviceID, hub.DevicePatch{Name: &name, Room: &room}); err != nil {
			t.Fatal(err)
		}
		home.devices[d.cfg.DeviceID] = dev
	}
	// Wait until every device's tools (or things) are known.
	waitUntil(t, "device discovery", func() bool {
		for _, d := range h.Registry.Devices() {
			if !d.Online || (d.MCP && (d.ToolCount == 0 || d.ToolsStale)) || (!d.MCP && d.ThingCount == 0) {
				return false
			}
		}
		return len(h.Registry.Devices()) == 4
	})
	return home
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// chat posts to the agent handler and returns the events of the stream.
func chat(t *testing.T, url, msg string) []agent.Event {
	t.Helper()
	resp := request(t, "POST", url+agent.ChatPath, `{"message":"`+msg+`"}`)
	var events []agent.Event
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e agent.Event
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
		}
	}
	return events
}

func TestE2ETurnOnTheLivingRoomLight(t *testing.T) {
	home := startE2E(t)
	for _, c := range []struct {
		provider    string
		directLimit int
	}{{agent.ProviderAnthropic, 0}, {agent.ProviderOpenAI, -1}} {
		t.Run(c.provider, func(t *testing.T) {
			lamp := home.devices["02:00:00:00:00:01"]
			if _, err := home.hub.Registry.CallTool(context.Background(), registryOff()); err != nil {
				t.Fatal(err)
			}
			var f *fakeLLM
			cfg := agent.Config{Provider: c.provider, APIKey: "test-key", Model: "m", DirectLimit: c.directLimit}
			if c.provider == agent.ProviderAnthropic {
				f = anthropicFake(t, seedBrain)
				cfg.BaseURL = f.srv.URL
			} else {
				f = openaiFake(t, seedBrain)
				cfg.BaseURL = f.srv.URL + "/v1"
			}
			a := agent.New(home.hub.Registry, cfg)
			defer a.Close()
			events := chat(t, serve(t, home.hub.Registry, a), "打开客厅的灯")
			done := events[len(events)-1]
			if done.Type != agent.EventDone || done.Outcome != "ok" || done.Text != "已打开客厅的吸顶灯" {
				t.Fatalf("events %+v", events)
			}
			if !lamp.LampOn() {
				t.Fatal("the simulated lamp is still off")
			}
			var calls []string
			for _, e := range events {
				if e.Type == agent.EventToolResult {
					calls = append(calls, e.Name+"→"+e.Target)
				}
			}
			t.Logf("%s: %v, answer %q", c.provider, calls, done.Text)
		})
	}
}

// registryOff turns the living-room lamp off through the registry, so each
// subtest starts from off.
func registryOff() registry.CallRequest {
	return registry.CallRequest{DeviceID: "02:00:00:00:00:01", Tool: "self.lamp.turn_off", Caller: "test"}
}

func TestE2ELegacyIoTLamp(t *testing.T) {
	home := startE2E(t)
	const id = "02:00:00:00:00:04"
	b := func(tr turn) action {
		switch tr.step {
		case 0:
			return action{calls: []fakeCall{{"search_devices", map[string]any{"query": "次卧 台灯"}}}}
		case 1:
			var sr catalog.SearchResult
			_ = json.Unmarshal([]byte(tr.results[0].content), &sr)
			if len(sr.Results) == 0 || sr.Results[0].ID != id {
				return action{text: "找不到台灯"}
			}
			return action{calls: []fakeCall{{catalog.Name(id, "Lamp.TurnOn"), map[string]any{}}}}
		}
		return action{text: tr.results[0].content}
	}
	f := anthropicFake(t, b)
	a := agent.New(home.hub.Registry, agent.Config{Provider: agent.ProviderAnthropic, APIKey: "test-key", BaseURL: f.srv.URL})
	defer a.Close()
	rec, _ := collect(t, a, "", "打开次卧的台灯")
	if rec.Outcome != "ok" || !home.devices[id].LampOn() {
		t.Fatalf("run %+v, lamp on: %v", rec, home.devices[id].LampOn())
	}
	if !strings.Contains(rec.Text, `"reported_state":{"Lamp":{"power":true}}`) {
		t.Errorf("the model was not told the new state: %s", rec.Text)
	}
}

// The lamp drops off the network after the search: the call fails with a
// clear error that reaches the model.
func TestE2EDeviceDropsMidRun(t *testing.T) {
	home := startE2E(t)
	lamp := home.devices["02:00:00:00:00:01"]
	f := openaiFake(t, seedBrain)
	f.hook = func(tr turn) {
		if tr.step == 1 {
			lamp.Drop()
			waitUntil(t, "the hub to see the drop", func() bool {
				d, _ := home.hub.Registry.Device("02:00:00:00:00:01")
				return !d.Online
			})
		}
	}
	a := agent.New(home.hub.Registry, agent.Config{Provider: agent.ProviderOpenAI, APIKey: "test-key", BaseURL: f.srv.URL + "/v1", Model: "m"})
	defer a.Close()
	rec, _ := collect(t, a, "", "打开客厅的灯")
	if rec.Outcome != "ok" || len(rec.Calls) != 2 || rec.Calls[1].Outcome != hub.EOFFLINE || !strings.Contains(rec.Text, "device_offline") {
		t.Fatalf("run %+v", rec)
	}
}
