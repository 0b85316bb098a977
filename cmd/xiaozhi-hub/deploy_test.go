package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/xiaozhi-hub/hub/config"
	"github.com/xiaozhi-hub/hub/server"
	"gopkg.in/yaml.v3"
)

// There is no container engine in CI, so the deployment files are checked
// for what can go wrong without one: every flag, subcommand, environment
// variable, port and path they use must be one the binary has.

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkServeArgs parses args as `xiaozhi-hub serve` would.
func checkServeArgs(t *testing.T, where string, args []string, env map[string]string) {
	t.Helper()
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	_, err := server.LoadConfig(args, func(k string) string { return env[k] })
	if err != nil {
		t.Errorf("%s: %v", where, err)
	}
}

// checkEnv fails for an XZ_HUB_ variable that names no setting.
func checkEnv(t *testing.T, where string, env map[string]string) {
	t.Helper()
	known := map[string]bool{"XZ_HUB_CONFIG": true, "XZ_HUB_URL": true}
	for _, k := range settingEnvNames() {
		known[strings.TrimPrefix(k, "env ")] = true
	}
	for k := range env {
		if strings.HasPrefix(k, "XZ_HUB_") && !known[k] {
			t.Errorf("%s: %s is not a setting's environment variable", where, k)
		}
	}
}

func settingEnvNames() []string {
	var b bytes.Buffer
	config.Print(&b)
	return regexp.MustCompile(`env (XZ_HUB_[A-Z0-9_]+)`).FindAllString(b.String(), -1)
}

func TestDockerfile(t *testing.T) {
	df := readRepoFile(t, "Dockerfile")
	for _, w := range []string{"CGO_ENABLED=0", "USER 65532", "VOLUME /data", "EXPOSE 8000", "HEALTHCHECK", "FROM gcr.io/distroless/static"} {
		if !strings.Contains(df, w) {
			t.Errorf("Dockerfile lacks %q", w)
		}
	}
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`(XZ_HUB_[A-Z_]+)=(\S+)`).FindAllStringSubmatch(df, -1) {
		env[m[1]] = m[2]
	}
	checkEnv(t, "Dockerfile ENV", env)
	if env["XZ_HUB_DATA_DIR"] != "/data" || env["XZ_HUB_LISTEN"] != ":8000" {
		t.Errorf("Dockerfile ENV = %v; want the data dir on the volume and the exposed port", env)
	}
	checkServeArgs(t, "Dockerfile CMD", execArgs(t, df, "CMD"), env)
	hc := execArgs(t, df, "HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \\\n    CMD")
	if len(hc) < 2 || hc[0] != "/usr/local/bin/xiaozhi-hub" || hc[1] != "healthcheck" {
		t.Fatalf("HEALTHCHECK runs %v, not xiaozhi-hub healthcheck", hc)
	}
	// The health check parses (it then fails, as nothing listens: exit 1, not 2).
	if code, _, errOut := runCmd(append(hc[1:], "--url", "http://127.0.0.1:1")...); code != 1 {
		t.Errorf("HEALTHCHECK %v: exit %d (%s), want 1 with nothing listening", hc, code, errOut)
	}
	if got := defaultHealthURL(func(k string) string { return env[k] }); got != "http://127.0.0.1:8000" {
		t.Errorf("healthcheck in the image would ask %s", got)
	}
}

// execArgs returns the JSON-array arguments of the Dockerfile instruction
// that starts a line with prefix.
func execArgs(t *testing.T, df, prefix string) []string {
	t.Helper()
	i := strings.Index(df, "\n"+prefix+" [")
	if i < 0 {
		t.Fatalf("Dockerfile has no %s [...]", prefix)
	}
	rest := df[i+len(prefix)+2:]
	rest = rest[:strings.IndexByte(rest, ']')+1]
	var args []string
	if err := yaml.Unmarshal([]byte(rest), &args); err != nil {
		t.Fatalf("%s %s: %v", prefix, rest, err)
	}
	return args
}

func TestComposeFile(t *testing.T) {
	var c struct {
		Services map[string]struct {
			Ports       []string          `yaml:"ports"`
			Volumes     []string          `yaml:"volumes"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "compose.yaml")), &c); err != nil {
		t.Fatal(err)
	}
	s, ok := c.Services["hub"]
	if !ok {
		t.Fatal("compose.yaml has no hub service")
	}
	if !slices.Contains(s.Ports, "8000:8000") || !slices.Contains(s.Volumes, "hub-data:/data") ||
		!slices.Contains(s.Ports, "1883:1883") || !slices.Contains(s.Ports, "1883:1883/udp") {
		t.Errorf("hub service ports %v, volumes %v", s.Ports, s.Volumes)
	}
	if _, ok := c.Volumes["hub-data"]; !ok {
		t.Errorf("volume hub-data is not declared")
	}
	checkEnv(t, "compose.yaml", s.Environment)
	// Compose substitutes ${VAR:-default}; check the defaults parse.
	env := map[string]string{}
	for k, v := range s.Environment {
		env[k] = regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`).ReplaceAllString(v, "$1")
	}
	checkServeArgs(t, "compose.yaml environment", nil, env)
	// What a user sets to enable MQTT and speech is passed to the hub.
	for _, k := range []string{"XZ_HUB_MQTT_LISTEN", "XZ_HUB_MQTT_PUBLIC", "XZ_HUB_UDP_PUBLIC", "XZ_HUB_ASR_PROVIDER", "XZ_HUB_TTS_PROVIDER", "XZ_HUB_TTS_VOICE"} {
		if _, ok := s.Environment[k]; !ok {
			t.Errorf("compose.yaml does not pass %s to the hub", k)
		}
	}
	env["XZ_HUB_MQTT_LISTEN"], env["XZ_HUB_MQTT_PUBLIC"], env["XZ_HUB_UDP_PUBLIC"] = ":1883", "192.168.1.10:1883", "192.168.1.10:1883"
	checkServeArgs(t, "compose.yaml environment with MQTT", nil, env)
}

func TestSystemdUnit(t *testing.T) {
	unit := readRepoFile(t, "deploy/xiaozhi-hub.service")
	for _, w := range []string{"User=xiaozhi-hub\n", "StateDirectory=xiaozhi-hub\n", "ReadWritePaths=/var/lib/xiaozhi-hub\n", "ProtectSystem=strict", "ProtectHome=yes",
		"NoNewPrivileges=yes", "PrivateTmp=yes", "RestrictAddressFamilies=", "CapabilityBoundingSet=\n",
		"MemoryDenyWriteExecute=yes", "SystemCallFilter=@system-service"} {
		if !strings.Contains(unit, w) {
			t.Errorf("unit lacks %q", w)
		}
	}
	start := regexp.MustCompile(`(?m)^ExecStart=(\S+) (.*)$`).FindStringSubmatch(unit)
	if start == nil || start[1] != "/usr/local/bin/xiaozhi-hub" {
		t.Fatalf("ExecStart = %v", start)
	}
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^Environment=(XZ_HUB_[A-Z_]+)=(\S+)$`).FindAllStringSubmatch(unit, -1) {
		env[m[1]] = m[2]
	}
	checkEnv(t, "unit Environment", env)
	// The settings file the unit documents is the one the hub reads: systemd
	// copies it into the credentials directory (%d), and --config names it.
	documented := "/etc/xiaozhi-hub/hub.yaml"
	if !strings.Contains(unit, "# Settings: "+documented) || !strings.Contains(unit, "\nLoadCredential=hub.yaml:"+documented+"\n") {
		t.Errorf("the unit documents %s but does not load it as the credential hub.yaml", documented)
	}
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "hub.yaml"), []byte(readRepoFile(t, "deploy/hub.yaml")), 0o600); err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(strings.NewReplacer("%S", t.TempDir(), "%d", creds).Replace(start[2]))
	if i := slices.Index(args, "--config"); i < 0 || i+1 == len(args) || args[i+1] != creds+"/hub.yaml" {
		t.Errorf("ExecStart does not pass --config %%d/hub.yaml: %s", start[0])
	}
	checkServeArgs(t, "unit ExecStart with deploy/hub.yaml", args, env)
	if !slices.Contains(args, "--data-dir") || !strings.Contains(unit, "--data-dir %S/xiaozhi-hub") {
		t.Errorf("the hub's data is not in its StateDirectory: %s", start[0])
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil && os.Getenv("CI") == "true" {
		t.Fatal("systemd-analyze is not installed: .ci/run installs it (apt-get install systemd)")
	}
	if err != nil {
		t.Log("systemd-analyze not installed; unit checked by this test only")
		return
	}
	// verify checks every key and that ExecStart exists: point it at a
	// binary that does (the flags were checked above).
	dir := t.TempDir()
	path := filepath.Join(dir, "xiaozhi-hub.service")
	self, _ := os.Executable()
	os.WriteFile(path, []byte(strings.Replace(unit, "/usr/local/bin/xiaozhi-hub", self, 1)), 0o644)
	out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// And the hardening scores as "OK" (exposure at most 2.0 of 10).
	out, err = exec.Command(analyze, "security", "--offline=true", "--threshold=20", path).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: %v\n%s", err, out)
	}
}

// The cluster's compose file: three hubs whose settings parse (each naming
// the two others as peers), behind nginx on the one published port.
func TestClusterComposeFile(t *testing.T) {
	var c struct {
		Services map[string]struct {
			Ports       []string          `yaml:"ports"`
			Volumes     []string          `yaml:"volumes"`
			Environment map[string]string `yaml:"environment"`
			Networks    map[string]struct {
				IPv4 string `yaml:"ipv4_address"`
			} `yaml:"networks"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "deploy/cluster/compose.yaml")), &c); err != nil {
		t.Fatal(err)
	}
	lbAddr := c.Services["lb"].Networks["default"].IPv4
	nginx := readRepoFile(t, "deploy/cluster/nginx.conf")
	for _, name := range []string{"hub-1", "hub-2", "hub-3"} {
		s, ok := c.Services[name]
		if !ok {
			t.Fatalf("deploy/cluster/compose.yaml has no %s", name)
		}
		checkEnv(t, name, s.Environment)
		env := map[string]string{}
		for k, v := range s.Environment {
			// ${VAR:-default} is its default; ${VAR:?why} must be set.
			v = regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`).ReplaceAllString(v, "$1")
			env[k] = regexp.MustCompile(`\$\{[A-Z_]+:\?[^}]*\}`).ReplaceAllString(v, "set-by-the-operator-0123456789")
		}
		cfg, err := server.LoadConfig(nil, func(k string) string { return env[k] })
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if cfg.ClusterNode != name || len(cfg.ClusterPeers) != 2 || slices.Contains(cfg.ClusterPeers, "nats://"+name+":6222") {
			t.Errorf("%s: node %q, peers %v", name, cfg.ClusterNode, cfg.ClusterPeers)
		}
		if lbAddr == "" || !slices.Contains(cfg.TrustedProxies, lbAddr) {
			t.Errorf("%s trusts %v as proxies; want the load balancer's fixed address %q", name, cfg.TrustedProxies, lbAddr)
		}
		if !strings.Contains(nginx, "server "+name+":8000") {
			t.Errorf("nginx.conf does not send traffic to %s", name)
		}
	}
	if !strings.Contains(nginx, "proxy_set_header X-Forwarded-For $remote_addr;") {
		t.Error("nginx.conf does not tell the hubs the client's address (X-Forwarded-For)")
	}
	if lb := c.Services["lb"]; !slices.Contains(lb.Ports, "8000:8000") {
		t.Errorf("the load balancer publishes %v", lb.Ports)
	}
}
