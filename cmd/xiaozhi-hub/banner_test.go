package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startLogged runs the hub with args until the test ends and returns its
// stderr once the structured startup line is in it.
func startLogged(t *testing.T, args ...string) *syncBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &bytes.Buffer{}, logs) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(logs.String(), "xiaozhi-hub ready") {
		if time.Now().After(deadline) {
			t.Fatalf("no startup line; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return logs
}

// The first lines at start say, plainly, where the dashboard is, the admin
// token (generated now, on a terminal) and the OTA URL for a device; the
// structured log never has the token; `xiaozhi-hub token` prints it; a
// second start (or stderr that is not a terminal) says where it is instead.
func TestBannerShowsDashboardTokenAndOTA(t *testing.T) {
	onTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { onTerminal = isTerminal })
	dir := t.TempDir()
	logs := startLogged(t, "--listen", "127.0.0.1:0", "--data-dir", dir)
	out := logs.String()
	code, tok, errOut := runCmd("token", "--data-dir", dir)
	tok = strings.TrimSpace(tok)
	if code != 0 || len(tok) < 16 {
		t.Fatalf("token command: exit %d %q %q", code, tok, errOut)
	}
	banner := out[:strings.Index(out, "time=")]
	for _, w := range []string{"xiaozhi-hub dev is running", "Dashboard:   http://127.0.0.1:", "Admin token: " + tok, "generated now", "xiaozhi-hub token --data-dir " + dir, "set the firmware's OTA URL to http://127.0.0.1:", "/xiaozhi/ota/"} {
		if !strings.Contains(banner, w) {
			t.Errorf("banner lacks %q:\n%s", w, banner)
		}
	}
	if strings.Contains(out[len(banner):], tok) {
		t.Errorf("the structured log shows the admin token:\n%s", out[len(banner):])
	}

	// Not a terminal: the banner says where the token is, not the token.
	onTerminal = func(io.Writer) bool { return false }
	dir2 := t.TempDir()
	out = startLogged(t, "--listen", "127.0.0.1:0", "--data-dir", dir2).String()
	_, tok2, _ := runCmd("token", "--data-dir", dir2)
	if tok2 = strings.TrimSpace(tok2); tok2 == "" || strings.Contains(out, tok2) {
		t.Errorf("off a terminal, the new token %q is in the output:\n%s", tok2, out)
	}
	if !strings.Contains(out, "Admin token: in "+dir2) {
		t.Errorf("the banner does not say where the token is:\n%s", out)
	}
	if code, _, errOut := runCmd("token", "--data-dir", t.TempDir()); code != 1 || !strings.Contains(errOut, "first start") {
		t.Errorf("token of an empty data directory: exit %d %q", code, errOut)
	}
}

// The info log has one line per device event and none per protocol
// exchange: the demo's four devices each get one "device connected" line
// naming transport and firmware and, with MCP, one "tools discovered" line;
// a call gets one line with its outcome and who asked; the exchanges and
// the simulated devices' own lines are at debug.
func TestInfoLogOneLinePerDeviceEvent(t *testing.T) {
	logs := startLogged(t, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--api-token", "startup-token-0123456789", "--demo")
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(logs.String(), `msg="tools discovered"`) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the demo's MCP devices did not list their tools; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	url := logs.String()
	url = url[strings.Index(url, "dashboard=")+len("dashboard="):]
	url = strings.TrimSuffix(url[:strings.IndexByte(url, ' ')], "/")
	req, _ := http.NewRequest("POST", url+"/api/devices/de:00:00:00:00:01/tools/self.audio_speaker.set_volume/call", strings.NewReader(`{"arguments":{"volume":40}}`))
	req.Header.Set("Authorization", "Bearer startup-token-0123456789")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("a call: %v %v", res, err)
	}
	res.Body.Close()
	for !strings.Contains(logs.String(), "msg=call") {
		if time.Now().After(deadline) {
			t.Fatalf("no line for the call; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := logs.String()
	if n := strings.Count(out, `msg="device connected"`); n != 4 {
		t.Errorf("%d device connected lines, want 4:\n%s", n, out)
	}
	for _, w := range []string{`transport=websocket firmware="esp-box-3 2.4.2"`, `device=de:00:00:00:00:01 count=`,
		`msg=call component=registry device=de:00:00:00:00:01 tool=self.audio_speaker.set_volume outcome=ok`, "by=admin via=api"} {
		if !strings.Contains(out, w) {
			t.Errorf("the info log lacks %q:\n%s", w, out)
		}
	}
	for _, noise := range []string{"mcp exchange", "iot descriptors", "iot states", "sim: connected"} {
		if strings.Contains(out, noise) {
			t.Errorf("the info log has %q lines:\n%s", noise, out)
		}
	}
}
