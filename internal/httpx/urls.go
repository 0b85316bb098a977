package httpx

import (
	"net"
	"net/netip"
	"strings"
)

// ReachableURLs lists the base URLs (no trailing slash) on which the hub
// listening at listenAddr can be reached: publicURL first when set; for a
// wildcard listen address (":8000", "0.0.0.0:8000", "[::]:8000") each
// IPv4 address of ifaces a browser on the LAN can use (not loopback nor
// link-local; IPv6 ones are left out to keep the list short), then
// localhost; else the listen address itself.
func ReachableURLs(publicURL, listenAddr string, ifaces []net.Addr) []string {
	var urls []string
	if publicURL != "" {
		urls = append(urls, strings.TrimSuffix(publicURL, "/"))
	}
	host, port, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return urls
	}
	ip, perr := netip.ParseAddr(host)
	if perr != nil || !ip.IsUnspecified() {
		return append(urls, "http://"+net.JoinHostPort(host, port))
	}
	for _, a := range ifaces {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		lan, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		lan = lan.Unmap()
		if !lan.Is4() || lan.IsLoopback() || lan.IsLinkLocalUnicast() || !lan.IsGlobalUnicast() {
			continue
		}
		urls = append(urls, "http://"+net.JoinHostPort(lan.String(), port))
	}
	return append(urls, "http://localhost:"+port)
}
