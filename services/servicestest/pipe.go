// Package servicestest runs the services' reference client in tests:
// 78/mcp-calculator's mcp_pipe.py (vendored unmodified in
// services/testdata/mcp-calculator) with the stdio calculator
// (services/testdata/calculator) behind it. The services package's tests
// and the server's end-to-end tests both use it.
package servicestest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// testdata is services/testdata, found from this file's place so that any
// package's tests can use it.
func testdata() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}

// PipeScript is the path of the vendored mcp_pipe.py.
func PipeScript() string { return filepath.Join(testdata(), "mcp-calculator", "mcp_pipe.py") }

// Python returns a Python 3 that has websockets and python-dotenv (what
// mcp_pipe.py needs), or skips the test saying what is missing (under
// CI=true it fails instead: CI installs them).
func Python(t testing.TB) string {
	t.Helper()
	var tried []string
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			tried = append(tried, p+": "+err.Error())
			continue
		}
		out, err := exec.Command(path, "-c", "import websockets, dotenv").CombinedOutput()
		if err == nil {
			return path
		}
		tried = append(tried, path+": "+strings.TrimSpace(string(out)))
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI installs python3-websockets and python3-dotenv (.ci/run), yet: %v", tried)
	}
	t.Skipf("mcp_pipe.py needs python3 with websockets and python-dotenv (Debian: apt-get install python3-websockets python3-dotenv): %v", tried)
	return ""
}

// Calculator builds the stdio calculator server into the test's temporary
// directory and returns its path.
func Calculator(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "calculator")
	out, err := exec.Command("go", "build", "-o", bin, filepath.Join(testdata(), "calculator")).CombinedOutput()
	if err != nil {
		t.Fatalf("build the calculator: %v\n%s", err, out)
	}
	return bin
}

// Pipe runs mcp_pipe.py, unmodified, against url with the program at
// calculator (and args) behind it, configured as its README configures
// servers that are not Python scripts (mcp_config.json, type stdio). It
// returns the running command; Stop ends it, and so does the test's end.
func Pipe(t testing.TB, py, url, calculator string, args ...string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	if args == nil {
		args = []string{}
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"calculator": map[string]any{"type": "stdio", "command": calculator, "args": args},
	}})
	cfgPath := filepath.Join(dir, "mcp_config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, PipeScript())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCP_ENDPOINT="+url, "MCP_CONFIG="+cfgPath)
	cmd.Stdout, cmd.Stderr = testLog{t, "pipe"}, testLog{t, "pipe"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Stop(cmd) })
	return cmd
}

// Stop kills a command started by Pipe and reaps it (once).
func Stop(cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

type testLog struct {
	t    testing.TB
	name string
}

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("%s: %s", l.name, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
