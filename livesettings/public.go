package livesettings

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/xiaozhi-hub/hub/internal/httpx"
)

// publicOnly makes the requests of a home's own providers (home.go): it
// connects only to public addresses, checked on the address actually
// dialled (after DNS, so a name that resolves to the hub's own network
// is refused too), and ignores proxy settings. A home's owner is not the
// hub's admin: without this, an owner could point the hub at the
// machines around it (its loopback, the LAN, a cloud's metadata address)
// and read their answers in the test button's detail. Local providers
// are for the hub's own settings, which only the admin sets.
var publicOnly = &http.Client{Transport: publicTransport()}

func publicTransport() *http.Transport {
	t := httpx.PooledTransport()
	t.Proxy = nil
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: refuseNonPublic}).DialContext
	return t
}

// refuseNonPublic is publicOnly's dialler's check of each address.
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if !Public(ip) {
		return fmt.Errorf("%s is not a public address: a home's own providers reach only the internet (the hub's admin sets providers on the local network)", ip)
	}
	return nil
}

// nonPublic are the ranges Public refuses beyond what netip classifies:
// shared address space (carrier-grade NAT), IETF protocol assignments,
// benchmarking, and IPv6 prefixes that embed an IPv4 address.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
}

// Public reports whether ip is an address on the internet: not loopback,
// private, link-local, multicast, unspecified or one of nonPublic.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
