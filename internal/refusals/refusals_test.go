package refusals_test

import (
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/internal/refusals"
)

// A device named by a flood of refusals gets Burst reports, then one per
// Every, and the next report says how many were left out; another device
// and another address are unaffected.
func TestReportsAreLimitedPerDeviceAndAddress(t *testing.T) {
	var r refusals.Reports
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	reported := 0
	for i := range 1500 {
		// From many addresses: the device's own limit holds.
		if ok, _ := r.Allow(now, refusals.Address(string(rune('a'+i%100))), refusals.Device("victim")); ok {
			reported++
		}
	}
	if reported != refusals.Burst {
		t.Fatalf("%d of 1500 refusals naming one device reported, want %d", reported, refusals.Burst)
	}
	if got := r.Unreported(); got != 1500-refusals.Burst {
		t.Errorf("unreported = %d, want %d", got, 1500-refusals.Burst)
	}
	if ok, _ := r.Allow(now, refusals.Address("z"), refusals.Device("other")); !ok {
		t.Error("another device's first refusal was not reported")
	}
	ok, skipped := r.Allow(now.Add(refusals.Every), refusals.Address("a"), refusals.Device("victim"))
	if !ok || skipped != 1500-refusals.Burst {
		t.Errorf("after %v: reported %v, skipped %d; want a report saying %d were left out", refusals.Every, ok, skipped, 1500-refusals.Burst)
	}
}

func TestNilReportsAllowEverything(t *testing.T) {
	var r *refusals.Reports
	if ok, _ := r.Allow(time.Now(), "x"); !ok || r.Unreported() != 0 {
		t.Error("a nil Reports refused a report")
	}
}
