package services_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/server/servertest"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "services-test")
	if err != nil {
		panic(err)
	}
	calcDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// python returns a Python 3 that has websockets and python-dotenv (what
// mcp_pipe.py needs), or skips the test saying what is missing.
func python(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
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

// pipe runs 78/mcp-calculator's mcp_pipe.py, unmodified, against url with
// the calculator behind it, configured as its README configures servers
// that are not Python scripts (mcp_config.json, type stdio). It returns
// the running command; the test kills it.
func pipe(t *testing.T, py, url, calculator string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"calculator": map[string]any{"type": "stdio", "command": calculator, "args": []string{}},
	}})
	cfgPath := filepath.Join(dir, "mcp_config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "mcp-calculator", "mcp_pipe.py"))
	cmd := exec.Command(py, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCP_ENDPOINT="+url, "MCP_CONFIG="+cfgPath)
	cmd.Stdout, cmd.Stderr = testLog{t, "pipe"}, testLog{t, "pipe"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(cmd) })
	return cmd
}

// stop kills a command and reaps it (once).
func stop(cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

type testLog struct {
	t    *testing.T
	name string
}

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("%s: %s", l.name, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// The community's reference client, mcp_pipe.py, connects the calculator
// to a service's URL exactly as it would to xiaozhi.me's: the tool is
// listed, runs over REST and is recorded; the service goes offline when
// the pipe dies (its tools still listed, calls failing at once with 409)
// and comes back when the pipe runs again; deleting the service closes
// the connection and its token is refused from then on.
func TestReferencePipe(t *testing.T) {
	vendored, err := os.ReadFile(filepath.Join("testdata", "mcp-calculator", "mcp_pipe.py"))
	if err != nil {
		t.Fatal(err)
	}
	// 78/mcp-calculator c537f71's mcp_pipe.py, byte for byte (VENDORED.md).
	if sum := fmt.Sprintf("%x", sha256.Sum256(vendored)); sum != "31af96a0bd83062251bafe31c22cc01dc02a6b687c5775c5f70e3cf552372df8" {
		t.Fatalf("mcp_pipe.py is not the vendored upstream file (sha256 %s)", sum)
	}
	py := python(t)
	calc := buildCalculator(t)
	h, _ := servertest.Start(t, nil)

	var created hub.ServiceView
	if st := do(t, h, "POST", "/api/services", map[string]string{"name": "calc"}, &created); st != http.StatusCreated {
		t.Fatalf("create: %d %+v", st, created)
	}
	if !strings.HasPrefix(created.URL, "ws://127.0.0.1:") || !strings.Contains(created.URL, "/services/ws?token=xzs_") {
		t.Fatalf("url %q", created.URL)
	}
	if s, _ := service(t, h, "calc"); s.URL != "" {
		t.Fatalf("the token is shown again: %+v", s)
	}

	p := pipe(t, py, created.URL, calc)
	s := waitService(t, h, "calc", "online", online)
	if s.Tools[0].Name != "calculator" || !strings.Contains(string(s.Tools[0].InputSchema), "python_expression") || s.Server != "Calculator 1.0" {
		t.Fatalf("listed: %+v", s)
	}
	if m := metricsText(t, h.URL()); !strings.Contains(m, "xiaozhi_hub_services_online 1\n") || !strings.Contains(m, "xiaozhi_hub_services_known 1\n") {
		t.Fatalf("metrics do not count the service online")
	}
	st, r := call(t, h, "calc", "calculator", map[string]string{"python_expression": "(1+2)*3"})
	if st != 200 || r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, `"result":9`) {
		t.Fatalf("call: %d %+v", st, r)
	}
	if st, r := call(t, h, "calc", "calculator", map[string]int{"python_expression": 3}); st != 422 {
		t.Fatalf("arguments against the schema: %d %+v", st, r)
	}
	var calls struct{ Calls []hub.CallRecord }
	do(t, h, "GET", "/api/calls", nil, &calls)
	if len(calls.Calls) == 0 || calls.Calls[0].DeviceID != "service:calc" || calls.Calls[0].Kind != "service" ||
		calls.Calls[0].By != "admin" || calls.Calls[0].Tool != "calculator" {
		t.Fatalf("history: %+v", calls.Calls)
	}

	stop(p) // the pipe dies
	s = waitService(t, h, "calc", "offline", offline)
	if len(s.Tools) != 1 {
		t.Fatalf("tools not kept while offline: %+v", s)
	}
	if st, r := call(t, h, "calc", "calculator", map[string]string{"python_expression": "1"}); st != http.StatusConflict || r.Error.Code != hub.EOFFLINE {
		t.Fatalf("offline call: %d %+v", st, r)
	}

	p = pipe(t, py, created.URL, calc) // and runs again
	waitService(t, h, "calc", "online", online)
	if st, r := call(t, h, "calc", "calculator", map[string]string{"python_expression": "2**10"}); st != 200 || !strings.Contains(r.Content[0].Text, `"result":1024`) {
		t.Fatalf("call after reconnecting: %d %+v", st, r)
	}

	if st := do(t, h, "DELETE", "/api/services/calc", nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	if _, found := service(t, h, "calc"); found {
		t.Fatal("deleted service still listed")
	}
	ctx := context.Background()
	_, resp, err := websocket.Dial(ctx, created.URL, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a revoked token: %v %v", err, resp)
	}
	stop(p)
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
