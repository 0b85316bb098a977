package store_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/store"
)

// The store is what the registry writes through to (checked here, not in
// the store, so that the store does not import the registry).
var _ registry.Store = (*store.Store)(nil)

// openStore opens a store on path and closes it when the test ends.
func openStore(t testing.TB, path string, opts store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func tempDB(t testing.TB) string { return filepath.Join(t.TempDir(), "hub.db") }

// toolList returns a realistic tool list; lists of the same variant are equal.
func toolList(variant int) (hash string, tools []hub.Tool) {
	names := []string{"self.get_device_status", "self.audio_speaker.set_volume",
		"self.screen.set_brightness", "self.screen.set_theme", "self.camera.take_photo",
		"self.light.set_color", "self.reboot", "self.upgrade_firmware"}
	for i, n := range names {
		tools = append(tools, hub.Tool{
			Name:        fmt.Sprintf("%s.v%d", n, variant),
			Description: "Set or read something on the device; the assistant calls this when asked.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"value":{"type":"integer","minimum":0,"maximum":100}},"required":["value"]}`),
			UserOnly:    i >= 6,
		})
		if i >= 6 {
			tools[i].Annotations = json.RawMessage(`{"audience":["user"]}`)
		}
	}
	js, _ := json.Marshal(tools)
	sum := sha256.Sum256(js)
	return hex.EncodeToString(sum[:]), tools
}

func fullDevice(id string) hub.Device {
	cst := time.FixedZone("CST", 8*3600)
	return hub.Device{
		ID: id, ClientID: "c-" + id, Name: "Kitchen speaker", Room: "kitchen",
		Aliases: []string{"小智", "kitchen"}, Board: "esp-box-3", Firmware: "2.0.4",
		ProtocolVersion: 3, Features: json.RawMessage(`{"mcp":true,"aec":false}`), MCP: true,
		SystemInfo: json.RawMessage(`{"flash_size":16777216,"chip_model_name":"esp32s3"}`),
		FirstSeen:  time.Date(2025, 3, 1, 9, 30, 15, 123456789, cst),
		LastSeen:   time.Date(2025, 3, 2, 10, 0, 0, 987654321, cst),
	}
}

func sampleThing(name string) hub.Thing {
	return hub.Thing{
		Name: name, Description: "A lamp",
		Properties: map[string]hub.ThingProperty{"power": {Description: "on or off", Type: "boolean"}},
		Methods: map[string]hub.ThingMethod{"SetBrightness": {Description: "set brightness",
			Parameters: map[string]hub.ThingProperty{"brightness": {Description: "0-100", Type: "number"}}}},
		State:        map[string]json.RawMessage{"power": json.RawMessage(`true`)},
		StateUpdated: time.Date(2025, 3, 2, 10, 0, 1, 5, time.UTC),
	}
}

func loadAll(t testing.TB, s *store.Store) map[string]hub.Snapshot {
	t.Helper()
	snaps, err := s.LoadAll(context.Background())
	if err != nil {
		t.Fatalf("LoadAll: %v", err)
	}
	m := make(map[string]hub.Snapshot, len(snaps))
	for _, sn := range snaps {
		m[sn.Device.ID] = sn
	}
	return m
}

// countRows counts rows of table through a separate connection.
func countRows(t testing.TB, path, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path, store.Options{})

	d := fullDevice("aa:bb:cc:00:00:01")
	// Derived fields are not stored.
	d.Online, d.ToolCount, d.ThingCount, d.ToolsStale, d.ToolsHash = true, 3, 4, true, "ignored"
	hash, tools := toolList(1)
	bare := hub.Device{ID: "aa:bb:cc:00:00:02", Aliases: []string{}}
	before := time.Now()
	for _, err := range []error{
		s.SaveDevice(ctx, d),
		s.SaveTools(ctx, d.ID, hash, tools),
		s.SaveThing(ctx, d.ID, sampleThing("Lamp")),
		s.SaveThing(ctx, d.ID, hub.Thing{Name: "Speaker"}),
		s.SaveDevice(ctx, bare),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	after := time.Now()

	got := loadAll(t, s)
	if len(got) != 2 {
		t.Fatalf("LoadAll returned %d devices, want 2", len(got))
	}
	want := fullDevice(d.ID)
	want.FirstSeen, want.LastSeen = want.FirstSeen.UTC(), want.LastSeen.UTC()
	want.ToolsHash = hash
	sn := got[d.ID]
	if !reflect.DeepEqual(sn.Device, want) {
		t.Errorf("device:\n got %+v\nwant %+v", sn.Device, want)
	}
	if sn.ToolsHash != hash || !reflect.DeepEqual(sn.Tools, tools) {
		t.Errorf("tools: got %s %+v, want %s %+v", sn.ToolsHash, sn.Tools, hash, tools)
	}
	if sn.ToolsSaved.Before(before.Truncate(time.Millisecond)) || sn.ToolsSaved.After(after) {
		t.Errorf("ToolsSaved %v not within [%v, %v]", sn.ToolsSaved, before, after)
	}
	wantThings := []hub.Thing{sampleThing("Lamp"), {Name: "Speaker"}}
	if !reflect.DeepEqual(sn.Things, wantThings) {
		t.Errorf("things:\n got %+v\nwant %+v", sn.Things, wantThings)
	}
	if b := got[bare.ID]; !reflect.DeepEqual(b.Device, bare) || b.Tools != nil || b.Things != nil ||
		!b.ToolsSaved.IsZero() {
		t.Errorf("bare device: got %+v, want %+v", b, bare)
	}

	// SaveDevice leaves tools and things alone; SaveThing replaces by name.
	d.Name = "renamed"
	lamp := sampleThing("Lamp")
	lamp.State["power"] = json.RawMessage(`false`)
	if err := s.SaveDevice(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveThing(ctx, d.ID, lamp); err != nil {
		t.Fatal(err)
	}
	sn = loadAll(t, s)[d.ID]
	if sn.Device.Name != "renamed" || len(sn.Tools) != len(tools) || len(sn.Things) != 2 ||
		string(sn.Things[0].State["power"]) != "false" {
		t.Errorf("after update: %+v", sn)
	}
}

func TestMinimalDeviceAndValidation(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{})
	hash, tools := toolList(1)
	if err := s.SaveTools(ctx, "t1", hash, tools); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveThing(ctx, "t2", sampleThing("Lamp")); err != nil {
		t.Fatal(err)
	}
	got := loadAll(t, s)
	if len(got["t1"].Tools) != len(tools) || len(got["t2"].Things) != 1 {
		t.Fatalf("got %+v", got)
	}
	if err := s.SaveTools(ctx, "t1", "", []hub.Tool{{Name: "x"}}); hub.ErrorCode(err) != hub.EINVALID {
		t.Errorf("tools without hash: %v, want %s", err, hub.EINVALID)
	}
	if err := s.SaveDevice(ctx, hub.Device{}); hub.ErrorCode(err) != hub.EINVALID {
		t.Errorf("empty id: %v, want %s", err, hub.EINVALID)
	}
	bad := hub.Device{ID: "bad", Features: json.RawMessage(`{"mcp":`)}
	if err := s.SaveDevice(ctx, bad); hub.ErrorCode(err) != hub.EINVALID {
		t.Errorf("invalid features: %v, want %s", err, hub.EINVALID)
	}
}

func TestToolSetDedup(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path, store.Options{})
	h1, t1 := toolList(1)
	h2, t2 := toolList(2)
	for _, id := range []string{"a", "b"} {
		if err := s.SaveDevice(ctx, hub.Device{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveTools(ctx, id, h1, t1); err != nil {
			t.Fatal(err)
		}
	}
	if n := countRows(t, path, "tool_sets"); n != 1 {
		t.Fatalf("two devices with one list: %d tool_sets rows, want 1", n)
	}
	if err := s.DeleteDevice(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got := loadAll(t, s)["b"]; got.ToolsHash != h1 || !reflect.DeepEqual(got.Tools, t1) {
		t.Fatalf("b after deleting a: %+v", got)
	}
	if n := countRows(t, path, "tool_sets"); n != 1 {
		t.Fatalf("after deleting a: %d tool_sets rows, want 1", n)
	}
	// Switching b to another list collects the old one.
	if err := s.SaveTools(ctx, "b", h2, t2); err != nil {
		t.Fatal(err)
	}
	if got := loadAll(t, s)["b"]; got.ToolsHash != h2 || !reflect.DeepEqual(got.Tools, t2) {
		t.Fatalf("b after switching: %+v", got)
	}
	if n := countRows(t, path, "tool_sets"); n != 1 {
		t.Fatalf("after switching: %d tool_sets rows, want 1", n)
	}
	// Clearing the list collects it too.
	if err := s.SaveTools(ctx, "b", "", nil); err != nil {
		t.Fatal(err)
	}
	if got := loadAll(t, s)["b"]; got.ToolsHash != "" || got.Tools != nil {
		t.Fatalf("b after clearing: %+v", got)
	}
	if n := countRows(t, path, "tool_sets"); n != 0 {
		t.Fatalf("after clearing: %d tool_sets rows, want 0", n)
	}
}

func TestDeleteDevice(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path, store.Options{})
	h, tools := toolList(1)
	for _, id := range []string{"gone", "kept"} {
		if err := s.SaveDevice(ctx, hub.Device{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveTools(ctx, id, h, tools); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveThing(ctx, id, sampleThing("Lamp")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddCall(ctx, hub.CallRecord{DeviceID: id, Tool: "x"}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddEvent(ctx, hub.Event{Type: hub.EventOnline, DeviceID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteDevice(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	got := loadAll(t, s)
	if _, ok := got["gone"]; ok || len(got["kept"].Things) != 1 {
		t.Fatalf("after delete: %+v", got)
	}
	calls, _ := s.Calls(ctx, hub.CallFilter{})
	events, _ := s.Events(ctx, "", 0)
	if len(calls) != 1 || calls[0].DeviceID != "kept" || len(events) != 1 || events[0].DeviceID != "kept" {
		t.Fatalf("after delete: calls %+v events %+v", calls, events)
	}
	if n := countRows(t, path, "things"); n != 1 {
		t.Fatalf("things rows: %d, want 1", n)
	}

	err := s.DeleteDevice(ctx, "gone")
	if hub.ErrorCode(err) != hub.ENOTFOUND || hub.ErrorMessage(err) != `device "gone" not found` {
		t.Fatalf("deleting unknown device: %v (code %s)", err, hub.ErrorCode(err))
	}
}

func TestMemory(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, ":memory:", store.Options{})
	other := openStore(t, ":memory:", store.Options{})
	if err := s.SaveDevice(ctx, fullDevice("m1")); err != nil {
		t.Fatal(err)
	}
	if got := loadAll(t, s); len(got) != 1 {
		t.Fatalf("memory store: %+v", got)
	}
	if got := loadAll(t, other); len(got) != 0 {
		t.Fatalf("memory stores share data: %+v", got)
	}
}
