package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/sim"
)

// thing returns a thing from GET /api/devices/{id}/iot by name.
func (h *testHub) thing(id, name string) map[string]any {
	_, body := h.call("GET", "/api/devices/"+id+"/iot", nil)
	things, _ := body["things"].([]any)
	for _, t := range things {
		if m := t.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

func TestIoTFullCycle(t *testing.T) {
	h := startHub(t, "", nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:01:01", Mode: sim.ModeIoT, RecordFrames: true})
	id := d.ID()

	// Descriptors arrive one thing per message and accumulate; full states follow.
	waitFor(t, "both things with state", func() bool {
		s, l := h.thing(id, "Speaker"), h.thing(id, "Lamp")
		return s != nil && l != nil && s["state"].(map[string]any)["volume"] != nil && l["state"].(map[string]any)["power"] == false
	})
	_, dev := h.call("GET", "/api/devices/"+id, nil)
	if dev["mcp"] != false || dev["thingCount"] != float64(2) {
		t.Fatalf("legacy device = %v", dev)
	}

	// A command goes out; the device does not answer; its next delta updates the cache.
	st, body := h.call("POST", "/api/devices/"+id+"/iot/commands", map[string]any{
		"commands": []map[string]any{{"name": "Lamp", "method": "TurnOn", "parameters": map[string]any{}}, {"name": "Speaker", "method": "SetVolume", "parameters": map[string]any{"volume": 33}}},
	})
	if st != 202 {
		t.Fatalf("commands = %d %v", st, body)
	}
	waitFor(t, "lamp on in the cache", func() bool {
		l, s := h.thing(id, "Lamp"), h.thing(id, "Speaker")
		return l["state"].(map[string]any)["power"] == true && s["state"].(map[string]any)["volume"] == float64(33)
	})
	if !d.LampOn() || d.Volume() != 33 {
		t.Fatalf("device lamp=%v volume=%d", d.LampOn(), d.Volume())
	}

	// Commands that do not match the descriptors never reach the device.
	iotFrames := func() int {
		n := 0
		for _, f := range d.ReceivedRaw() {
			if strings.Contains(string(f), `"type":"iot"`) {
				n++
			}
		}
		return n
	}
	sent := iotFrames()
	for _, bad := range []map[string]any{
		{"name": "Fan", "method": "TurnOn"},
		{"name": "Speaker", "method": "SetVolume", "parameters": map[string]any{"volume": "loud"}},
		{"name": "Speaker", "method": "SetVolume", "parameters": map[string]any{}},
	} {
		st, body := h.call("POST", "/api/devices/"+id+"/iot/commands", map[string]any{"commands": []any{bad}})
		if st != 422 {
			t.Fatalf("%v: %d %v", bad, st, body)
		}
	}
	if n := iotFrames(); n != sent {
		t.Fatalf("the device received %d frames for refused commands", n-sent)
	}
	// MCP calls to a legacy device are refused with a hint.
	st, body = h.call("POST", "/api/devices/"+id+"/tools/self.reboot/call", nil)
	if st != 404 {
		t.Fatalf("MCP call to an IoT device = %d %v", st, body)
	}
	waitFor(t, "the IoT command in the call history (written in the background)", func() bool {
		_, calls := h.call("GET", "/api/calls?device="+id, nil)
		return strings.Contains(fmt.Sprint(calls), "Lamp.TurnOn")
	})
}

func TestIoTStatesSurviveReconnect(t *testing.T) {
	h := startHub(t, "", nil)
	cfg := sim.Config{DeviceID: "aa:00:00:00:01:02", Mode: sim.ModeIoT, IoTThings: sim.ThingsV177}
	d := h.device(cfg)
	waitFor(t, "things", func() bool { return h.thing(d.ID(), "Battery") != nil })
	d.Close()
	waitFor(t, "offline", func() bool {
		_, dev := h.call("GET", "/api/devices/"+d.ID(), nil)
		return dev["online"] == false
	})
	if th := h.thing(d.ID(), "AudioSpeaker"); th == nil || th["state"].(map[string]any)["volume"] == nil {
		t.Fatalf("offline device should keep its things and state: %v", th)
	}
}
