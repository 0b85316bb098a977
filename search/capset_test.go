package search

import (
	"fmt"
	"testing"

	"github.com/xiaozhi-hub/hub"
)

func deviceTools(name, desc string) []hub.Tool {
	return []hub.Tool{
		{Name: name, Description: desc},
		{Name: "self.get_device_status", Description: "Provides the real-time information of the device"},
	}
}

// Devices of one model share what their tools say: one set for a hundred
// lamps, kept while one of them is indexed and forgotten with the last.
// Each is still found by its own name and room, and by what its tools do.
func TestDevicesOfOneModelShareTheirCapabilities(t *testing.T) {
	x := NewIndex()
	for i := range 100 {
		name := "台灯"
		if i == 42 {
			name = "书桌灯"
		}
		x.Put(Doc{ID: fmt.Sprintf("lamp-%02d", i), Name: name, Room: fmt.Sprintf("room%d", i%10),
			Tools: deviceTools("self.light.set_brightness", "Set the brightness of the lamp")}, "")
	}
	x.Put(Doc{ID: "speaker", Name: "音箱", Room: "客厅", Tools: deviceTools("self.audio_speaker.set_volume", "Set the volume of the speaker")}, "")
	if n := len(x.caps); n != 2 {
		t.Fatalf("%d capability sets for two models", n)
	}
	if got := x.Search("书桌", 1); len(got) != 1 || got[0].ID != "lamp-42" {
		t.Errorf("by name: %+v", got)
	}
	if got := x.Search("volume", 3); len(got) != 1 || got[0].ID != "speaker" {
		t.Errorf("by what its tools say: %+v", got)
	}
	if got := x.Search("brightness", 200); len(got) != 100 {
		t.Errorf("brightness finds %d devices, want the 100 lamps", len(got))
	}

	for i := range 99 {
		x.Remove(fmt.Sprintf("lamp-%02d", i))
	}
	if got := x.Search("brightness", 5); len(got) != 1 || got[0].ID != "lamp-99" {
		t.Errorf("after 99 lamps went: %+v", got)
	}
	x.Put(Doc{ID: "lamp-99", Name: "台灯99", Tools: deviceTools("self.light.set_brightness", "Set the brightness of the light")}, "") // a new firmware
	x.Remove("speaker")
	if n := len(x.caps); n != 1 {
		t.Errorf("%d capability sets kept for one device", n)
	}
	x.Remove("lamp-99")
	if n := len(x.caps); n != 0 || len(x.postings) != 0 {
		t.Errorf("an empty index keeps %d capability sets and %d postings", n, len(x.postings))
	}
}

// Capabilities are told apart by their whole text: a device cannot make
// its tools read as another model's by splitting the same letters
// differently between a tool's name and its description.
func TestCapabilitiesAreToldApartByTheirText(t *testing.T) {
	x := NewIndex()
	x.Put(Doc{ID: "a", Tools: []hub.Tool{{Name: "self.x", Description: "ab c"}}}, "")
	x.Put(Doc{ID: "b", Tools: []hub.Tool{{Name: "self.xa", Description: "b c"}}}, "")
	x.Put(Doc{ID: "c", Tools: []hub.Tool{{Name: "self.x", Description: "ab c"}}}, "")
	if n := len(x.caps); n != 2 {
		t.Errorf("%d capability sets for two different tool lists", n)
	}
}
