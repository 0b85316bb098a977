// Package provider holds what the speech provider packages (asr, tts)
// share: the table of a package's providers by name (Table: settings
// checked in the words of the settings, an unknown name refused with the
// known ones, defaults, the startup log's line), and the reading of
// OpenAI-style error bodies.
package provider

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/xiaozhi-hub/hub"
)

// Unknown is the error for a provider name that is none of known, in the
// words of the setting (key, e.g. "asr-provider"):
// `asr-provider: "whisper" is not openai, funasr or dashscope`.
func Unknown(key, name string, known []string) error {
	list := known[len(known)-1]
	if len(known) > 1 {
		list = strings.Join(known[:len(known)-1], ", ") + " or " + list
	}
	return fmt.Errorf("%s: %q is not %s", key, name, list)
}

// CheckURL checks a base URL setting (key) against the two schemes a
// provider speaks (http and https, or ws and wss); "" is left to the
// provider's default.
func CheckURL(key, base string, schemes [2]string) error {
	if base == "" {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != schemes[0] && u.Scheme != schemes[1]) {
		return fmt.Errorf("%s: %q is not a %s:// or %s:// URL", key, base, schemes[0], schemes[1])
	}
	return nil
}

// Host is the host of endpoint, to name a provider in errors.
func Host(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		return u.Host
	}
	return "the provider"
}

// Message is the error message of an OpenAI-style error body
// ({"error":{"message":…}}), or the body itself, cut short.
func Message(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return hub.Truncate([]byte(e.Error.Message), 200)
	}
	return hub.Truncate(body, 200)
}
