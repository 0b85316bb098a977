package config

import (
	"fmt"

	"github.com/xiaozhi-hub/hub/asr"
	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/tts"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// ASR is the speech recognition settings, for package asr.
func (c Config) ASR() asr.Settings {
	return asr.Settings{Provider: c.ASRProvider, BaseURL: c.ASRBaseURL, APIKey: c.ASRAPIKey, Model: c.ASRModel, Language: c.ASRLanguage,
		Audio: c.ASRAudio}
}

// TTS is the speech synthesis settings, for package tts.
func (c Config) TTS() tts.Settings {
	return tts.Settings{Provider: c.TTSProvider, BaseURL: c.TTSBaseURL, APIKey: c.TTSAPIKey, Model: c.TTSModel,
		Voice: c.TTSVoice, SampleRate: c.TTSSampleRate}
}

// Opus is the answers' encoder settings, for package opus.
func (c Config) Opus() opus.Settings {
	return opus.Settings{Complexity: c.OpusComplexity, Bitrate: c.OpusBitrate}
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

// validateVoice checks the speech provider and codec settings (each
// package checks its own, in the words of the settings).
func (c Config) validateVoice() []error {
	errs := append(asr.Check(c.ASR()), tts.Check(c.TTS())...)
	for _, err := range c.Opus().Check() {
		errs = append(errs, fmt.Errorf("opus-%w", err))
	}
	return errs
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
