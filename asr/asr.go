// Package asr holds the speech recognition providers of spoken
// conversations. Each turns an utterance of 16 kHz mono PCM into text, as
// a driver.Recognizer (the voice engine's). New makes the one a hub's
// settings name, from the table of providers below: OpenAI-compatible
// transcription (openai.go), FunASR (funasr.go) and DashScope
// (dashscope.go). A new provider is a file and a row of the table.
package asr

import (
	"net/http"

	"github.com/xiaozhi-hub/hub/internal/provider"
	"github.com/xiaozhi-hub/hub/voice/driver"
)

// Settings choose and configure a recognizer: the hub's asr-* settings,
// which the errors of Check name (asr-provider, asr-base-url, asr-api-key).
type Settings struct {
	Provider string // one of Providers(); "" for none
	BaseURL  string // the provider's address ("": its default)
	APIKey   string
	Model    string // "": the provider's default
	Language string // the language hint ("zh", "en"); "" lets the model decide
	// Client, if set, makes the provider's HTTP requests and WebSocket
	// handshakes (nil: the default client).
	Client *http.Client
}

var recognizers = provider.Table[Settings, driver.Recognizer]{
	Kind: "asr",
	Common: func(s Settings) provider.Common {
		return provider.Common{Provider: s.Provider, BaseURL: s.BaseURL, APIKey: s.APIKey, Model: s.Model}
	},
	Rows: []provider.Row[Settings, driver.Recognizer]{
		{
			Name: "openai", Schemes: [2]string{"http", "https"}, BaseURL: OpenAIBaseURL, Model: OpenAIModel,
			NeedsKey: true, AtDefault: true, Title: "OpenAI", KeyEnv: "OPENAI_API_KEY",
			Local: "speaches, LocalAI, whisper.cpp",
			New: func(s Settings) driver.Recognizer {
				return &OpenAI{BaseURL: s.BaseURL, APIKey: s.APIKey, Model: s.Model, Language: s.Language, Client: s.Client}
			},
		},
		{
			Name: "funasr", Schemes: [2]string{"ws", "wss"}, NeedsBaseURL: "the FunASR server's ws://host:10095",
			New: func(s Settings) driver.Recognizer { return &FunASR{URL: s.BaseURL, Client: s.Client} },
		},
		{
			Name: "dashscope", Schemes: [2]string{"ws", "wss"}, BaseURL: DashScopeURL, Model: DashScopeModel,
			NeedsKey: true, KeyEnv: "DASHSCOPE_API_KEY",
			New: func(s Settings) driver.Recognizer {
				return &DashScope{URL: s.BaseURL, APIKey: s.APIKey, Model: s.Model, Language: s.Language, Client: s.Client}
			},
		},
	},
}

// Providers are the names Settings.Provider may take.
func Providers() []string { return recognizers.Names() }

// Check reports what is wrong with the settings, in the words of the
// settings; nothing for Provider "". An unknown provider is refused with
// the known ones.
func Check(s Settings) []error { return recognizers.Check(s) }

// New returns the recognizer the settings name, once Check finds nothing
// wrong with them; nil (no recognition) for Provider "".
func New(s Settings) (driver.Recognizer, error) { return recognizers.New(s) }

// KeyEnv is the environment variable an empty APIKey is read from ("" for
// none): OPENAI_API_KEY for OpenAI itself, DASHSCOPE_API_KEY for DashScope.
func KeyEnv(s Settings) string { return recognizers.KeyEnv(s) }

// Summary names the provider, the model and the address it will really
// use, defaults included ("openai whisper-1 at https://api.openai.com/v1"),
// for the startup log.
func Summary(s Settings) string { return recognizers.Summary(s) }
