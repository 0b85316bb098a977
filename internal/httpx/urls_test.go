package httpx_test

import (
	"net"
	"slices"
	"testing"

	"github.com/xiaozhi-hub/hub/internal/httpx"
)

// The banner's URLs: public-url first; for a wildcard listen address the
// machine's LAN IPv4 addresses and localhost (no loopback, link-local or
// IPv6 ones); a specific address as it is.
func TestReachableURLs(t *testing.T) {
	ifaces := []net.Addr{
		&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
		&net.IPNet{IP: net.ParseIP("192.168.1.10"), Mask: net.CIDRMask(24, 32)},
		&net.IPNet{IP: net.ParseIP("169.254.3.4"), Mask: net.CIDRMask(16, 32)},
		&net.IPNet{IP: net.ParseIP("fe80::1"), Mask: net.CIDRMask(64, 128)},
		&net.IPNet{IP: net.ParseIP("2001:db8::5"), Mask: net.CIDRMask(64, 128)},
		&net.IPAddr{IP: net.ParseIP("10.0.0.7")},
	}
	for _, c := range []struct {
		public, listen string
		want           []string
	}{
		{"", "[::]:8000", []string{"http://192.168.1.10:8000", "http://localhost:8000"}},
		{"", "0.0.0.0:8000", []string{"http://192.168.1.10:8000", "http://localhost:8000"}},
		{"http://hub.lan:8000/", "[::]:8000", []string{"http://hub.lan:8000", "http://192.168.1.10:8000", "http://localhost:8000"}},
		{"", "127.0.0.1:9000", []string{"http://127.0.0.1:9000"}},
		{"", "192.168.1.10:8000", []string{"http://192.168.1.10:8000"}},
	} {
		if got := httpx.ReachableURLs(c.public, c.listen, ifaces); !slices.Equal(got, c.want) {
			t.Errorf("ReachableURLs(%q, %q) = %q, want %q", c.public, c.listen, got, c.want)
		}
	}
}
