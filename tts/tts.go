// Package tts holds the speech synthesis providers of spoken
// conversations. Each streams 16-bit mono PCM as it is synthesised, so
// that playback starts before a sentence is complete, as a
// driver.Synthesizer (the voice engine's). New makes the one a hub's
// settings name, from the table of providers below: OpenAI-compatible
// speech (openai.go) and DashScope's CosyVoice (dashscope.go). A new
// provider is a file and a row of the table.
package tts

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/xiaozhi-hub/hub/internal/provider"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// Settings choose and configure a synthesizer: the hub's tts-* settings,
// which the errors of Check name (tts-provider, tts-base-url, tts-api-key,
// tts-sample-rate).
type Settings struct {
	Provider   string // one of Providers(); "" for none
	BaseURL    string // the provider's address ("": its default)
	APIKey     string
	Model      string // "": the provider's default
	Voice      string // "": the provider's default
	SampleRate int    // of the PCM the provider sends, 8000..48000 (OpenAI: 24000)
	// Client, if set, makes the provider's HTTP requests and WebSocket
	// handshakes (nil: the default client).
	Client *http.Client
}

var synthesizers = provider.Table[Settings, driver.Synthesizer]{
	Kind: "tts",
	Common: func(s Settings) provider.Common {
		return provider.Common{Provider: s.Provider, BaseURL: s.BaseURL, APIKey: s.APIKey, Model: s.Model}
	},
	Rows: []provider.Row[Settings, driver.Synthesizer]{
		{
			Name: "openai", Schemes: [2]string{"http", "https"}, BaseURL: OpenAIBaseURL, Model: OpenAIModel,
			NeedsKey: true, AtDefault: true, Title: "OpenAI", KeyEnv: "OPENAI_API_KEY",
			Local: "Kokoro-FastAPI, speaches, LocalAI",
			New: func(s Settings) driver.Synthesizer {
				return &OpenAI{BaseURL: s.BaseURL, APIKey: s.APIKey, Model: s.Model, Voice: s.Voice, SampleRate: s.SampleRate, Client: s.Client}
			},
		},
		{
			Name: "dashscope", Schemes: [2]string{"ws", "wss"}, BaseURL: DashScopeURL, Model: DashScopeModel,
			NeedsKey: true, KeyEnv: "DASHSCOPE_API_KEY",
			New: func(s Settings) driver.Synthesizer {
				return &DashScope{URL: s.BaseURL, APIKey: s.APIKey, Model: s.Model, Voice: s.Voice, SampleRate: s.SampleRate, Client: s.Client}
			},
		},
	},
}

// Providers are the names Settings.Provider may take.
func Providers() []string { return synthesizers.Names() }

// Check reports what is wrong with the settings, in the words of the
// settings: the provider's (nothing for Provider ""; an unknown provider
// is refused with the known ones) and the sample rate.
func Check(s Settings) []error {
	errs := synthesizers.Check(s)
	if s.SampleRate < 8000 || s.SampleRate > 48000 {
		errs = append(errs, fmt.Errorf("tts-sample-rate: %d is outside 8000..48000", s.SampleRate))
	}
	return errs
}

// New returns the synthesizer the settings name, once Check finds nothing
// wrong with them; nil (no synthesis) for Provider "".
func New(s Settings) (driver.Synthesizer, error) {
	if err := errors.Join(Check(s)...); err != nil {
		return nil, err
	}
	return synthesizers.New(s)
}

// KeyEnv is the environment variable an empty APIKey is read from ("" for
// none): OPENAI_API_KEY for OpenAI itself, DASHSCOPE_API_KEY for DashScope.
func KeyEnv(s Settings) string { return synthesizers.KeyEnv(s) }

// Summary names the provider, the model and the address it will really
// use, defaults included ("dashscope cosyvoice-v2 at wss://…"), for the
// startup log.
func Summary(s Settings) string { return synthesizers.Summary(s) }
