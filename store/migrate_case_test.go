package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// TestMigrationLowerCasesMACIDs opens a database written before device ids
// were normalised, holding the same device under "DE:…" (a browser client)
// and "de:…" (the firmware), another device only under upper case, and a
// name that only looks like an id. After the migration each device has one
// lower-case row and nothing stored was lost.
func TestMigrationLowerCasesMACIDs(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 8, 8, 8, 0, 0, 0, time.UTC)
	hash, tools := toolList(1)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Both cases: the lower-case row has the name, the upper-case one the
	// room, a newer connection and the tools.
	must(s.SaveDevice(ctx, hub.Device{ID: "de:00:00:00:00:01", Name: "Lamp", Board: "old", FirstSeen: t0, LastSeen: t0}))
	must(s.SaveDevice(ctx, hub.Device{ID: "DE:00:00:00:00:01", Room: "kitchen", Board: "new",
		FirstSeen: t0.Add(time.Hour), LastSeen: t0.Add(2 * time.Hour)}))
	must(s.SaveTools(ctx, "DE:00:00:00:00:01", hash, tools))
	must(s.SaveThing(ctx, "de:00:00:00:00:01", hub.Thing{Name: "Lamp", State: map[string]json.RawMessage{"power": json.RawMessage(`true`)}, StateUpdated: t0}))
	must(s.SaveThing(ctx, "DE:00:00:00:00:01", hub.Thing{Name: "Speaker", State: map[string]json.RawMessage{"volume": json.RawMessage(`30`)}, StateUpdated: t0}))
	// Upper case only.
	must(s.SaveDevice(ctx, hub.Device{ID: "AB:CD:EF:00:00:02", Name: "Fan", LastSeen: t0}))
	// Not a MAC: kept as it is.
	must(s.SaveDevice(ctx, hub.Device{ID: "Kitchen-Panel", Name: "Panel", LastSeen: t0}))
	must(s.AddEvent(ctx, hub.Event{Type: hub.EventOnline, DeviceID: "DE:00:00:00:00:01", Time: t0}))
	must(s.AddEvent(ctx, hub.Event{Type: hub.EventOffline, DeviceID: "de:00:00:00:00:01", Time: t0.Add(time.Second)}))
	_, err = s.AddCall(ctx, hub.CallRecord{DeviceID: "DE:00:00:00:00:01", Kind: "mcp", Tool: "self.x", Caller: "api",
		Arguments: `{}`, Result: `{}`, Outcome: hub.OutcomeOK, Started: t0})
	must(err)
	// Trust: approved under upper case (with the client id), checked under both.
	must(s.SaveTrust(ctx, hub.Trust{DeviceID: "DE:00:00:00:00:01", Generation: 7, Approved: t0}))
	must(s.RecordCheck(ctx, hub.Trust{DeviceID: "DE:00:00:00:00:01", ClientID: "uuid-1", Board: "b", LastCheck: t0}))
	must(s.RecordCheck(ctx, hub.Trust{DeviceID: "de:00:00:00:00:01", Board: "b2", LastCheck: t0.Add(time.Hour)}))
	must(s.Close())

	// Make the database look as if it was written before migration 3.
	db, err := sql.Open("sqlite", path)
	must(err)
	_, err = db.Exec(`DELETE FROM schema_migrations WHERE version = 3`)
	must(err)
	must(db.Close())

	s, err = store.Open(ctx, path, store.Options{})
	must(err)
	defer s.Close()
	snaps, err := s.LoadAll(ctx)
	must(err)
	byID := map[string]int{}
	for i, sn := range snaps {
		byID[sn.Device.ID] = i
	}
	if len(snaps) != 3 {
		t.Fatalf("devices after the migration: %v, want de:00:00:00:00:01, ab:cd:ef:00:00:02, Kitchen-Panel", byID)
	}
	i, ok := byID["de:00:00:00:00:01"]
	if !ok {
		t.Fatalf("merged device missing: %v", byID)
	}
	d := snaps[i]
	if d.Device.Name != "Lamp" || d.Device.Room != "kitchen" || d.Device.Board != "new" ||
		!d.Device.FirstSeen.Equal(t0) || !d.Device.LastSeen.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("merged device: %+v", d.Device)
	}
	if d.ToolsHash != hash || len(d.Tools) != len(tools) {
		t.Errorf("merged tools: %q, %d tools", d.ToolsHash, len(d.Tools))
	}
	if len(d.Things) != 2 {
		t.Errorf("merged things: %+v", d.Things)
	}
	if _, ok := byID["ab:cd:ef:00:00:02"]; !ok || snaps[byID["ab:cd:ef:00:00:02"]].Device.Name != "Fan" {
		t.Errorf("upper-case-only device not renamed with its name: %v", byID)
	}
	if _, ok := byID["Kitchen-Panel"]; !ok {
		t.Errorf("a name that is not a MAC was changed: %v", byID)
	}
	evs, err := s.Events(ctx, "de:00:00:00:00:01", 10)
	must(err)
	if len(evs) != 2 {
		t.Errorf("events of the merged device: %+v", evs)
	}
	calls, err := s.Calls(ctx, hub.CallFilter{DeviceID: "de:00:00:00:00:01"})
	must(err)
	if len(calls) != 1 {
		t.Errorf("calls of the merged device: %+v", calls)
	}
	trust, err := s.LoadTrust(ctx)
	must(err)
	if len(trust) != 1 {
		t.Fatalf("trust records: %+v", trust)
	}
	tr := trust[0]
	if tr.DeviceID != "de:00:00:00:00:01" || tr.Generation != 7 || !tr.Approved.Equal(t0) ||
		tr.ClientID != "uuid-1" || tr.Board != "b2" || !tr.LastCheck.Equal(t0.Add(time.Hour)) {
		t.Errorf("merged trust: %+v", tr)
	}
}
