package server

import (
	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/tts"
)

// asrSettings are the speech recognition settings, for package asr.
func (c Config) asrSettings() asr.Settings {
	return asr.Settings{Provider: c.ASRProvider, BaseURL: c.ASRBaseURL, APIKey: c.ASRAPIKey, Model: c.ASRModel, Language: c.ASRLanguage}
}

// ttsSettings are the speech synthesis settings, for package tts.
func (c Config) ttsSettings() tts.Settings {
	return tts.Settings{Provider: c.TTSProvider, BaseURL: c.TTSBaseURL, APIKey: c.TTSAPIKey, Model: c.TTSModel,
		Voice: c.TTSVoice, SampleRate: c.TTSSampleRate}
}

// validateVoice checks the speech provider settings (each provider package
// checks its own, in the words of the settings).
func (c Config) validateVoice() []error {
	return append(asr.Check(c.asrSettings()), tts.Check(c.ttsSettings())...)
}

// resolveVoice fills the API keys left empty from the environment variable
// each provider names: OPENAI_API_KEY for OpenAI itself (no base URL),
// DASHSCOPE_API_KEY for DashScope.
func (c *Config) resolveVoice(getenv func(string) string) {
	if env := asr.KeyEnv(c.asrSettings()); c.ASRAPIKey == "" && env != "" {
		c.ASRAPIKey = getenv(env)
	}
	if env := tts.KeyEnv(c.ttsSettings()); c.TTSAPIKey == "" && env != "" {
		c.TTSAPIKey = getenv(env)
	}
}
