package provider

import (
	"errors"
	"strings"
	"testing"
)

func TestUnknownListsTheKnownNames(t *testing.T) {
	for known, want := range map[string]string{
		"a":     `x-provider: "z" is not a`,
		"a b":   `x-provider: "z" is not a or b`,
		"a b c": `x-provider: "z" is not a, b or c`,
	} {
		if got := Unknown("x-provider", "z", strings.Fields(known)).Error(); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	ws := [2]string{"ws", "wss"}
	for base, ok := range map[string]bool{"": true, "ws://h:1": true, "wss://h/p": true, "http://h": false, "ws://": false, "h:1": false} {
		if err := CheckURL("k", base, ws); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v", base, err)
		}
	}
}

// A provider that runs in the hub (no address; a model file instead)
// plugs in as a row with a Check of its own.
func TestLocalProviderRow(t *testing.T) {
	type settings struct{ Provider, BaseURL, Model string }
	table := Table[settings, string]{
		Kind:   "asr",
		Common: func(s settings) Common { return Common{Provider: s.Provider, BaseURL: s.BaseURL, Model: s.Model} },
		Rows: []Row[settings, string]{{
			Name: "local",
			Check: func(s settings) error {
				if s.Model == "" {
					return errors.New("asr-provider local needs asr-model, a model file")
				}
				return nil
			},
			New: func(s settings) string { return "local " + s.Model },
		}},
	}
	if got, err := table.New(settings{Provider: "local", Model: "ggml-small.bin"}); err != nil || got != "local ggml-small.bin" {
		t.Fatalf("New = %q, %v", got, err)
	}
	if _, err := table.New(settings{Provider: "local"}); err == nil || err.Error() != "asr-provider local needs asr-model, a model file" {
		t.Errorf("no model: %v", err)
	}
	if _, err := table.New(settings{Provider: "local", Model: "m", BaseURL: "http://x"}); err == nil || err.Error() != "asr-base-url: asr-provider local takes no address" {
		t.Errorf("an address: %v", err)
	}
	if got, err := table.New(settings{}); got != "" || err != nil {
		t.Errorf("none: %q, %v", got, err)
	}
}
