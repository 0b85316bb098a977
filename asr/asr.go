// Package asr holds the speech recognition providers of spoken
// conversations. Each turns an utterance of 16 kHz mono PCM into text, as
// a driver.Recognizer (the voice engine's). New makes the one a hub's
// settings name, from the table of providers below: OpenAI-compatible
// transcription (openai.go), FunASR (funasr.go) and DashScope
// (dashscope.go). A new provider is a file and a row of the table.
package asr

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

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
	// Audio is the upload's format of provider openai (asr-audio):
	// AudioWAV ("" too) or AudioOggOpus; the other providers take PCM.
	Audio string
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
				return &OpenAI{BaseURL: s.BaseURL, APIKey: s.APIKey, Model: s.Model, Language: s.Language, Audio: s.Audio, Client: s.Client}
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

// The upload formats of provider openai (Settings.Audio, asr-audio).
const (
	// AudioWAV is 16-bit PCM in a WAV file, which every
	// OpenAI-compatible server takes (the default).
	AudioWAV = "wav"
	// AudioOggOpus is the device's own Opus packets in an Ogg file
	// (RFC 7845), which OpenAI, Groq, speaches and LocalAI take, and
	// whisper.cpp's server only when built with ffmpeg: the hub does not
	// decode the device's audio in manual listen mode.
	AudioOggOpus = "ogg-opus"
)

// Audios are the values Settings.Audio may take ("" is AudioWAV).
func Audios() []string { return []string{AudioWAV, AudioOggOpus} }

// Check reports what is wrong with the settings, in the words of the
// settings; nothing for Provider "". An unknown provider is refused with
// the known ones, an unknown asr-audio with the known values (whatever
// the provider: only openai uses it, but it is a setting of the hub's).
func Check(s Settings) []error {
	errs := recognizers.Check(s)
	if err := checkAudio(s.Audio); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func checkAudio(a string) error {
	if a != "" && !slices.Contains(Audios(), a) {
		return fmt.Errorf("asr-audio: %q is not one of %s", a, strings.Join(Audios(), ", "))
	}
	return nil
}

// New returns the recognizer the settings name, once Check finds nothing
// wrong with them; nil (no recognition) for Provider "".
func New(s Settings) (driver.Recognizer, error) {
	if err := checkAudio(s.Audio); err != nil {
		return nil, err
	}
	return recognizers.New(s)
}

// KeyEnv is the environment variable an empty APIKey is read from ("" for
// none): OPENAI_API_KEY for OpenAI itself, DASHSCOPE_API_KEY for DashScope.
func KeyEnv(s Settings) string { return recognizers.KeyEnv(s) }

// Summary names the provider, the model and the address it will really
// use, defaults included ("openai whisper-1 at https://api.openai.com/v1"),
// for the startup log.
func Summary(s Settings) string { return recognizers.Summary(s) }
