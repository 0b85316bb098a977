package server

import (
	"fmt"
	"net/url"
)

// validateVoice checks the speech provider settings.
func (c Config) validateVoice() []error {
	var errs []error
	for _, p := range []struct{ key, provider, base string }{
		{"asr", c.ASRProvider, c.ASRBaseURL}, {"tts", c.TTSProvider, c.TTSBaseURL},
	} {
		switch p.provider {
		case "", "openai":
		default:
			errs = append(errs, fmt.Errorf("%s-provider: %q is not supported; use openai (any OpenAI-compatible API, local ones included)", p.key, p.provider))
		}
		if p.base != "" {
			if u, err := url.Parse(p.base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("%s-base-url: %q is not an http(s) URL such as http://localhost:8000/v1", p.key, p.base))
			}
		}
	}
	if c.TTSSampleRate < 8000 || c.TTSSampleRate > 48000 {
		errs = append(errs, fmt.Errorf("tts-sample-rate: %d is outside 8000..48000", c.TTSSampleRate))
	}
	return errs
}

// resolveVoice fills the API keys of OpenAI providers left empty from
// OPENAI_API_KEY, when they talk to OpenAI itself.
func (c *Config) resolveVoice(getenv func(string) string) {
	key := getenv("OPENAI_API_KEY")
	if c.ASRProvider == "openai" && c.ASRAPIKey == "" && c.ASRBaseURL == "" {
		c.ASRAPIKey = key
	}
	if c.TTSProvider == "openai" && c.TTSAPIKey == "" && c.TTSBaseURL == "" {
		c.TTSAPIKey = key
	}
}
