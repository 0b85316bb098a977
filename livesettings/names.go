package livesettings

import (
	"fmt"
	"slices"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/internal/settings"
)

// spec is one live setting: its name as in the config file, whether it is
// a key (stored, never shown), and how it reads and writes a Config.
type spec struct {
	name   string
	secret bool
	get    func(*config.Config) string
	set    func(*config.Config, string) error
}

// text is a string setting.
func text(name string, secret bool, field func(*config.Config) *string) spec {
	return spec{name: name, secret: secret,
		get: func(c *config.Config) string { return *field(c) },
		set: func(c *config.Config, v string) error { *field(c) = v; return nil },
	}
}

// specs are the settings a person may change while the hub runs: the
// agent's model, recognition, synthesis and the conversation timeout. The
// others stay in the file, the environment and the flags: they shape what
// the hub listens on and stores (listen, data-dir, MQTT, cluster, limits),
// or they are read once at start by parts that are not rebuilt
// (tts-sample-rate goes with the synthesis server's fixed output).
var specs = []spec{
	text("agent-provider", false, func(c *config.Config) *string { return &c.AgentProvider }),
	text("agent-model", false, func(c *config.Config) *string { return &c.AgentModel }),
	text("agent-base-url", false, func(c *config.Config) *string { return &c.AgentBaseURL }),
	text("agent-api-key", true, func(c *config.Config) *string { return &c.AgentAPIKey }),
	text("asr-provider", false, func(c *config.Config) *string { return &c.ASRProvider }),
	text("asr-model", false, func(c *config.Config) *string { return &c.ASRModel }),
	text("asr-language", false, func(c *config.Config) *string { return &c.ASRLanguage }),
	text("asr-audio", false, func(c *config.Config) *string { return &c.ASRAudio }),
	text("asr-base-url", false, func(c *config.Config) *string { return &c.ASRBaseURL }),
	text("asr-api-key", true, func(c *config.Config) *string { return &c.ASRAPIKey }),
	text("tts-provider", false, func(c *config.Config) *string { return &c.TTSProvider }),
	text("tts-model", false, func(c *config.Config) *string { return &c.TTSModel }),
	text("tts-voice", false, func(c *config.Config) *string { return &c.TTSVoice }),
	text("tts-base-url", false, func(c *config.Config) *string { return &c.TTSBaseURL }),
	text("tts-api-key", true, func(c *config.Config) *string { return &c.TTSAPIKey }),
	{
		name: "conversation-timeout",
		get:  func(c *config.Config) string { return c.ConversationTimeout.String() },
		set: func(c *config.Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return hub.Errorf(hub.EINVALID, "conversation-timeout: %q is not a duration such as 90s or 2m", v)
			}
			c.ConversationTimeout = d
			return nil
		},
	},
}

// maxValue bounds a setting's value (a key, a URL, a model name).
const maxValue = 2048

// Names are the settings GET and PUT /api/settings know, in their order.
func Names() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

// lookup returns the spec of name, or an EINVALID error naming it and the
// closest valid name, as the config file's errors do.
func lookup(name string) (spec, error) {
	if i := slices.IndexFunc(specs, func(s spec) bool { return s.name == name }); i >= 0 {
		return specs[i], nil
	}
	msg := fmt.Sprintf("unknown setting %q", hub.Truncate([]byte(name), 64))
	if c := settings.Closest(name, Names()); c != "" {
		return spec{}, hub.Errorf(hub.EINVALID, "%s; did you mean %s?", msg, c)
	}
	return spec{}, hub.Errorf(hub.EINVALID, "%s; the settings are %v", msg, Names())
}
