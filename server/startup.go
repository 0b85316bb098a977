package server

import (
	"net"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/xiaozhi-hub/hub/config"
)

// Startup is what the hub tells an operator once it listens: where the
// dashboard is, where the admin token is, how to point a device at the hub,
// and which outside services it will use.
type Startup struct {
	Dashboard string   // URL of the dashboard on this machine (loopback)
	URLs      []string // base URLs a browser or device may reach: public-url, the LAN addresses, localhost
	TokenFile string   // where the admin token is kept ("" when api-token sets it)
	// NewToken is the admin token when this start generated it, to be shown
	// once to the person starting the hub; never put it in the structured log.
	NewToken string
	LLM      string // "anthropic claude-…" or "not configured (…)"
	Speech   string // speech recognition and synthesis providers
}

// Startup describes the running hub for the startup banner and log.
func (h *Hub) Startup() Startup {
	cur := h.live.Current() // the live settings in force (live.go)
	s := Startup{Dashboard: h.URL() + "/", LLM: config.LLMSummary(cur.Agent, cur.LLMErr), Speech: cur.Config.SpeechSummary()}
	addrs, _ := net.InterfaceAddrs() // none: only localhost is shown
	s.URLs = ReachableURLs(h.cfg.PublicURL, h.ln.Addr().String(), addrs)
	if h.cfg.APIToken == "" {
		s.TokenFile = filepath.Join(h.cfg.DataDir, TokenFile)
	}
	if h.tokenCreated {
		s.NewToken = h.Token
	}
	return s
}

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
