package config

import (
	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/tts"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// ASR is the speech recognition settings, for package asr.
func (c Config) ASR() asr.Settings {
	return asr.Settings{Provider: c.ASRProvider, BaseURL: c.ASRBaseURL, APIKey: c.ASRAPIKey, Model: c.ASRModel, Language: c.ASRLanguage}
}

// TTS is the speech synthesis settings, for package tts.
func (c Config) TTS() tts.Settings {
	return tts.Settings{Provider: c.TTSProvider, BaseURL: c.TTSBaseURL, APIKey: c.TTSAPIKey, Model: c.TTSModel,
		Voice: c.TTSVoice, SampleRate: c.TTSSampleRate}
}

// Speech makes the speech providers the settings name, for the voice
// engine: nil for a provider left empty. Nothing is dialled before use.
func (c Config) Speech() (driver.Recognizer, driver.Synthesizer, error) {
	rec, err := asr.New(c.ASR())
	if err != nil {
		return nil, nil, err
	}
	syn, err := tts.New(c.TTS())
	if err != nil {
		return nil, nil, err
	}
	return rec, syn, nil
}

// validateVoice checks the speech provider settings (each provider package
// checks its own, in the words of the settings).
func (c Config) validateVoice() []error {
	return append(asr.Check(c.ASR()), tts.Check(c.TTS())...)
}

// resolveVoice fills the API keys left empty from the environment variable
// each provider names: OPENAI_API_KEY for OpenAI itself (no base URL),
// DASHSCOPE_API_KEY for DashScope.
func (c *Config) resolveVoice(getenv func(string) string) {
	if env := asr.KeyEnv(c.ASR()); c.ASRAPIKey == "" && env != "" {
		c.ASRAPIKey = getenv(env)
	}
	if env := tts.KeyEnv(c.TTS()); c.TTSAPIKey == "" && env != "" {
		c.TTSAPIKey = getenv(env)
	}
}
