package hub_test

import (
	"testing"

	"github.com/xiaozhi-hub/hub"
)

func TestSourceKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.168.1.10:4000":           "192.168.1.10",
		"192.168.1.10":                "192.168.1.10",
		"[::ffff:192.168.1.10]:4000":  "192.168.1.10",
		"[2001:db8:1:2:aaaa::1]:4000": "2001:db8:1:2::/64",
		"[2001:db8:1:2:bbbb::9]:1":    "2001:db8:1:2::/64",
		"not an address":              "not an address",
	} {
		if got := hub.SourceKey(in); got != want {
			t.Errorf("SourceKey(%q) = %q, want %q", in, got, want)
		}
	}
}
