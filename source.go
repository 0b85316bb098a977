package hub

import "net"

// SourceKey is the source a request or connection from remote (host:port,
// or a host) is counted under by the per-address limits: its IPv4 address
// (an IPv4-mapped IPv6 one too), or the /64 network of an IPv6 one, since
// one host has a whole /64. Behind trusted-proxies, remote is already the
// client's address.
func SourceKey(remote string) string {
	host := Host(remote)
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// Host is the host of remote (host:port), or remote itself when it has no
// port: the address a person is shown, without a port that tells nothing.
func Host(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}
