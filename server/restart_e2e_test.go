package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/sim"
)

func TestRestartRestoresFromSQLite(t *testing.T) {
	dir := t.TempDir()
	h := startHub(t, dir, nil)
	d := h.device(sim.Config{DeviceID: "aa:00:00:00:0c:01", Lamp: true})
	want := toolNames(h.readyTools(d.ID()))
	iotDev := h.device(sim.Config{DeviceID: "aa:00:00:00:0c:02", Mode: sim.ModeIoT})
	waitFor(t, "the lamp's state", func() bool {
		th := h.thing(iotDev.ID(), "Lamp")
		return th != nil && th["state"].(map[string]any)["power"] != nil
	})
	if st, _ := h.call("PATCH", "/api/devices/"+d.ID(), map[string]any{"name": "吸顶灯", "room": "客厅", "aliases": []string{"ceiling light"}}); st != 200 {
		t.Fatalf("patch = %d", st)
	}
	d.Close()
	iotDev.Close()
	h.stop()

	h2 := startHub(t, dir, nil)
	_, dev := h2.call("GET", "/api/devices/"+d.ID(), nil)
	if dev["name"] != "吸顶灯" || dev["room"] != "客厅" || dev["online"] != false || dev["board"] == "" {
		t.Fatalf("after restart: %v", dev)
	}
	_, body := h2.call("GET", "/api/devices/"+d.ID()+"/tools", nil)
	if got := toolNames(body["tools"].([]any)); !slices.Equal(got, want) {
		t.Fatalf("tools after restart %v, want %v", got, want)
	}
	if th := h2.thing(iotDev.ID(), "Lamp"); th == nil || th["state"].(map[string]any)["power"] == nil {
		t.Fatalf("IoT state after restart: %v", th)
	}
}

// TestKill9KeepsTheCache runs the real binary, kills it with SIGKILL once a
// device's tools are cached, and starts it again on the same data.
func TestKill9KeepsTheCache(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "xiaozhi-hub")
	build := exec.Command("go", "build", "-o", bin, "../cmd/xiaozhi-hub")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	const token = "kill9-token-0123456789"
	start := func() (*exec.Cmd, string) {
		cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--data-dir", dir, "--api-token", token, "--log-format", "text", "--device-auth", "open")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addr := make(chan string, 1)
		go func() {
			re := regexp.MustCompile(`msg="hub listening" addr=(\S+)`)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					addr <- m[1]
				}
			}
		}()
		select {
		case a := <-addr:
			return cmd, a
		case <-time.After(30 * time.Second):
			t.Fatal("the hub did not start")
			return nil, ""
		}
	}
	cmd, addr := start()
	base := "http://" + addr
	d := sim.New(sim.Config{URL: "ws://" + addr + "/xiaozhi/v1/", DeviceID: "aa:00:00:00:0c:03"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// tools_changed is published once the list is stored: what the hub has
	// said it knows must survive kill -9 (the fresh list is in memory a
	// moment before that, and may be lost with the process).
	stored := awaitStreamEvent(ctx, t, token, base+"/api/events?device="+d.ID(), "tools_changed")
	if err := d.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := <-stored; err != nil {
		t.Fatalf("waiting for tools_changed: %v", err)
	}
	st, body := callURL(t, token, "GET", base+"/api/devices/"+d.ID()+"/tools")
	tools, _ := body["tools"].([]any)
	n := len(tools)
	if st != 200 || n == 0 {
		t.Fatalf("before kill -9: %d, %d tools", st, n)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown code runs
		t.Fatal(err)
	}
	cmd.Wait()

	_, addr = start()
	st, body = callURL(t, token, "GET", "http://"+addr+"/api/devices/"+d.ID()+"/tools")
	tools, _ = body["tools"].([]any)
	if st != 200 || len(tools) != n {
		t.Fatalf("after kill -9: %d, %d tools, want %d", st, len(tools), n)
	}
}

// awaitStreamEvent opens the event stream at url and reports (nil) when an
// event of type typ arrives, or why it did not. The stream is open when it
// returns.
func awaitStreamEvent(ctx context.Context, t *testing.T, token, url, typ string) <-chan error {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	res := make(chan error, 1)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() == "event: "+typ {
				res <- nil
				return
			}
		}
		res <- fmt.Errorf("stream ended: %v", sc.Err())
	}()
	return res
}
