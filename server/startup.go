package server

import (
	"strings"
)

// Startup is what the hub tells an operator once it listens: where the
// dashboard is, and which outside services it will use.
type Startup struct {
	Dashboard string // URL of the dashboard on this machine
	LLM       string // "anthropic claude-…" or "not configured (…)"
	Speech    string // speech recognition and synthesis providers
}

// Startup describes the running hub for the startup log.
func (h *Hub) Startup() Startup {
	s := Startup{Dashboard: h.URL() + "/", Speech: "not configured (the hub has no speech providers yet)"}
	if err := h.agent.Ready(); err != nil {
		s.LLM = "not configured (set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL, or agent-provider; see --help)"
	} else {
		c := h.agent.Config()
		s.LLM = strings.TrimSpace(c.Provider + " " + c.Model + " at " + c.BaseURL)
	}
	return s
}
