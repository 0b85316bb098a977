package services_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/server"
)

func loadConfig(t *testing.T, yaml string) (server.Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return server.LoadConfig([]string{"--config", path}, func(string) string { return "" })
}

// mcp-servers is read from the config file, and what is wrong with it is
// said in the words of the settings.
func TestMCPServersSetting(t *testing.T) {
	cfg, err := loadConfig(t, `
mcp-servers:
  - name: home-assistant
    url: http://homeassistant.local:8123/api/mcp
    headers: {Authorization: "Bearer abc"}
  - name: calc
    command: /usr/local/bin/calculator
    args: [--test-tools]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.MCPServers) != 2 || cfg.MCPServers[0].Headers["Authorization"] != "Bearer abc" || cfg.MCPServers[1].Args[0] != "--test-tools" {
		t.Fatalf("%+v", cfg.MCPServers)
	}
	for _, c := range []struct{ yaml, want string }{
		{"mcp-servers:\n  - name: x\n    comand: /bin/x\n", "unknown key comand (the keys are name, url, headers, command, args); did you mean command?"},
		{"mcp-servers:\n  - name: x\n    command: /bin/x\n    args: --flag\n", "args (line 4): expected a list"},
		{"mcp-servers: calc\n", "mcp-servers: expected a list of sections"},
		{"mcp-servers:\n  - name: x\n", "mcp-servers: x: needs a url (Streamable HTTP"},
		{"mcp-servers:\n  - name: x\n    url: ftp://h/\n", `url "ftp://h/" is not an http:// or https:// URL`},
		{"mcp-servers:\n  - name: x\n    url: http://h/\n    command: /bin/x\n", "has both url and command"},
		{"mcp-servers:\n  - name: X Y\n    url: http://h/\n", "name: 1 to 32 lower-case letters"},
		{"mcp-servers:\n  - {name: a, url: 'http://h/'}\n  - {name: a, command: x}\n", "mcp-servers: a: the name is used twice"},
	} {
		_, err := loadConfig(t, c.yaml)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
	if _, err := server.LoadConfig([]string{"--mcp-servers", "x"}, func(string) string { return "" }); err == nil ||
		!strings.Contains(err.Error(), "config file only") {
		t.Errorf("flag: %v", err)
	}
}
