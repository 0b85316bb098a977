// Package httpx is the HTTP plumbing of the hub's one listener, apart from
// any route: the client's address behind trusted proxies (proxy.go),
// request metrics by route pattern (metrics.go), the closing of
// connections that never sent a request at shutdown (conns.go), and the
// base URLs at which the listener can be reached (urls.go).
package httpx

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Behind a reverse proxy or load balancer (deploy/cluster/nginx.conf, a
// TLS terminator) every request comes from the proxy's address, so every
// device would share one OTA rate limit and one allowance of activation
// codes. From the proxies named in trusted-proxies, and only from them,
// the client's address is the rightmost address in X-Forwarded-For that is
// not itself a trusted proxy; the request continues with it as its
// RemoteAddr, so that every rule keyed on the address sees the client.

// ParseProxies reads trusted-proxies: IP addresses or CIDR networks.
func ParseProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted-proxies: %q is neither an IP address nor a network such as 10.0.0.0/8", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

func trusted(proxies []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// FromProxies serves next with the client's address as RemoteAddr for
// requests that came through a trusted proxy.
func FromProxies(proxies []netip.Prefix, next http.Handler) http.Handler {
	if len(proxies) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if client, ok := clientAddr(proxies, r); ok {
			r2 := *r
			r2.RemoteAddr = client
			r = &r2
		}
		next.ServeHTTP(w, r)
	})
}

// clientAddr is the address the trusted proxy in front of r says the
// client has (host:port, the port being the proxy's), if r came from one.
func clientAddr(proxies []netip.Prefix, r *http.Request) (string, bool) {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !trusted(proxies, peer.Addr()) {
		return "", false
	}
	hops := r.Header.Values("X-Forwarded-For")
	var all []string
	for _, h := range hops {
		all = append(all, strings.Split(h, ",")...)
	}
	if len(all) > 64 {
		all = all[len(all)-64:] // a longer chain is made up: look at its end
	}
	for i := len(all) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(all[i]))
		if err != nil {
			return "", false // garbage where an address should be: keep the proxy's
		}
		if !trusted(proxies, a) {
			return net.JoinHostPort(a.Unmap().String(), fmt.Sprint(peer.Port())), true
		}
	}
	return "", false
}
