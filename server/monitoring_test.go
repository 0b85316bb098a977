package server_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var metricName = regexp.MustCompile(`xiaozhi_hub_[a-z0-9_]+`)

// definedMetrics are the metric names the hub's code defines (every
// "xiaozhi_hub_…" string literal of a non-test Go file).
func definedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`"(xiaozhi_hub_[a-z0-9_]+)"`).FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// The Grafana dashboard and the Prometheus alert rules in deploy/ use only
// metrics the hub defines (a histogram by its _bucket, _sum and _count
// series); a renamed metric fails here instead of leaving an empty panel
// or an alert that never fires. The rules are also checked by promtool in
// CI.
func TestMonitoringFilesUseRealMetrics(t *testing.T) {
	defined := definedMetrics(t)
	if len(defined) < 20 {
		t.Fatalf("found only %d metric names in the code", len(defined))
	}
	dash, err := os.ReadFile("../deploy/grafana/xiaozhi-hub.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(dash, &d); err != nil || len(d.Panels) == 0 {
		t.Fatalf("the dashboard is not Grafana JSON with panels: %v", err)
	}
	rules, err := os.ReadFile("../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	for file, text := range map[string]string{"dashboard": string(dash), "alerts.yml": string(rules)} {
		for _, name := range metricName.FindAllString(text, -1) {
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suffix); ok && defined[b] {
					base = b
				}
			}
			if !defined[base] {
				t.Errorf("%s uses %s, which the hub does not define", file, name)
			}
		}
	}
}
