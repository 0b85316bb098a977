package tts

import (
	"strings"
	"testing"
)

// A provider name the table does not know is refused with every name it
// knows, in the words of the setting; so is a sample rate out of range.
func TestUnknownProviderIsRefusedWithTheKnownOnes(t *testing.T) {
	s, err := New(Settings{Provider: "kokoro", SampleRate: 24000})
	if err == nil || s != nil {
		t.Fatalf("New(kokoro) = %v, %v", s, err)
	}
	if want := `tts-provider: "kokoro" is not openai or dashscope`; err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	for _, name := range Providers() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%q is not named in %s", name, err)
		}
	}
	if _, err := New(Settings{SampleRate: 96000}); err == nil || !strings.Contains(err.Error(), "tts-sample-rate: 96000 is outside 8000..48000") {
		t.Errorf("sample rate: %v", err)
	}
}

// Each provider's settings are checked where it is written; a good choice
// is made into a synthesizer of the provider's type, none into nil.
func TestProvidersByName(t *testing.T) {
	for _, c := range []struct {
		s    Settings
		want string // a piece of the error; "" for none
	}{
		{Settings{Provider: "openai", SampleRate: 24000}, "tts-provider openai with no tts-base-url is OpenAI itself, which needs tts-api-key"},
		{Settings{Provider: "dashscope", SampleRate: 24000}, "tts-provider dashscope needs tts-api-key (or DASHSCOPE_API_KEY)"},
		{Settings{Provider: "dashscope", APIKey: "sk", BaseURL: "https://x", SampleRate: 24000}, `tts-base-url: "https://x" is not a ws:// or wss:// URL`},
		{Settings{Provider: "openai", BaseURL: "http://localhost:8880/v1", SampleRate: 24000}, ""},
		{Settings{Provider: "dashscope", APIKey: "sk", SampleRate: 24000}, ""},
		{Settings{SampleRate: 24000}, ""},
	} {
		s, err := New(c.s)
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) || s != nil {
				t.Errorf("%+v: %v, want an error with %q", c.s, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", c.s, err)
			continue
		}
		var ok bool
		switch c.s.Provider {
		case "openai":
			_, ok = s.(*OpenAI)
		case "dashscope":
			_, ok = s.(*DashScope)
		case "":
			ok = s == nil
		}
		if !ok {
			t.Errorf("%+v made %T", c.s, s)
		}
	}
	if got, want := Summary(Settings{Provider: "dashscope"}), "dashscope cosyvoice-v2 at wss://dashscope.aliyuncs.com/api-ws/v1/inference"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if KeyEnv(Settings{Provider: "openai"}) != "OPENAI_API_KEY" || KeyEnv(Settings{Provider: "openai", BaseURL: "http://x"}) != "" {
		t.Error("OPENAI_API_KEY is for OpenAI itself only")
	}
}
