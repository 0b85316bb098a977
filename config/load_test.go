package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/config"
)

func TestConfigLayers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hub.yaml")
	os.WriteFile(file, []byte("listen: 127.0.0.1:9000\ncall-timeout: 45s\ndevice-auth: token\ndevice-tokens: [a, b]\n"), 0o600)
	env := map[string]string{"XZ_HUB_CONFIG": file, "XZ_HUB_LISTEN": "127.0.0.1:9100", "XZ_HUB_MAX_CALLS": "50"}
	cfg, err := config.Load([]string{"--listen", "127.0.0.1:9200"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9200" { // flag beats env beats file
		t.Errorf("listen = %s", cfg.Listen)
	}
	if cfg.CallTimeout != 45*time.Second || cfg.MaxCalls != 50 || cfg.DeviceAuth != "token" || len(cfg.DeviceTokens) != 2 {
		t.Errorf("cfg = %+v", cfg)
	}
	if cfg, _ := config.Load([]string{"--demo"}, func(string) string { return "" }); cfg.Demo != 4 {
		t.Errorf("--demo alone = %d devices, want 4", cfg.Demo)
	}
}

func TestConfigErrorsNameTheSetting(t *testing.T) {
	noEnv := func(string) string { return "" }
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("lisen: :8000\n"), 0o600)
	providerTypo := filepath.Join(t.TempDir(), "typo.yaml")
	os.WriteFile(providerTypo, []byte("agent:\n  provider: anthropc\n  api-key: sk-x\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--call-timeout", "soon"}, "call-timeout"},
		{[]string{"--device-auth", "maybe"}, "device-auth"},
		{[]string{"--ws-protocol-version", "4"}, "ws-protocol-version"},
		{[]string{"--public-url", "192.168.1.10:8000"}, "public-url"},
		{[]string{"--activation-expiry", "1s"}, "activation-expiry"},
		{[]string{"--config", bad}, "lisen"},
		{[]string{"--demo=-3"}, "demo"},
		{[]string{"stray"}, "stray"},
		// Misspelt values are refused with the accepted ones, not started on.
		{[]string{"--agent-provider", "anthropc", "--agent-api-key", "sk-x"}, "agent-provider: \"anthropc\" is not one of anthropic, openai"},
		{[]string{"--config", providerTypo}, "agent-provider: \"anthropc\""},
		{[]string{"--log-level", "verbose"}, "log-level: \"verbose\" is not one of debug, info, warn, error"},
		{[]string{"--asr-provider", "openai"}, "asr-provider openai with no asr-base-url is OpenAI itself, which needs asr-api-key"},
		{[]string{"--tts-provider", "openai"}, "tts-provider openai with no tts-base-url is OpenAI itself, which needs tts-api-key"},
		{[]string{"--asr-provider", "whisper"}, "asr-provider: \"whisper\" is not openai, funasr or dashscope"},
		{[]string{"--asr-audio", "mp3"}, "asr-audio: \"mp3\" is not one of wav, ogg-opus"},
		{[]string{"--tts-provider", "kokoro"}, "tts-provider: \"kokoro\" is not openai or dashscope"},
		{[]string{"--asr-provider", "funasr", "--asr-base-url", "http://asr:10095"}, "asr-base-url: \"http://asr:10095\" is not a ws:// or wss:// URL"},
		{[]string{"--tts-provider", "dashscope"}, "tts-provider dashscope needs tts-api-key (or DASHSCOPE_API_KEY)"},
		{[]string{"--tts-sample-rate", "96000"}, "tts-sample-rate: 96000 is outside 8000..48000"},
		{[]string{"--opus-complexity", "11"}, "opus-complexity: 11 is outside 0..10"},
		{[]string{"--opus-bitrate", "64"}, "opus-bitrate: 64 is outside 6000..510000"},
	} {
		_, err := config.Load(tc.args, noEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: want an error naming %q, got %v", tc.args, tc.want, err)
		}
	}
	_, err := config.Load(nil, func(k string) string {
		if k == "XZ_HUB_MAX_CALLS" {
			return "lots"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "XZ_HUB_MAX_CALLS") {
		t.Errorf("bad env value: %v", err)
	}
}

// The agent section the agent's help text tells people to write
// ("the agent section of the hub's config file (provider, model, api-key,
// base-url)") is accepted, and the flat agent-* keys still work.
func TestConfigAgentSection(t *testing.T) {
	dir := t.TempDir()
	noEnv := func(string) string { return "" }
	load := func(yaml string) (config.Config, error) {
		file := filepath.Join(dir, "hub.yaml")
		os.WriteFile(file, []byte(yaml), 0o600)
		return config.Load([]string{"--config", file}, noEnv)
	}
	cfg, err := load("agent:\n  provider: openai\n  model: qwen2.5\n  api-key: k\n  base-url: http://localhost:11434/v1\n")
	if err != nil {
		t.Fatalf("agent section refused: %v", err)
	}
	if cfg.AgentProvider != "openai" || cfg.AgentModel != "qwen2.5" || cfg.AgentAPIKey != "k" || cfg.AgentBaseURL != "http://localhost:11434/v1" {
		t.Errorf("agent section read as %+v", cfg)
	}
	if !strings.Contains(agent.Help, "agent section of the hub's config file (provider, model, api-key, base-url)") {
		t.Errorf("the help text no longer names the section this test writes:\n%s", agent.Help)
	}
	if cfg, err := load("agent-model: m\nagent:\n  model: m\n"); err != nil || cfg.AgentModel != "m" {
		t.Errorf("same model twice = %q, %v", cfg.AgentModel, err)
	}
	if _, err := load("agent-model: a\nagent:\n  model: b\n"); err == nil || !strings.Contains(err.Error(), "agent-model") {
		t.Errorf("conflicting models: want an error naming agent-model, got %v", err)
	}
	if _, err := load("agent:\n  modle: x\n"); err == nil || !strings.Contains(err.Error(), "modle") {
		t.Errorf("misspelt key in the agent section: %v", err)
	}
}

// Load, not server.Open, reads the LLM environment variables: the file and
// flags win, the environment fills what they leave empty.
func TestConfigAgentFromEnvironment(t *testing.T) {
	env := map[string]string{"ANTHROPIC_AUTH_TOKEN": "tok", "ANTHROPIC_BASE_URL": "http://proxy", "XZ_AGENT_MODEL": "claude-x", "OPENAI_API_KEY": "o"}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load(nil, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AgentProvider != "anthropic" || cfg.AgentAuthToken != "tok" || cfg.AgentBaseURL != "http://proxy" || cfg.AgentModel != "claude-x" || cfg.AgentAPIKey != "" {
		t.Errorf("from the environment: %+v", cfg)
	}
	cfg, err = config.Load([]string{"--agent-provider", "openai", "--agent-model", "gpt-x"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AgentProvider != "openai" || cfg.AgentModel != "gpt-x" || cfg.AgentAPIKey != "o" || cfg.AgentAuthToken != "" {
		t.Errorf("flags over the environment: %+v", cfg)
	}
}

// An empty speech API key comes from the environment variable of its
// provider: OPENAI_API_KEY for OpenAI itself only, DASHSCOPE_API_KEY.
func TestConfigSpeechKeysFromEnvironment(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "sk-openai", "DASHSCOPE_API_KEY": "sk-ds"}[k]
	}
	c, err := config.Load([]string{"--asr-provider", "openai", "--tts-provider", "dashscope"}, env)
	if err != nil || c.ASRAPIKey != "sk-openai" || c.TTSAPIKey != "sk-ds" {
		t.Fatalf("keys %q %q, %v", c.ASRAPIKey, c.TTSAPIKey, err)
	}
	c, err = config.Load([]string{"--asr-provider", "dashscope", "--tts-provider", "openai", "--tts-base-url", "http://kokoro:8880/v1"}, env)
	if err != nil || c.ASRAPIKey != "sk-ds" || c.TTSAPIKey != "" {
		t.Fatalf("keys %q %q (OpenAI's key is not sent to another server), %v", c.ASRAPIKey, c.TTSAPIKey, err)
	}
}
