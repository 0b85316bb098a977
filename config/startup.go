package config

import (
	"strings"

	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/tts"
)

// The lines of the startup log that name the outside services the hub
// will use, or the settings that would name them.

// LLMSummary names the agent's model (its settings as the agent completed
// them), or what to set when ready says there is none.
func LLMSummary(a agent.Config, ready error) string {
	if ready != nil {
		return "not configured (set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL, or agent-provider; see --help)"
	}
	return strings.TrimSpace(a.Provider + " " + a.Model + " at " + a.BaseURL)
}

// SpeechSummary names the speech providers, or what to set.
func (c Config) SpeechSummary() string {
	if c.ASRProvider == "" && c.TTSProvider == "" {
		return "not configured (devices are told so; set asr-provider and tts-provider, see docs/voice.md)"
	}
	part := func(what, provider, summary string) string {
		if provider == "" {
			return what + " not configured"
		}
		return what + " " + summary
	}
	return part("recognition", c.ASRProvider, asr.Summary(c.ASR())) +
		"; " + part("synthesis", c.TTSProvider, tts.Summary(c.TTS()))
}
