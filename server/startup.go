package server

import (
	"net"

	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/internal/datadir"
	"github.com/xiaozhi-hub/hub/internal/httpx"
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
	s.URLs = httpx.ReachableURLs(h.cfg.PublicURL, h.ln.Addr().String(), addrs)
	if h.cfg.APIToken == "" {
		s.TokenFile = h.lock.Path(datadir.TokenFile)
	}
	if h.tokenCreated {
		s.NewToken = h.Token
	}
	return s
}
