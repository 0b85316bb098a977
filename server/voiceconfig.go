package server

import (
	"errors"
	"fmt"
	"net/url"
)

// validateVoice checks the speech provider settings.
func (c Config) validateVoice() []error {
	var errs []error
	switch c.ASRProvider {
	case "":
	case "openai":
		if c.ASRBaseURL == "" && c.ASRAPIKey == "" {
			errs = append(errs, errors.New("asr-provider openai with no asr-base-url is OpenAI itself, which needs asr-api-key (or OPENAI_API_KEY); for a local server (speaches, LocalAI, whisper.cpp) set asr-base-url"))
		}
		errs = append(errs, checkBase("asr-base-url", c.ASRBaseURL, "http", "https")...)
	case "funasr":
		if c.ASRBaseURL == "" {
			errs = append(errs, fmt.Errorf("asr-provider funasr needs asr-base-url, the FunASR server's ws://host:10095"))
		}
		errs = append(errs, checkBase("asr-base-url", c.ASRBaseURL, "ws", "wss")...)
	case "dashscope":
		if c.ASRAPIKey == "" {
			errs = append(errs, fmt.Errorf("asr-provider dashscope needs asr-api-key (or DASHSCOPE_API_KEY)"))
		}
		errs = append(errs, checkBase("asr-base-url", c.ASRBaseURL, "ws", "wss")...)
	default:
		errs = append(errs, fmt.Errorf("asr-provider: %q is not openai, funasr or dashscope", c.ASRProvider))
	}
	switch c.TTSProvider {
	case "":
	case "openai":
		if c.TTSBaseURL == "" && c.TTSAPIKey == "" {
			errs = append(errs, errors.New("tts-provider openai with no tts-base-url is OpenAI itself, which needs tts-api-key (or OPENAI_API_KEY); for a local server (Kokoro-FastAPI, speaches, LocalAI) set tts-base-url"))
		}
		errs = append(errs, checkBase("tts-base-url", c.TTSBaseURL, "http", "https")...)
	case "dashscope":
		if c.TTSAPIKey == "" {
			errs = append(errs, fmt.Errorf("tts-provider dashscope needs tts-api-key (or DASHSCOPE_API_KEY)"))
		}
		errs = append(errs, checkBase("tts-base-url", c.TTSBaseURL, "ws", "wss")...)
	default:
		errs = append(errs, fmt.Errorf("tts-provider: %q is not openai or dashscope", c.TTSProvider))
	}
	if c.TTSSampleRate < 8000 || c.TTSSampleRate > 48000 {
		errs = append(errs, fmt.Errorf("tts-sample-rate: %d is outside 8000..48000", c.TTSSampleRate))
	}
	return errs
}

func checkBase(key, base string, schemes ...string) []error {
	if base == "" {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != schemes[0] && u.Scheme != schemes[1]) {
		return []error{fmt.Errorf("%s: %q is not a %s:// or %s:// URL", key, base, schemes[0], schemes[1])}
	}
	return nil
}

// resolveVoice fills the API keys of OpenAI providers left empty from
// OPENAI_API_KEY, when they talk to OpenAI itself.
func (c *Config) resolveVoice(getenv func(string) string) {
	key := getenv("OPENAI_API_KEY")
	if c.ASRProvider == "openai" && c.ASRAPIKey == "" && c.ASRBaseURL == "" {
		c.ASRAPIKey = key
	}
	if c.ASRProvider == "dashscope" && c.ASRAPIKey == "" {
		c.ASRAPIKey = getenv("DASHSCOPE_API_KEY")
	}
	if c.TTSProvider == "dashscope" && c.TTSAPIKey == "" {
		c.TTSAPIKey = getenv("DASHSCOPE_API_KEY")
	}
	if c.TTSProvider == "openai" && c.TTSAPIKey == "" && c.TTSBaseURL == "" {
		c.TTSAPIKey = key
	}
}
