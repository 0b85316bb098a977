package asr

import (
	"strings"
	"testing"
)

// A provider name the table does not know is refused, by New and Check
// alike, with every name it knows, in the words of the setting.
func TestUnknownProviderIsRefusedWithTheKnownOnes(t *testing.T) {
	r, err := New(Settings{Provider: "whisper"})
	if err == nil || r != nil {
		t.Fatalf("New(whisper) = %v, %v", r, err)
	}
	if want := `asr-provider: "whisper" is not openai, funasr or dashscope`; err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	for _, name := range Providers() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%q is not named in %s", name, err)
		}
	}
}

// Each provider's settings are checked where it is written; a good choice
// is made into a recognizer of the provider's type, none into nil.
func TestProvidersByName(t *testing.T) {
	for _, c := range []struct {
		s    Settings
		want string // a piece of the error; "" for none
	}{
		{Settings{Provider: "openai"}, "asr-provider openai with no asr-base-url is OpenAI itself, which needs asr-api-key"},
		{Settings{Provider: "openai", BaseURL: "ws://x"}, `asr-base-url: "ws://x" is not a http:// or https:// URL`},
		{Settings{Provider: "funasr"}, "asr-provider funasr needs asr-base-url"},
		{Settings{Provider: "funasr", BaseURL: "http://x:10095"}, "is not a ws:// or wss:// URL"},
		{Settings{Provider: "dashscope"}, "asr-provider dashscope needs asr-api-key (or DASHSCOPE_API_KEY)"},
		{Settings{Provider: "openai", BaseURL: "http://localhost:8000/v1"}, ""},
		{Settings{Provider: "funasr", BaseURL: "ws://localhost:10095"}, ""},
		{Settings{Provider: "dashscope", APIKey: "sk"}, ""},
		{Settings{Provider: "openai", BaseURL: "http://localhost:8000/v1", Audio: "opus"}, `asr-audio: "opus" is not one of wav, ogg-opus`},
		{Settings{Provider: "openai", BaseURL: "http://localhost:8000/v1", Audio: "ogg-opus"}, ""},
		{Settings{}, ""},
	} {
		r, err := New(c.s)
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) || r != nil {
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
			_, ok = r.(*OpenAI)
		case "funasr":
			_, ok = r.(*FunASR)
		case "dashscope":
			_, ok = r.(*DashScope)
		case "":
			ok = r == nil
		}
		if !ok {
			t.Errorf("%+v made %T", c.s, r)
		}
	}
}

// The key's environment variable, and the startup line with the defaults.
func TestKeyEnvAndSummary(t *testing.T) {
	for s, want := range map[Settings]string{
		{Provider: "openai"}:                       "OPENAI_API_KEY",
		{Provider: "openai", BaseURL: "http://x"}:  "", // not OpenAI itself
		{Provider: "dashscope", BaseURL: "ws://x"}: "DASHSCOPE_API_KEY",
		{Provider: "funasr"}:                       "",
		{}:                                         "",
	} {
		if got := KeyEnv(s); got != want {
			t.Errorf("KeyEnv(%+v) = %q, want %q", s, got, want)
		}
	}
	for s, want := range map[Settings]string{
		{Provider: "openai"}: "openai whisper-1 at https://api.openai.com/v1",
		{Provider: "dashscope", Model: "fun-asr-realtime"}: "dashscope fun-asr-realtime at wss://dashscope.aliyuncs.com/api-ws/v1/inference",
		{Provider: "funasr", BaseURL: "ws://h:10095"}:      "funasr at ws://h:10095",
	} {
		if got := Summary(s); got != want {
			t.Errorf("Summary(%+v) = %q, want %q", s, got, want)
		}
	}
}
