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
	part := func(what, provider, base, model string, defaults map[string][2]string) string {
		if provider == "" {
			return what + " not configured"
		}
		if base == "" {
			base = defaults[provider][0]
		}
		if model == "" {
			model = defaults[provider][1]
		}
		return strings.Join(strings.Fields(what+" "+provider+" "+model+" at "+base), " ")
	}
	return part("recognition", c.ASRProvider, c.ASRBaseURL, c.ASRModel, map[string][2]string{
		"openai": {asr.OpenAIBaseURL, asr.OpenAIModel}, "dashscope": {asr.DashScopeURL, asr.DashScopeModel}}) +
		"; " + part("synthesis", c.TTSProvider, c.TTSBaseURL, c.TTSModel, map[string][2]string{
		"openai": {tts.OpenAIBaseURL, tts.OpenAIModel}, "dashscope": {tts.DashScopeURL, tts.DashScopeModel}})
}
