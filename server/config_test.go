package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/server"
)

func TestConfigLayers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hub.yaml")
	os.WriteFile(file, []byte("listen: 127.0.0.1:9000\ncall-timeout: 45s\ndevice-auth: token\ndevice-tokens: [a, b]\n"), 0o600)
	env := map[string]string{"XZ_HUB_CONFIG": file, "XZ_HUB_LISTEN": "127.0.0.1:9100", "XZ_HUB_MAX_CALLS": "50"}
	cfg, err := server.LoadConfig([]string{"--listen", "127.0.0.1:9200"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9200" { // flag beats env beats file
		t.Errorf("listen = %s", cfg.Listen)
	}
	if cfg.CallTimeout != 45*time.Second || cfg.MaxCalls != 50 || cfg.DeviceAuth != "token" || len(cfg.DeviceTokens) != 2 {
		t.Errorf("cfg = %+v", cfg)
	}
	if cfg, _ := server.LoadConfig([]string{"--demo"}, func(string) string { return "" }); cfg.Demo != 4 {
		t.Errorf("--demo alone = %d devices, want 4", cfg.Demo)
	}
}

func TestConfigErrorsNameTheSetting(t *testing.T) {
	noEnv := func(string) string { return "" }
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("lisen: :8000\n"), 0o600)
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
	} {
		_, err := server.LoadConfig(tc.args, noEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: want an error naming %q, got %v", tc.args, tc.want, err)
		}
	}
	_, err := server.LoadConfig(nil, func(k string) string {
		if k == "XZ_HUB_MAX_CALLS" {
			return "lots"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "XZ_HUB_MAX_CALLS") {
		t.Errorf("bad env value: %v", err)
	}
}
