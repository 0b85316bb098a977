package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
)

func TestDeviceNotFound(t *testing.T) {
	h := newHub(t, hubOptions{})
	for _, rt := range []struct{ method, path, body string }{
		{"GET", "/api/devices/ghost", ""},
		{"PATCH", "/api/devices/ghost", `{"name":"x"}`},
		{"DELETE", "/api/devices/ghost", ""},
		{"GET", "/api/devices/ghost/tools", ""},
		{"POST", "/api/devices/ghost/tools/self.reboot/call", ""},
		{"GET", "/api/devices/ghost/iot", ""},
		{"POST", "/api/devices/ghost/iot/commands", `{"commands":[{"name":"Lamp","method":"TurnOn"}]}`},
		{"GET", "/api/devices/ghost/events", ""},
		{"GET", "/api/calls?device=ghost", ""},
	} {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			h.do(rt.method, rt.path, rt.body).wantError(t, http.StatusNotFound, "not_found", "ghost")
		})
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	h := newHub(t, hubOptions{})
	h.connect("dev-1")
	h.do("GET", "/api/nothing/here", "").wantError(t, http.StatusNotFound, "not_found", "/api/nothing/here")
	h.do("GET", "/api/devices/dev-1/tools/x", "").wantError(t, http.StatusNotFound, "not_found")

	r := h.do("PUT", "/api/devices/dev-1", `{"name":"x"}`)
	r.wantError(t, http.StatusMethodNotAllowed, "bad_request", "PUT")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "PATCH") || !strings.Contains(allow, "DELETE") {
		t.Errorf("Allow %q, want GET, PATCH and DELETE", allow)
	}
	h.do("GET", "/api/devices/dev-1/tools/self.reboot/call", "").wantError(t, http.StatusMethodNotAllowed, "bad_request")
	h.do("POST", "/api/devices", "{}").wantError(t, http.StatusMethodNotAllowed, "bad_request")
}

func TestListDevices(t *testing.T) {
	h := newHub(t, hubOptions{})
	ctx := context.Background()
	kitchen, _ := h.connect("aa:bb:cc:00:00:01", statusTool, volumeTool)
	h.connect("aa:bb:cc:00:00:02")
	if _, err := h.reg.UpdateDevice(ctx, "aa:bb:cc:00:00:01", hub.DevicePatch{Name: ptr("Speaker"), Room: ptr("Kitchen")}); err != nil {
		t.Fatal(err)
	}
	kitchen.Disconnect(ctx, "test")

	list := func(query string) []hub.Device {
		t.Helper()
		r := h.do("GET", "/api/devices"+query, "")
		if r.status != http.StatusOK {
			t.Fatalf("GET /api/devices%s: status %d: %s", query, r.status, r.body)
		}
		var body struct {
			Devices []hub.Device `json:"devices"`
		}
		r.json(t, &body)
		if body.Devices == nil {
			t.Fatalf("GET /api/devices%s: want a devices array, got %s", query, r.body)
		}
		return body.Devices
	}
	ids := func(ds []hub.Device) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}

	all := list("")
	if got := ids(all); !slices.Equal(got, []string{"aa:bb:cc:00:00:02", "aa:bb:cc:00:00:01"}) {
		t.Fatalf("devices %v, want both, sorted by room", got)
	}
	sp := all[1]
	if sp.Name != "Speaker" || sp.Room != "Kitchen" || sp.Online || sp.ToolCount != 2 || sp.LastSeen.IsZero() {
		t.Errorf("device = %+v, want name, room, offline, 2 tools, lastSeen", sp)
	}
	if got := ids(list("?online=true")); !slices.Equal(got, []string{"aa:bb:cc:00:00:02"}) {
		t.Errorf("online devices %v", got)
	}
	if got := ids(list("?online=false")); !slices.Equal(got, []string{"aa:bb:cc:00:00:01"}) {
		t.Errorf("offline devices %v", got)
	}
	if got := ids(list("?room=kitchen")); !slices.Equal(got, []string{"aa:bb:cc:00:00:01"}) {
		t.Errorf("kitchen devices %v", got)
	}
	if got := ids(list("?room=")); !slices.Equal(got, []string{"aa:bb:cc:00:00:02"}) {
		t.Errorf("devices without a room %v", got)
	}
	if got := list("?room=Attic"); len(got) != 0 {
		t.Errorf("attic devices %v, want none", ids(got))
	}
	h.do("GET", "/api/devices?online=maybe", "").wantError(t, http.StatusBadRequest, "bad_request", "online")

	// One device, by an id that needs escaping in a URL.
	r := h.do("GET", "/api/devices/aa:bb:cc:00:00:01", "")
	var d hub.Device
	r.json(t, &d)
	if r.status != http.StatusOK || d.ID != "aa:bb:cc:00:00:01" || d.Name != "Speaker" {
		t.Errorf("GET device: %d %s", r.status, r.body)
	}
}

func TestPatchDevice(t *testing.T) {
	h := newHub(t, hubOptions{})
	h.connect("dev-1")

	cases := []struct {
		name, body string
		status     int
		code       string
		mentions   []string
	}{
		{"unknown field", `{"name":"Lamp","colour":"red"}`, 400, "bad_request", []string{`"colour"`}},
		{"name of wrong type", `{"name":5}`, 400, "bad_request", []string{`"name"`, "string"}},
		{"aliases of wrong type", `{"aliases":"lamp"}`, 400, "bad_request", []string{`"aliases"`, "array"}},
		{"alias of wrong type", `{"aliases":[1]}`, 400, "bad_request", []string{`"aliases"`}},
		{"not JSON", `{"name":`, 400, "bad_request", []string{"JSON"}},
		{"not an object", `["name"]`, 400, "bad_request", []string{"object"}},
		{"two objects", `{"name":"a"}{"name":"b"}`, 400, "bad_request", []string{"single"}},
		{"empty body", ``, 400, "bad_request", []string{"empty"}},
		{"name too long", `{"name":"` + strings.Repeat("灯", 65) + `"}`, 422, "invalid_argument", []string{"name", "64 characters"}},
		{"room on two lines", `{"room":"a\nb"}`, 422, "invalid_argument", []string{"room"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.do("PATCH", "/api/devices/dev-1", c.body).wantError(t, c.status, c.code, c.mentions...)
		})
	}
	if d, _ := h.reg.Device("dev-1"); d.Name != "" || d.Room != "" {
		t.Fatalf("rejected patches changed the device: %+v", d)
	}

	t.Run("too large", func(t *testing.T) {
		body := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`
		h.do("PATCH", "/api/devices/dev-1", body).wantError(t, http.StatusRequestEntityTooLarge, "bad_request", "1 MiB")
	})

	r := h.do("PATCH", "/api/devices/dev-1", `{"name":" Desk lamp ","room":"Study","aliases":["lamp","lamp","reading light"]}`)
	if r.status != http.StatusOK {
		t.Fatalf("PATCH: status %d: %s", r.status, r.body)
	}
	var d hub.Device
	r.json(t, &d)
	if d.ID != "dev-1" || d.Name != "Desk lamp" || d.Room != "Study" || !slices.Equal(d.Aliases, []string{"lamp", "reading light"}) || !d.Online {
		t.Errorf("PATCH answered %s", r.body)
	}

	// A partial patch leaves the other fields alone.
	r = h.do("PATCH", "/api/devices/dev-1", `{"room":"Bedroom"}`)
	r.json(t, &d)
	if r.status != http.StatusOK || d.Name != "Desk lamp" || d.Room != "Bedroom" || len(d.Aliases) != 2 {
		t.Errorf("partial PATCH answered %d %s", r.status, r.body)
	}
	r = h.do("GET", "/api/devices/dev-1", "")
	r.json(t, &d)
	if d.Name != "Desk lamp" || d.Room != "Bedroom" {
		t.Errorf("GET after PATCH: %s", r.body)
	}
}

func TestDeleteDevice(t *testing.T) {
	h := newHub(t, hubOptions{})
	_, conn := h.connect("dev-1", statusTool)

	r := h.do("DELETE", "/api/devices/dev-1", "")
	if r.status != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("DELETE: status %d body %q, want 204 and no body", r.status, r.body)
	}
	if len(conn.Closes()) != 1 {
		t.Errorf("the deleted device's connection was not closed")
	}
	h.do("GET", "/api/devices/dev-1", "").wantError(t, http.StatusNotFound, "not_found", "dev-1")
	h.do("DELETE", "/api/devices/dev-1", "").wantError(t, http.StatusNotFound, "not_found")
	var list struct{ Devices []hub.Device }
	h.do("GET", "/api/devices", "").json(t, &list)
	if len(list.Devices) != 0 {
		t.Errorf("devices after delete: %+v", list.Devices)
	}
}

func TestTools(t *testing.T) {
	h := newHub(t, hubOptions{})
	h.connect("dev-1", statusTool, volumeTool, rebootTool)

	var body struct {
		Tools []map[string]json.RawMessage `json:"tools"`
		Stale *bool                        `json:"stale"`
	}
	r := h.do("GET", "/api/devices/dev-1/tools", "")
	r.json(t, &body)
	if r.status != http.StatusOK || len(body.Tools) != 3 || body.Stale == nil || *body.Stale {
		t.Fatalf("tools: %d %s", r.status, r.body)
	}
	for _, f := range []string{"name", "description", "inputSchema", "userOnly"} {
		if _, ok := body.Tools[0][f]; !ok {
			t.Errorf("tool has no %q: %s", f, r.body)
		}
	}
	if string(body.Tools[2]["annotations"]) != `{"audience":["user"]}` {
		t.Errorf("annotations not passed through: %s", body.Tools[2]["annotations"])
	}

	body.Tools = nil
	h.do("GET", "/api/devices/dev-1/tools?audience=agent", "").json(t, &body)
	if len(body.Tools) != 2 || strings.Contains(string(body.Tools[0]["name"])+string(body.Tools[1]["name"]), "reboot") {
		t.Errorf("agent tools include user-only ones: %v", body.Tools)
	}
	h.do("GET", "/api/devices/dev-1/tools?audience=robots", "").wantError(t, http.StatusBadRequest, "bad_request", "audience")

	// A device without tools has an empty list, not null.
	h.connect("dev-2")
	r = h.do("GET", "/api/devices/dev-2/tools", "")
	if !strings.Contains(string(r.body), `"tools":[]`) {
		t.Errorf("tools of a device without tools: %s", r.body)
	}
}

func TestIoT(t *testing.T) {
	h := newHub(t, hubOptions{})
	ctx := context.Background()
	l, conn := h.connect("legacy-1")
	lamp := hub.Thing{
		Name: "Lamp", Description: "A lamp",
		Properties: map[string]hub.ThingProperty{"power": {Description: "on or off", Type: "boolean"}},
		Methods: map[string]hub.ThingMethod{
			"TurnOn":        {Description: "Turn on"},
			"SetBrightness": {Description: "Set brightness", Parameters: map[string]hub.ThingProperty{"level": {Description: "0-100", Type: "number"}}},
		},
	}
	if err := l.DescribeThings(ctx, []hub.Thing{lamp}); err != nil {
		t.Fatal(err)
	}
	if err := l.ReportStates(ctx, []registry.ThingState{{Name: "Lamp", State: map[string]json.RawMessage{"power": json.RawMessage("false")}}}); err != nil {
		t.Fatal(err)
	}

	var things struct {
		Things []hub.Thing `json:"things"`
	}
	r := h.do("GET", "/api/devices/legacy-1/iot", "")
	r.json(t, &things)
	if r.status != http.StatusOK || len(things.Things) != 1 || things.Things[0].Name != "Lamp" || string(things.Things[0].State["power"]) != "false" {
		t.Fatalf("iot: %d %s", r.status, r.body)
	}

	r = h.do("POST", "/api/devices/legacy-1/iot/commands", `{"commands":[{"name":"Lamp","method":"SetBrightness","parameters":{"level":40}}]}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("commands: status %d: %s", r.status, r.body)
	}
	var sent struct {
		Sent int    `json:"sent"`
		Note string `json:"note"`
	}
	r.json(t, &sent)
	if sent.Sent != 1 || !strings.Contains(sent.Note, "/api/devices/legacy-1/iot") {
		t.Errorf("commands answered %s", r.body)
	}
	got := conn.IoT()
	if len(got) != 1 || got[0][0].Method != "SetBrightness" {
		t.Errorf("device received %+v", got)
	}

	h.do("POST", "/api/devices/legacy-1/iot/commands", `{"commands":[{"name":"Lamp","method":"Explode"}]}`).
		wantError(t, http.StatusUnprocessableEntity, "invalid_argument", "Explode")
	h.do("POST", "/api/devices/legacy-1/iot/commands", `{"commands":[]}`).
		wantError(t, http.StatusUnprocessableEntity, "invalid_argument", "commands")
	h.do("POST", "/api/devices/legacy-1/iot/commands", `{"commands":[{"name":"Lamp","method":"TurnOn","colour":1}]}`).
		wantError(t, http.StatusBadRequest, "bad_request", "colour")
	h.do("POST", "/api/devices/legacy-1/iot/commands", `{"commands":{"name":"Lamp"}}`).
		wantError(t, http.StatusBadRequest, "bad_request", "commands")

	l.Disconnect(ctx, "test")
	h.do("POST", "/api/devices/legacy-1/iot/commands", `{"commands":[{"name":"Lamp","method":"TurnOn"}]}`).
		wantError(t, http.StatusConflict, "device_offline", "offline")
}

func ptr[T any](v T) *T { return &v }
