package hub

import "testing"

func TestNormalizeDeviceID(t *testing.T) {
	for in, want := range map[string]string{
		"DE:00:00:00:0A:bC": "de:00:00:00:0a:bc",
		"de:00:00:00:00:01": "de:00:00:00:00:01",
		"AA-BB-CC-DD-EE-FF": "aa-bb-cc-dd-ee-ff",
		"AA:BB-CC:DD:EE:FF": "AA:BB-CC:DD:EE:FF", // mixed separators: not a MAC
		"Kitchen-Lamp":      "Kitchen-Lamp",
		"AB:CD:EF:01:23:4G": "AB:CD:EF:01:23:4G",
		"":                  "",
	} {
		if got := NormalizeDeviceID(in); got != want {
			t.Errorf("NormalizeDeviceID(%q) = %q, want %q", in, got, want)
		}
	}
}
