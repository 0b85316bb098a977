package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

func TestTrustRoundTripAndPartialWrites(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Trust(ctx, "aa:00:00:00:00:01"); hub.ErrorCode(err) != hub.ENOTFOUND {
		t.Fatalf("missing record: %v, want ENOTFOUND", err)
	}
	at := time.Date(2026, 8, 8, 8, 0, 0, 123, time.UTC)
	check := hub.Trust{DeviceID: "aa:00:00:00:00:01", ClientID: "c1", Board: "bread-compact-wifi", Firmware: "2.4.2",
		SystemInfo: json.RawMessage(`{"flash_size":16777216}`), LastCheck: at}
	if err := s.RecordCheck(ctx, check); err != nil {
		t.Fatal(err)
	}
	decision := hub.Trust{DeviceID: check.DeviceID, ClientID: "c1", Generation: 42, Approved: at.Add(time.Minute),
		ActivationVersion: 2, SerialNumber: "SN-1", ActivationHMAC: "ab"}
	if err := s.SaveTrust(ctx, decision); err != nil {
		t.Fatal(err)
	}
	// A later check without a body keeps the system info and the decision.
	later := check
	later.SystemInfo, later.Firmware, later.LastCheck = nil, "2.5.0", at.Add(time.Hour)
	if err := s.RecordCheck(ctx, later); err != nil {
		t.Fatal(err)
	}
	// A decision for a device never checked creates its record.
	if err := s.SaveTrust(ctx, hub.Trust{DeviceID: "aa:00:00:00:00:02", Generation: 7, Revoked: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordCheck(ctx, hub.Trust{DeviceID: "x", SystemInfo: json.RawMessage(`{`)}); hub.ErrorCode(err) != hub.EINVALID {
		t.Fatalf("bad system info: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openStore(t, path, store.Options{}) // survives a restart
	got, err := s2.Trust(ctx, check.DeviceID)
	if err != nil {
		t.Fatal(err)
	}
	want := hub.Trust{DeviceID: check.DeviceID, ClientID: "c1", Generation: 42, Approved: decision.Approved,
		ActivationVersion: 2, SerialNumber: "SN-1", ActivationHMAC: "ab", Board: "bread-compact-wifi",
		Firmware: "2.5.0", SystemInfo: json.RawMessage(`{"flash_size":16777216}`), LastCheck: later.LastCheck}
	if !equalTrust(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	all, err := s2.LoadTrust(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].DeviceID != check.DeviceID || all[0].SystemInfo != nil || all[0].Generation != 42 ||
		all[1].Generation != 7 || !all[1].Revoked.Equal(at) || !all[1].Approved.IsZero() {
		t.Fatalf("LoadTrust = %+v", all)
	}
}

func equalTrust(a, b hub.Trust) bool {
	same := string(a.SystemInfo) == string(b.SystemInfo) && a.Approved.Equal(b.Approved) &&
		a.Revoked.Equal(b.Revoked) && a.LastCheck.Equal(b.LastCheck)
	for _, t := range []*hub.Trust{&a, &b} {
		t.SystemInfo, t.Approved, t.Revoked, t.LastCheck = nil, time.Time{}, time.Time{}, time.Time{}
	}
	return same && reflect.DeepEqual(a, b)
}
