package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/config"
)

// A mistake in the config file or a flag is told in the words of the
// settings: the setting's name, what is wrong, the closest valid name, and
// never the Go types of the YAML library.
func TestConfigErrorsSpeakSettings(t *testing.T) {
	noEnv := func(string) string { return "" }
	dir := t.TempDir()
	for _, tc := range []struct {
		file string // config file content; empty: args only
		args []string
		want []string
	}{
		{file: "call_timeout: 30s\n", want: []string{"unknown setting call_timeout in ", "hub.yaml; did you mean call-timeout?"}},
		{file: "call-timeout: fast\n", want: []string{`call-timeout: "fast" is not a duration (use e.g. 30s, 2m)`, "line 1"}},
		{file: "listen: :8000\ndemo: many\n", want: []string{`demo: "many" is not a whole number`, "line 2"}},
		{file: "device-tokens: abc\n", want: []string{"device-tokens: expected a list, e.g. [kitchen-secret, bedroom-secret]"}},
		{file: "lisen: :8000\n", want: []string{"unknown setting lisen", "did you mean listen?"}},
		{file: "frobnicate: 1\n", want: []string{"unknown setting frobnicate", "run xiaozhi-hub --help for the list"}},
		{file: "agent:\n  modle: qwen\n", want: []string{"unknown setting agent: modle", "did you mean model?"}},
		{file: "- listen\n", want: []string{"expected settings as key: value lines"}},
		{file: "cluster-nats: embedded\ncluster-listen: :6222\ncluster-secret: 0123456789abcdef01\n", want: []string{"cluster-listen needs cluster-peers", "nats://hub-2:6222"}},
		{file: "cluster-nats: embedded\ncluster-nats-listen: 127.0.0.1:4222\n", want: []string{"NATS clients at cluster-nats-listen log in as user xiaozhi-hub with cluster-secret"}},
		{file: "trusted-proxies: [nginx]\n", want: []string{`trusted-proxies: "nginx" is neither an IP address nor a network such as 10.0.0.0/8`}},
		{file: "activation-codes-per-address: 0\n", want: []string{"activation-codes-per-address: 0 is outside 1..1000"}},
		{args: []string{"--ota-checks-per-minute", "0"}, want: []string{"ota-checks-per-minute: 0 is outside 1..60000"}},
		{args: []string{"--call_timeout", "3s"}, want: []string{"unknown flag --call_timeout; did you mean --call-timeout?"}},
		{args: []string{"--mcp-direct-limt", "3"}, want: []string{"did you mean --mcp-direct-limit?"}},
	} {
		args := tc.args
		if tc.file != "" {
			file := filepath.Join(dir, "hub.yaml")
			if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			args = []string{"--config", file}
		}
		_, err := config.Load(args, noEnv)
		if err == nil {
			t.Errorf("%q %v: no error", tc.file, tc.args)
			continue
		}
		msg := err.Error()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q %v: error %q does not say %q", tc.file, tc.args, msg, w)
			}
		}
		for _, goish := range []string{"server.Config", "config.Config", "time.Duration", "!!str", "unmarshal", "not defined"} {
			if strings.Contains(msg, goish) {
				t.Errorf("%q %v: error %q speaks Go (%s)", tc.file, tc.args, msg, goish)
			}
		}
	}
}

// --help prints every setting with its default and environment variable.
func TestPrintSettingsShowsDefaults(t *testing.T) {
	var b strings.Builder
	config.Print(&b)
	out := b.String()
	for _, w := range []string{"--listen VALUE", "default: :8000; env XZ_HUB_LISTEN", "--call-timeout DURATION", "default: 30s",
		"--mcp-direct-limit N", "default: 8", "env XZ_HUB_AGENT_MODEL", "--config FILE"} {
		if !strings.Contains(out, w) {
			t.Errorf("settings help lacks %q", w)
		}
	}
}
