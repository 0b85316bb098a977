package cluster

import (
	"testing"

	"github.com/xiaozhi-hub/hub"
)

// merge, the rule of the shared device record: another node's record
// (theirs) keeps every field this node did not change; the fields this
// node changed win; the node holding the device's connection writes what
// the device reports about itself even where it did not change it here.
func TestMergeFieldByField(t *testing.T) {
	before := hub.Device{ID: "d", Name: "lamp", Room: "hall", Board: "old-board", Firmware: "1.0"}
	for _, tc := range []struct {
		name         string
		ours, theirs hub.Device
		owner        bool
		want         hub.Device
	}{
		{
			name:   "each node changed a different field: both kept",
			ours:   hub.Device{ID: "d", Name: "desk lamp", Room: "hall", Board: "old-board", Firmware: "1.0"},
			theirs: hub.Device{ID: "d", Name: "lamp", Room: "study", Board: "old-board", Firmware: "1.0"},
			want:   hub.Device{ID: "d", Name: "desk lamp", Room: "study", Board: "old-board", Firmware: "1.0"},
		},
		{
			name:   "both changed one field: ours, the later write, wins",
			ours:   hub.Device{ID: "d", Name: "ours", Room: "hall", Board: "old-board", Firmware: "1.0"},
			theirs: hub.Device{ID: "d", Name: "theirs", Room: "hall", Board: "old-board", Firmware: "1.0"},
			want:   hub.Device{ID: "d", Name: "ours", Room: "hall", Board: "old-board", Firmware: "1.0"},
		},
		{
			name:   "not the holder: what theirs says the device reported is kept",
			ours:   hub.Device{ID: "d", Name: "lamp", Room: "kitchen", Board: "old-board", Firmware: "1.0"},
			theirs: hub.Device{ID: "d", Name: "lamp", Room: "hall", Board: "new-board", Firmware: "2.0"},
			want:   hub.Device{ID: "d", Name: "lamp", Room: "kitchen", Board: "new-board", Firmware: "2.0"},
		},
		{
			name:   "the holder: the device's reports are written as they are",
			ours:   hub.Device{ID: "d", Name: "lamp", Room: "hall", Board: "old-board", Firmware: "1.0"},
			theirs: hub.Device{ID: "d", Name: "renamed", Room: "hall", Board: "stale-board", Firmware: "0.9"},
			owner:  true,
			want:   hub.Device{ID: "d", Name: "renamed", Room: "hall", Board: "old-board", Firmware: "1.0"},
		},
	} {
		got := merge(before, tc.ours, tc.theirs, tc.owner)
		if got.Name != tc.want.Name || got.Room != tc.want.Room || got.Board != tc.want.Board || got.Firmware != tc.want.Firmware {
			t.Errorf("%s: merged %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
