package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	"github.com/xiaozhi-hub/hub/internal/httpx"
)

// Providers.
const (
	ProviderAnthropic = "anthropic"
	ProviderOpenAI    = "openai" // any OpenAI-compatible chat completions API
)

// Defaults.
const (
	DefaultAnthropicURL   = "https://api.anthropic.com"
	DefaultOpenAIURL      = "https://api.openai.com/v1"
	DefaultAnthropicModel = "claude-sonnet-4-5"
	DefaultOpenAIModel    = "gpt-4.1-mini"
)

// DefaultSessionTTL is how long a conversation is kept without use.
const DefaultSessionTTL = time.Hour

// Config configures the agent. Fields left empty are filled from the
// environment by FromEnv, then by defaults. The lead's config file fills the
// yaml-tagged fields; the rest are for programs and tests.
type Config struct {
	// Provider is "anthropic" or "openai" (OpenAI-compatible: OpenAI,
	// DeepSeek, Qwen, Ollama, …). Empty: chosen by which API key is set.
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
	APIKey   string `yaml:"api-key"`
	BaseURL  string `yaml:"base-url"`

	MaxTokens      int           `yaml:"max-tokens"`      // per model answer (Anthropic); default 2048
	MaxSteps       int           `yaml:"max-steps"`       // model calls per run; default 8
	Timeout        time.Duration `yaml:"timeout"`         // whole run; default 2 min
	RequestTimeout time.Duration `yaml:"request-timeout"` // one model call; default 60 s
	MaxResultBytes int           `yaml:"max-result-bytes"`
	MaxHistory     int           `yaml:"max-history"`  // messages kept per session; default 40
	MaxSessions    int           `yaml:"max-sessions"` // default 1000, least recently used dropped
	SessionTTL     time.Duration `yaml:"session-ttl"`  // default DefaultSessionTTL
	RunLog         int           `yaml:"run-log"`      // runs kept in memory; default 200
	// DirectLimit: with at most this many online devices the model gets
	// every device tool; with more, search_devices and call_device_tool.
	DirectLimit   int  `yaml:"direct-limit"`
	AllowUserOnly bool `yaml:"allow-user-only"`
	// NoStream asks for whole responses instead of streams.
	NoStream bool `yaml:"no-stream"`

	// Services, if set, offers the services' tools beside the devices'
	// (catalog.Options.Services).
	Services catalog.Services `yaml:"-"`

	HTTPClient *http.Client `yaml:"-"`
	Logger     *slog.Logger `yaml:"-"`
	// OnRun, if set, receives the record of every finished run (metrics).
	OnRun func(RunRecord)  `yaml:"-"`
	Now   func() time.Time `yaml:"-"`
	// AuthToken is sent as a Bearer token to Anthropic-compatible APIs when
	// APIKey is empty (ANTHROPIC_AUTH_TOKEN).
	AuthToken string `yaml:"-"`
	// Shared, if set, keeps every conversation where the other hub nodes
	// of a cluster find it too (see SharedHistory).
	Shared SharedHistory `yaml:"-"`
}

// SharedHistory keeps conversations beyond this process (package cluster
// keeps them in NATS for every node of a cluster): a person whose requests
// reach another node, or a device that reconnects to another node, goes on
// with the same conversation. The agent still keeps its own copy, used
// when the shared one cannot be read.
type SharedHistory interface {
	// LoadHistory returns what SaveHistory last stored for session (nil
	// when nothing is, or it has expired).
	LoadHistory(ctx context.Context, session string) ([]byte, error)
	SaveHistory(ctx context.Context, session string, data []byte) error
}

// FromEnv fills the fields c leaves empty from the usual environment
// variables: XZ_AGENT_PROVIDER, XZ_AGENT_MODEL, ANTHROPIC_API_KEY,
// ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, OPENAI_API_KEY, OPENAI_BASE_URL.
// Values set in c (from the config file) win over the environment.
func (c Config) FromEnv(getenv func(string) string) Config {
	if c.Provider == "" {
		c.Provider = strings.ToLower(strings.TrimSpace(getenv("XZ_AGENT_PROVIDER")))
	}
	if c.Provider == "" {
		switch {
		case getenv("ANTHROPIC_API_KEY") != "" || getenv("ANTHROPIC_AUTH_TOKEN") != "":
			c.Provider = ProviderAnthropic
		case getenv("OPENAI_API_KEY") != "" || getenv("OPENAI_BASE_URL") != "":
			c.Provider = ProviderOpenAI
		}
	}
	if c.Model == "" {
		c.Model = getenv("XZ_AGENT_MODEL")
	}
	switch c.Provider {
	case ProviderAnthropic:
		if c.APIKey == "" {
			c.APIKey = getenv("ANTHROPIC_API_KEY")
		}
		if c.APIKey == "" && c.AuthToken == "" {
			c.AuthToken = getenv("ANTHROPIC_AUTH_TOKEN")
		}
		if c.BaseURL == "" {
			c.BaseURL = getenv("ANTHROPIC_BASE_URL")
		}
	case ProviderOpenAI:
		if c.APIKey == "" {
			c.APIKey = getenv("OPENAI_API_KEY")
		}
		if c.BaseURL == "" {
			c.BaseURL = getenv("OPENAI_BASE_URL")
		}
	}
	return c
}

// Help tells a person how to configure a model.
const Help = `No LLM is configured for the agent. Set one of:
  ANTHROPIC_API_KEY=…                      Claude (optional: ANTHROPIC_BASE_URL, XZ_AGENT_MODEL; default model ` + DefaultAnthropicModel + `)
  OPENAI_API_KEY=…                         OpenAI (optional: XZ_AGENT_MODEL; default model ` + DefaultOpenAIModel + `)
  OPENAI_API_KEY=… OPENAI_BASE_URL=…  XZ_AGENT_MODEL=…
                                           any OpenAI-compatible API: DeepSeek https://api.deepseek.com/v1,
                                           Qwen https://dashscope.aliyuncs.com/compatible-mode/v1, …
  OPENAI_BASE_URL=http://localhost:11434/v1 XZ_AGENT_MODEL=qwen2.5
                                           Ollama (no key)
and XZ_AGENT_PROVIDER=anthropic|openai to choose when both keys are set;
or the agent section of the hub's config file (provider, model, api-key, base-url). Then restart the hub.`

// withDefaults completes c and builds its provider, or says what is missing.
func (c Config) withDefaults() (Config, Provider, error) {
	if c.MaxTokens <= 0 {
		c.MaxTokens = 2048
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = 8
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 60 * time.Second
	}
	if c.MaxResultBytes <= 0 {
		c.MaxResultBytes = 8 << 10
	}
	if c.MaxHistory <= 0 {
		c.MaxHistory = 40
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = 1000
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.RunLog <= 0 {
		c.RunLog = 200
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.HTTPClient == nil {
		c.HTTPClient = httpx.Providers
	}
	switch c.Provider {
	case "":
		return c, nil, hub.Errorf(hub.EINVALID, "%s", Help)
	case ProviderAnthropic:
		custom := c.BaseURL != ""
		if !custom {
			c.BaseURL = DefaultAnthropicURL
		}
		if c.APIKey == "" && c.AuthToken == "" && !custom {
			return c, nil, hub.Errorf(hub.EINVALID, "the anthropic provider needs ANTHROPIC_API_KEY (or api-key in the config file)\n\n%s", Help)
		}
		if c.Model == "" {
			c.Model = DefaultAnthropicModel
		}
		return c, &Anthropic{BaseURL: c.BaseURL, APIKey: c.APIKey, AuthToken: c.AuthToken, Version: "2023-06-01", Client: c.HTTPClient}, nil
	case ProviderOpenAI:
		custom := c.BaseURL != "" && strings.TrimRight(c.BaseURL, "/") != DefaultOpenAIURL
		if c.BaseURL == "" {
			c.BaseURL = DefaultOpenAIURL
		}
		if c.APIKey == "" && !custom {
			return c, nil, hub.Errorf(hub.EINVALID, "the openai provider needs OPENAI_API_KEY, or OPENAI_BASE_URL for a server without keys such as Ollama\n\n%s", Help)
		}
		if c.Model == "" {
			if custom {
				return c, nil, hub.Errorf(hub.EINVALID, "set XZ_AGENT_MODEL (or model in the config file) to a model that %s serves", c.BaseURL)
			}
			c.Model = DefaultOpenAIModel
		}
		return c, &OpenAI{BaseURL: c.BaseURL, APIKey: c.APIKey, Client: c.HTTPClient}, nil
	}
	return c, nil, hub.Errorf(hub.EINVALID, "agent provider %q is not anthropic or openai (set XZ_AGENT_PROVIDER)", c.Provider)
}

// String describes the configuration without secrets.
func (c Config) String() string {
	return fmt.Sprintf("provider=%s model=%s base=%s", c.Provider, c.Model, c.BaseURL)
}
