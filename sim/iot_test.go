package sim_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/protocol"
	"github.com/xiaozhi-hub/hub/sim"
)

// nextIoT returns the next frame, which must be an iot message with
// "update":true and the session id echoed.
func nextIoT(t *testing.T, hc *hubConn) protocol.IoTMessage {
	t.Helper()
	raw := hc.next()
	m, err := protocol.DecodeMessage(raw)
	if err != nil || m.Type != "iot" || m.SessionID != "sess-1" {
		t.Fatalf("want an iot frame, got %s", raw)
	}
	iot, err := protocol.DecodeIoT(raw)
	if err != nil || !iot.Update {
		t.Fatalf("bad iot frame %s: %v", raw, err)
	}
	return iot
}

func states(m protocol.IoTMessage) map[string]string {
	out := map[string]string{}
	for _, s := range m.States {
		b, _ := json.Marshal(s.State)
		out[s.Name] = string(b)
	}
	return out
}

func TestIoTLegacyDevice(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{Mode: sim.ModeIoT})

	// One thing per descriptor message, then all states in one message (docs/protocol.md §9).
	speaker, lamp := nextIoT(t, hc), nextIoT(t, hc)
	if len(speaker.Descriptors) != 1 || speaker.Descriptors[0].Name != "Speaker" ||
		speaker.Descriptors[0].Methods["SetVolume"].Parameters["volume"].Type != "number" ||
		speaker.Descriptors[0].Properties["volume"].Type != "number" {
		t.Errorf("speaker descriptor %+v", speaker)
	}
	if len(lamp.Descriptors) != 1 || lamp.Descriptors[0].Name != "Lamp" ||
		lamp.Descriptors[0].Properties["power"].Type != "boolean" || len(lamp.Descriptors[0].Methods) != 2 {
		t.Errorf("lamp descriptor %+v", lamp)
	}
	full := nextIoT(t, hc)
	if got := states(full); len(got) != 2 || got["Speaker"] != `{"volume":70}` || got["Lamp"] != `{"power":false}` {
		t.Errorf("full states %v", got)
	}

	// Commands get no reply; the device then listens again and reports
	// only what changed, before "listen start".
	hc.send(`{"session_id":"sess-1","type":"iot","commands":[{"name":"Speaker","method":"SetVolume","parameters":{"volume":55.8}}]}`)
	if got := states(nextIoT(t, hc)); len(got) != 1 || got["Speaker"] != `{"volume":55}` {
		t.Errorf("delta after SetVolume %v", got)
	}
	listen := `{"session_id":"sess-1","type":"listen","state":"start","mode":"auto"}`
	if got := string(hc.next()); got != listen {
		t.Errorf("got %s, want %s", got, listen)
	}
	if d.Volume() != 55 {
		t.Errorf("Volume = %d", d.Volume())
	}

	hc.send(`{"type":"iot","commands":[{"name":"Lamp","method":"TurnOn"},{"name":"Fridge","method":"Open"},{"name":"Lamp","method":"Explode"}]}`)
	if got := states(nextIoT(t, hc)); len(got) != 1 || got["Lamp"] != `{"power":true}` {
		t.Errorf("delta after TurnOn %v", got)
	}
	hc.next() // listen start
	if !d.LampOn() {
		t.Error("lamp not on")
	}

	// Nothing changed: no states message, only listen start.
	hc.send(`{"type":"iot","commands":[{"name":"Unknown","method":"X"}]}`)
	if got := string(hc.next()); got != listen {
		t.Errorf("got %s, want only %s", got, listen)
	}
	hc.none(100 * time.Millisecond)

	// MCP is not spoken by 1.x IoT builds.
	hc.sendMCP(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`)
	hc.none(100 * time.Millisecond)
}

func TestIoTV177Things(t *testing.T) {
	h := newFakeHub(t)
	d, hc := connect(t, h, sim.Config{Mode: sim.ModeIoT, IoTThings: sim.ThingsV177})
	var names []string
	for range 4 {
		names = append(names, nextIoT(t, hc).Descriptors[0].Name)
	}
	if got := names; got[0] != "AudioSpeaker" || got[1] != "Screen" || got[2] != "Lamp" || got[3] != "Battery" {
		t.Errorf("things %v", got)
	}
	nextIoT(t, hc) // full states
	hc.send(`{"type":"iot","commands":[{"name":"Screen","method":"set_theme","parameters":{"theme_name":"dark"}},{"name":"AudioSpeaker","method":"set_volume","parameters":{"volume":30}}]}`)
	got := states(nextIoT(t, hc))
	if len(got) != 2 || got["Screen"] != `{"brightness":100,"theme":"dark"}` || got["AudioSpeaker"] != `{"volume":30}` {
		t.Errorf("delta %v", got)
	}
	if d.Theme() != "dark" {
		t.Errorf("theme %s", d.Theme())
	}
}
