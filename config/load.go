package config

import (
	"fmt"
	"io"
	"strings"

	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/internal/settings"
)

// settingsOptions describe the hub's settings to package settings.
var settingsOptions = settings.Options{
	Program: "xiaozhi-hub", EnvPrefix: "XZ_HUB_",
	Sections: map[string]settings.Section{"agent": {
		Keys:    []string{"provider", "model", "api-key", "base-url", "auth-token"},
		Example: "agent: {provider: openai, model: qwen2.5}",
	}},
}

// Load builds the configuration from defaults, the config file named by
// --config or XZ_HUB_CONFIG, the environment and the flags in args.
func Load(args []string, getenv func(string) string) (Config, error) {
	cfg := Default()
	o := settingsOptions
	o.Decode = func(data []byte) error { return decodeFile(data, &cfg) }
	// --demo without a value means 4 devices.
	if err := settings.Load(&cfg, expandDemo(args), getenv, o); err != nil {
		return cfg, err
	}
	cfg.resolveAgent(getenv)
	cfg.resolveVoice(getenv)
	return cfg, cfg.Validate()
}

// Print writes every setting as --help shows it: the flag, its meaning,
// its default and its environment variable.
func Print(w io.Writer) { settings.Print(w, Default(), settingsOptions) }

// fileConfig is the config file: every setting by its key, and the agent
// settings also as a section, as the agent's help text describes them:
//
//	agent:
//	  provider: openai
//	  model: qwen2.5
//	  base-url: http://localhost:11434/v1
type fileConfig struct {
	Config `yaml:",inline"`
	Agent  struct {
		Provider  string `yaml:"provider"`
		Model     string `yaml:"model"`
		APIKey    string `yaml:"api-key"`
		BaseURL   string `yaml:"base-url"`
		AuthToken string `yaml:"auth-token"`
	} `yaml:"agent"`
}

// decodeFile reads a YAML config file over cfg. Unknown keys are errors; a
// setting given both as agent-x and in the agent section must agree.
func decodeFile(data []byte, cfg *Config) error {
	f := fileConfig{Config: *cfg}
	if err := settings.DecodeYAML(data, &f); err != nil {
		return err
	}
	for _, s := range []struct {
		key     string
		flat    *string
		section string
	}{
		{"provider", &f.AgentProvider, f.Agent.Provider},
		{"model", &f.AgentModel, f.Agent.Model},
		{"api-key", &f.AgentAPIKey, f.Agent.APIKey},
		{"base-url", &f.AgentBaseURL, f.Agent.BaseURL},
		{"auth-token", &f.AgentAuthToken, f.Agent.AuthToken},
	} {
		if s.section == "" {
			continue
		}
		if *s.flat != "" && *s.flat != s.section {
			return fmt.Errorf("agent-%s and agent: %s are both set and differ; keep one", s.key, s.key)
		}
		*s.flat = s.section
	}
	*cfg = f.Config
	return nil
}

// resolveAgent fills the agent settings left empty from the environment
// variables LLM tools share (ANTHROPIC_*, OPENAI_*, XZ_AGENT_*), so that the
// hub itself depends only on its Config.
func (c *Config) resolveAgent(getenv func(string) string) {
	a := agent.Config{Provider: c.AgentProvider, Model: c.AgentModel, APIKey: c.AgentAPIKey, BaseURL: c.AgentBaseURL, AuthToken: c.AgentAuthToken}.FromEnv(getenv)
	c.AgentProvider, c.AgentModel, c.AgentAPIKey, c.AgentBaseURL, c.AgentAuthToken = a.Provider, a.Model, a.APIKey, a.BaseURL, a.AuthToken
}

func expandDemo(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if (a == "--demo" || a == "-demo") && (i+1 == len(args) || strings.HasPrefix(args[i+1], "-")) {
			a = "--demo=4"
		}
		out = append(out, a)
	}
	return out
}
