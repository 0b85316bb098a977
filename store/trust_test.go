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

// Only a trust record without a decision can be deleted as undecided.
func TestDeleteUndecidedTrustKeepsDecisions(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{})
	at := time.Date(2026, 8, 8, 8, 0, 0, 0, time.UTC)
	for _, tr := range []hub.Trust{
		{DeviceID: "aa:00:00:00:00:01", ClientID: "bound only"},
		{DeviceID: "aa:00:00:00:00:02", ClientID: "c", Approved: at},
		{DeviceID: "aa:00:00:00:00:03", ClientID: "c", Revoked: at, Generation: 7},
		{DeviceID: "aa:00:00:00:00:04", ClientID: "c", Generation: 9}, // re-bound by a person
		{DeviceID: "aa:00:00:00:00:05", ClientID: "c", Transport: hub.TransportWebSocket},
	} {
		if err := s.SaveTrust(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []bool{true, false, false, false, false} {
		id := "aa:00:00:00:00:0" + string(rune('1'+i))
		if gone, err := s.DeleteUndecidedTrust(ctx, id); gone != want || err != nil {
			t.Errorf("%s: deleted %v (%v), want %v", id, gone, err, want)
		}
	}
	recs, err := s.LoadTrust(ctx)
	if err != nil || len(recs) != 4 {
		t.Fatalf("%d records left (%v), want 4", len(recs), err)
	}
}

// History is a call record or a voice turn; other events are not.
func TestHasHistory(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t), store.Options{})
	now := time.Now()
	done := make(chan error, 1)
	calls := []hub.CallRecord{{ID: 1, DeviceID: "aa:00:00:00:00:01", Kind: "mcp", Tool: "self.light.on", Started: now}}
	events := []hub.Event{{Type: hub.EventVoiceTurn, DeviceID: "aa:00:00:00:00:02", Time: now},
		{Type: hub.EventOnline, DeviceID: "aa:00:00:00:00:03", Time: now}}
	if err := s.Log(calls, events, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"aa:00:00:00:00:01": true, "aa:00:00:00:00:02": true, "aa:00:00:00:00:03": false, "aa:00:00:00:00:04": false} {
		if got, err := s.HasHistory(ctx, id); got != want || err != nil {
			t.Errorf("%s: %v %v, want %v", id, got, err, want)
		}
	}
}
