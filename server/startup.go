package server

import (
	"strings"

	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/tts"
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
	s := Startup{Dashboard: h.URL() + "/", Speech: speechSummary(h.cfg)}
	if err := h.agent.Ready(); err != nil {
		s.LLM = "not configured (set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL, or agent-provider; see --help)"
	} else {
		c := h.agent.Config()
		s.LLM = strings.TrimSpace(c.Provider + " " + c.Model + " at " + c.BaseURL)
	}
	return s
}

// speechSummary names the speech providers, or what to set.
func speechSummary(c Config) string {
	if c.ASRProvider == "" && c.TTSProvider == "" {
		return "not configured (devices are told so; set asr-provider and tts-provider, see README \"A device that talks\")"
	}
	part := func(what, provider, summary string) string {
		if provider == "" {
			return what + " not configured"
		}
		return what + " " + summary
	}
	return part("recognition", c.ASRProvider, asr.Summary(c.asrSettings())) +
		"; " + part("synthesis", c.TTSProvider, tts.Summary(c.ttsSettings()))
}
