package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server"
	"github.com/xiaozhi-hub/hub/sim"
)

// beforePeople is what the data directory of ../store/testdata/before-people
// holds: a hub's database, device-token secret and the tokens its devices
// were given, all written by the hub as it was before people existed
// (schema 009; generate_test.go.txt there made them).
type beforePeople struct {
	dir     string
	devices map[string]struct{ ClientID, Token string }
}

const (
	oldLamp    = "aa:00:00:00:e1:01" // MCP, approved, named 客厅灯 in 客厅, called twice
	oldSpeaker = "aa:00:00:00:e1:02" // IoT, approved, named 卧室音箱, sent a command
	oldRevoked = "aa:00:00:00:e1:03" // approved, then its token revoked
)

// restoreBeforePeople makes a data directory from the fixture.
func restoreBeforePeople(t *testing.T) beforePeople {
	t.Helper()
	src := filepath.Join("..", "store", "testdata", "before-people")
	dump, err := os.ReadFile(filepath.Join(src, "hub.sql"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(dir, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(dump)); err != nil {
		t.Fatalf("restore the dump: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	secret, err := os.ReadFile(filepath.Join(src, "device-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "device-secret"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	b := beforePeople{dir: dir}
	raw, err := os.ReadFile(filepath.Join(src, "devices.json"))
	if err == nil {
		err = json.Unmarshal(raw, &b.devices)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An existing hub's data, written before people existed, is kept whole by
// the upgrade: the admin sees every device with its name, tools and
// things, the trust decisions hold (an approved device connects with the
// token it was given, with no new approval; a revoked one stays refused),
// the call history and events are listed, and the devices are in no home
// until the admin puts one in a home, which then shows it to that home's
// people only.
func TestUpgradeFromBeforePeopleKeepsEverything(t *testing.T) {
	old := restoreBeforePeople(t)
	h := startHub(t, old.dir, func(c *server.Config) { c.DeviceAuth = "activation" })

	_, list := h.call("GET", "/api/devices", nil)
	devs, _ := list["devices"].([]any)
	names := map[string]string{}
	for _, d := range devs {
		m := d.(map[string]any)
		names[m["id"].(string)] = m["name"].(string) + "/" + m["room"].(string)
		if home, ok := m["home"]; ok {
			t.Errorf("device %v is in home %v after the upgrade; want none", m["id"], home)
		}
	}
	if len(names) != 3 || names[oldLamp] != "客厅灯/客厅" || names[oldSpeaker] != "卧室音箱/卧室" {
		t.Fatalf("the admin lists %v after the upgrade; want the three devices with their names and rooms", names)
	}
	if _, body := h.call("GET", "/api/devices/"+oldLamp+"/tools", nil); !slices.Contains(toolNames(asList(body["tools"])), "self.lamp.turn_on") {
		t.Errorf("the lamp's tools after the upgrade: %v; want its list kept", body)
	}
	if _, body := h.call("GET", "/api/devices/"+oldSpeaker+"/iot", nil); len(asList(body["things"])) == 0 {
		t.Errorf("the speaker's things after the upgrade: %v; want them kept", body)
	}
	if _, body := h.call("GET", "/api/calls", nil); len(asList(body["calls"])) != 3 {
		t.Errorf("the call history after the upgrade: %v; want the 3 calls recorded before", body)
	}
	if _, body := h.call("GET", "/api/devices/"+oldLamp+"/events?limit=100", nil); len(asList(body["events"])) < 4 {
		t.Errorf("the lamp's events after the upgrade: %v; want the ones recorded before", body)
	}
	for id, want := range map[string]bool{oldLamp: true, oldSpeaker: true, oldRevoked: false} {
		if _, body := h.call("GET", "/api/devices/"+id+"/trust", nil); body["admitted"] != want {
			t.Errorf("trust of %s after the upgrade: %v; want admitted %v", id, body, want)
		}
	}

	// The approved lamp connects with the token it was given before, and
	// its OTA check asks for no new approval.
	lamp := h.device(sim.Config{DeviceID: oldLamp, ClientID: old.devices[oldLamp].ClientID, Token: old.devices[oldLamp].Token, Lamp: true})
	ota := h.otaDevice(sim.Config{DeviceID: oldLamp, ClientID: old.devices[oldLamp].ClientID})
	if r, err := ota.CheckOTA(context.Background()); err != nil || r.Activation != nil || r.WebSocket == nil || r.WebSocket.Token == "" {
		t.Fatalf("the approved lamp's OTA check after the upgrade: %+v, %v; want a token and no activation", r, err)
	}
	if st, _ := h.wsRefusal(oldRevoked, old.devices[oldRevoked].Token); st != 401 {
		t.Errorf("the revoked device's old token after the upgrade: %d; want 401", st)
	}
	if _, body := h.call("GET", "/api/activations", nil); len(asList(body["activations"])) != 0 {
		t.Errorf("activations waiting after the upgrade: %v; want none", body)
	}

	// The admin puts the lamp in alice's home: she reaches it, and not the
	// speaker, which is in no home.
	people := server.PeopleOf(h.Hub)
	ctx := context.Background()
	if _, err := people.AddUser(ctx, "alice", "alice's password"); err != nil {
		t.Fatal(err)
	}
	alice, _ := people.Principal("alice")
	home, err := people.CreateHome(ctx, alice, "A家")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Registry.UpdateDevice(ctx, oldLamp, hub.DevicePatch{Home: &home.ID}); err != nil {
		t.Fatal(err)
	}
	if d := h.callDevice(oldLamp); d["home"] != home.ID || d["name"] != "客厅灯" {
		t.Fatalf("the lamp put in a home: %v; want it in %s with its name", d, home.ID)
	}
	token, _, err := people.Login(ctx, "alice", "alice's password", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if st, body := h.callWith(token, "POST", "/api/devices/"+oldLamp+"/tools/self.lamp.turn_on/call", map[string]any{"arguments": map[string]any{}}); st != 200 || body["isError"] == true {
		t.Fatalf("alice turning on the lamp of her home: %d %v", st, body)
	}
	waitFor(t, "the lamp on", lamp.LampOn)
	speaker := map[string]any{"commands": []any{map[string]any{"name": "Speaker", "method": "SetVolume", "parameters": map[string]any{"volume": 60}}}}
	stFor, forNone := h.callWith(token, "POST", "/api/devices/"+oldSpeaker+"/iot/commands", speaker)
	stUnknown, unknown := h.callWith(token, "POST", "/api/devices/aa:00:00:00:e1:99/iot/commands", speaker)
	same := strings.ReplaceAll(errMessage(forNone), oldSpeaker, "<id>") == strings.ReplaceAll(errMessage(unknown), "aa:00:00:00:e1:99", "<id>")
	if stFor != 404 || stFor != stUnknown || errMessage(forNone) == "" || !same {
		t.Errorf("alice commanding the speaker in no home: %d %v; want what an unknown device gets: %d %v", stFor, forNone, stUnknown, unknown)
	}

	// A restart keeps it all: the home, the lamp in it, her login, the
	// history with her call.
	lamp.Close()
	h.stop()
	h = startHub(t, old.dir, func(c *server.Config) { c.DeviceAuth = "activation" })
	if d := h.callDevice(oldLamp); d["home"] != home.ID || d["name"] != "客厅灯" {
		t.Fatalf("the lamp after a restart: %v; want it in %s with its name", d, home.ID)
	}
	if st, body := h.callWith(token, "GET", "/api/devices/"+oldLamp, nil); st != 200 {
		t.Fatalf("alice's login after a restart: %d %v", st, body)
	}
	if _, body := h.call("GET", "/api/calls?device="+oldLamp, nil); len(asList(body["calls"])) != 3 {
		t.Errorf("the lamp's call history after a restart: %v; want its 2 old calls and alice's", body)
	}
}

// callDevice is GET /api/devices/{id} with the admin token.
func (h *testHub) callDevice(id string) map[string]any {
	h.t.Helper()
	_, d := h.call("GET", "/api/devices/"+id, nil)
	return d
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
