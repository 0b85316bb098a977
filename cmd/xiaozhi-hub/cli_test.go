package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// --help names the subcommands and shows every setting with its default.
func TestHelpShowsCommandsAndDefaults(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, _ := runCmd(args...)
		if code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
		for _, w := range []string{"chat ", "devices ", "version ", "healthcheck ", "help ", "serve ",
			"--call-timeout DURATION", "default: 30s; env XZ_HUB_CALL_TIMEOUT", "--mcp-direct-limit N", "default: 8"} {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q", args, w)
			}
		}
	}
}

// version and --version print the module and what the build knows of its
// source; a config mistake exits 2 with the setting named.
func TestVersionAndConfigErrors(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runCmd(args...)
		if code != 0 || !strings.Contains(out, "xiaozhi-hub ") || !strings.Contains(out, "github.com/xiaozhi-hub/hub") ||
			!strings.Contains(out, "revision: ") || !strings.Contains(out, "go: go1.") {
			t.Errorf("%v: exit %d, output %q", args, code, out)
		}
	}
	code, _, errOut := runCmd("--call_timeout", "5s")
	if code != 2 || !strings.Contains(errOut, "did you mean --call-timeout?") {
		t.Errorf("unknown flag: exit %d, %q", code, errOut)
	}
}

// healthcheck exits 0 on 200 and 1 with the reason otherwise.
func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer srv.Close()
	if code, out, errOut := runCmd("healthcheck", "--url", srv.URL); code != 0 || !strings.Contains(out, "healthy") {
		t.Errorf("healthy hub: exit %d %q %q", code, out, errOut)
	}
	mu.Lock()
	status = http.StatusServiceUnavailable
	mu.Unlock()
	if code, _, errOut := runCmd("healthcheck", "--url", srv.URL); code != 1 || !strings.Contains(errOut, "503") {
		t.Errorf("unhealthy hub: exit %d %q", code, errOut)
	}
	srv.Close()
	if code, _, _ := runCmd("healthcheck", "--url", srv.URL, "--timeout", "2s"); code != 1 {
		t.Errorf("no hub: exit %d", code)
	}
}

// syncBuffer is a bytes.Buffer safe for the hub's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// The startup log says where the dashboard is and whether an LLM and speech
// are configured; the real hub answers the healthcheck subcommand.
func TestStartupLogAndHealthcheckAgainstHub(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "XZ_AGENT_PROVIDER", "XZ_AGENT_MODEL"} {
		t.Setenv(k, "")
	}
	logs := startLogged(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--api-token", "startup-token-0123456789")
	line := logs.String()[strings.Index(logs.String(), "xiaozhi-hub ready"):]
	line = line[:strings.IndexByte(line, '\n')]
	for _, w := range []string{"dashboard=http://127.0.0.1:", `llm="not configured`, `speech="not configured`} {
		if !strings.Contains(line, w) {
			t.Errorf("startup line %q lacks %q", line, w)
		}
	}
	url := line[strings.Index(line, "dashboard=")+len("dashboard="):]
	url = strings.TrimSuffix(url[:strings.IndexByte(url, ' ')], "/")
	if code, out, errOut := runCmd("healthcheck", "--url", url); code != 0 {
		t.Errorf("healthcheck against the hub at %s: exit %d %q %q", url, code, out, errOut)
	}
}
