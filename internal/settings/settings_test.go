package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type demo struct {
	Name    string        `yaml:"name" help:"a name"`
	Count   int           `yaml:"count" help:"how many"`
	Wait    time.Duration `yaml:"wait" help:"how long"`
	Members []string      `yaml:"members" help:"who"`
}

var demoOptions = Options{Program: "demo", EnvPrefix: "DEMO_"}

// Defaults, then the file, then the environment, then flags.
func TestLoadLayers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.yaml")
	if err := os.WriteFile(path, []byte("name: file\ncount: 2\nmembers: [a, b]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DEMO_CONFIG": path, "DEMO_COUNT": "3", "DEMO_WAIT": "5s"}
	d := demo{Name: "default", Wait: time.Second}
	if err := Load(&d, []string{"--count", "4"}, func(k string) string { return env[k] }, demoOptions); err != nil {
		t.Fatal(err)
	}
	if d.Name != "file" || d.Count != 4 || d.Wait != 5*time.Second || strings.Join(d.Members, ",") != "a,b" {
		t.Errorf("loaded %+v", d)
	}
}

// Mistakes are told by setting name, with the closest valid one.
func TestLoadMistakes(t *testing.T) {
	noEnv := func(string) string { return "" }
	for args, want := range map[string]string{
		"--cuont=1":  "unknown flag --cuont; did you mean --count?",
		"--zzzzzz=1": "unknown flag --zzzzzz (run demo --help for the list)",
		"--wait=now": `flag --wait: "now" is not a duration such as 30s or 5m`,
	} {
		var d demo
		if err := Load(&d, []string{args}, noEnv, demoOptions); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", args, err, want)
		}
	}
	path := filepath.Join(t.TempDir(), "demo.yaml")
	if err := os.WriteFile(path, []byte("nmae: x\ncount: many\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var d demo
	err := Load(&d, []string{"--config", path}, noEnv, demoOptions)
	for _, want := range []string{"unknown setting nmae in " + path + "; did you mean name?", `count: "many" is not a whole number (` + path + " line 2)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("file error %v lacks %q", err, want)
		}
	}
}
