package store_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// restoreBeforePeople writes testdata/before-people/hub.sql, the dump of a
// database written by the hub before people existed (schema 009; see
// generate_test.go.txt there), into a new SQLite file, and returns its path.
func restoreBeforePeople(t *testing.T) string {
	t.Helper()
	dump, err := os.ReadFile(filepath.Join("testdata", "before-people", "hub.sql"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hub.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(dump)); err != nil {
		t.Fatalf("restore the dump: %v", err)
	}
	var version int
	if err := db.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || version != 9 {
		t.Fatalf("the dump is at schema %d (%v); want 9, the schema before people", version, err)
	}
	return path
}

// A database written before people existed opens with every device, tool,
// thing, trust decision, call and event kept; its devices are in no home,
// there are no users yet, and a device can then be put in a home.
func TestUpgradeFromBeforePeopleKeepsEverything(t *testing.T) {
	ctx := context.Background()
	path := restoreBeforePeople(t)
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatalf("open the database written before people: %v", err)
	}
	snaps, err := s.LoadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]hub.Snapshot{}
	for _, sn := range snaps {
		byID[sn.Device.ID] = sn
		if sn.Device.Home != "" {
			t.Errorf("device %s is in home %q after the upgrade; want none", sn.Device.ID, sn.Device.Home)
		}
	}
	if len(byID) != 3 {
		t.Fatalf("%d devices after the upgrade; want 3", len(byID))
	}
	lamp, speaker := byID["aa:00:00:00:e1:01"], byID["aa:00:00:00:e1:02"]
	if lamp.Device.Name != "客厅灯" || lamp.Device.Room != "客厅" || len(lamp.Device.Aliases) != 1 || lamp.Device.Aliases[0] != "大灯" {
		t.Errorf("the lamp is %+v; want its name, room and alias kept", lamp.Device)
	}
	if len(lamp.Tools) == 0 || lamp.ToolsHash == "" {
		t.Errorf("the lamp has %d tools after the upgrade; want its list kept", len(lamp.Tools))
	}
	if speaker.Device.Name != "卧室音箱" || len(speaker.Things) == 0 {
		t.Errorf("the speaker is %+v with %d things; want its name and IoT things kept", speaker.Device, len(speaker.Things))
	}

	trust, err := s.LoadTrust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	decided := map[string]hub.Trust{}
	for _, tr := range trust {
		decided[tr.DeviceID] = tr
	}
	for _, id := range []string{"aa:00:00:00:e1:01", "aa:00:00:00:e1:02"} {
		if tr := decided[id]; tr.Approved.IsZero() || !tr.Revoked.IsZero() || tr.ClientID == "" {
			t.Errorf("trust of %s is %+v; want approved, bound to its Client-Id", id, tr)
		}
	}
	if tr := decided["aa:00:00:00:e1:03"]; tr.Revoked.IsZero() || !tr.Approved.IsZero() || tr.Generation == 0 {
		t.Errorf("trust of the revoked device is %+v; want revoked, its generation moved on", tr)
	}

	calls, err := s.Calls(ctx, hub.CallFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3 {
		t.Errorf("%d calls after the upgrade; want the 3 recorded before", len(calls))
	}
	for _, c := range calls {
		if c.By != "" || c.User != "" {
			t.Errorf("call %d says it was caused by %q for %q; want no one (recorded before people)", c.ID, c.By, c.User)
		}
	}
	events, err := s.Events(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 20 {
		t.Errorf("%d events after the upgrade; want the 20 recorded before", len(events))
	}

	users, homes, tokens, err := s.LoadAccounts(ctx)
	if err != nil || len(users)+len(homes)+len(tokens) != 0 {
		t.Fatalf("accounts after the upgrade: %v %v %v %v; want none", users, homes, tokens, err)
	}

	// The new columns work on the old rows: a device put in a home stays.
	home := hub.Home{ID: "h1", Name: "家", Created: time.Now(), Members: map[string]hub.Role{"alice": hub.RoleOwner}}
	if err := s.SaveHome(ctx, home); err != nil {
		t.Fatal(err)
	}
	d := lamp.Device
	d.Home = home.ID
	if err := s.SaveDevice(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path, store.Options{})
	if snaps, err = s.LoadAll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, sn := range snaps {
		if sn.Device.ID == d.ID && (sn.Device.Home != home.ID || sn.Device.Name != "客厅灯" || len(sn.Tools) == 0) {
			t.Errorf("after a restart the lamp is %+v with %d tools; want it in home %s, its name and tools kept", sn.Device, len(sn.Tools), home.ID)
		}
	}
}
